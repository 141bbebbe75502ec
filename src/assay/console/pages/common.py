"""What the role pages share: a stored value as text, an enum value in words, a time,
the per-form request id that makes a double click or a reload one change, the bound on
an upload's size, a textarea's text as the services take it, and a refusal's violations
beside the form fields they name."""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC

from google.protobuf import descriptor, json_format, struct_pb2, timestamp_pb2
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from assay.client.errors import InvalidArgumentError

Endpoint = Callable[[Request], Awaitable[Response]]
# A request id is 1-128 printable characters; the prefix says who made it.
_ATTEMPT_MAX = 64


def value_text(value: struct_pb2.Value) -> str:
    """A label or candidate value as its JSON (shown escaped, as text)."""
    return json.dumps(json_format.MessageToDict(value), ensure_ascii=False)


def words(enum: descriptor.EnumDescriptor, number: int, prefix: str) -> str:
    """``PROBE_KIND_QUERY_CI_STATUS`` as ``query ci status`` (an unknown number as itself)."""
    known = enum.values_by_number.get(number)
    if known is None:
        return str(number)
    return known.name.removeprefix(prefix).lower().replace("_", " ")


def new_attempt() -> str:
    """A fresh id for one rendered form."""
    return secrets.token_urlsafe(16)


def request_id(form: FormData) -> str:
    """The request id of the rendered form that was posted: the same on every resubmission
    of that form, so the services act once. A fresh one when the form carried none."""
    attempt = str(form.get("attempt", ""))[:_ATTEMPT_MAX]
    usable = attempt and all(c.isalnum() or c in "-_" for c in attempt)
    return f"console-{attempt if usable else new_attempt()}"


def when(stamp: timestamp_pb2.Timestamp) -> str:
    """A stored time in UTC to the second, or empty when unset."""
    if not stamp.seconds and not stamp.nanos:
        return ""
    return stamp.ToDatetime(tzinfo=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def bounded(endpoint: Endpoint, max_bytes: int) -> Endpoint:
    """``endpoint`` behind a bound on the request's declared length, refused (413) before
    any of the body is read; a request that declares no length is refused too."""

    async def guarded(request: Request) -> Response:
        length = request.headers.get("content-length", "")
        if not length.isdigit() or int(length) > max_bytes:
            return Response(f"An upload may be at most {max_bytes} bytes.", status_code=413)
        return await endpoint(request)

    return guarded


def note(text: str) -> str:
    """A textarea's text with its line breaks as ``\\n``: browsers send CRLF, and the
    services refuse control characters in free text but line breaks and tabs."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def named_problems(error: InvalidArgumentError, fields: Mapping[str, str]) -> dict[str, str]:
    """The service's violations by form field: ``fields`` maps a request field the service
    names to the form field it came from; the others go under ``""`` (the whole form)."""
    problems: dict[str, str] = {}
    for violation in error.violations:
        where = fields.get(violation.field, "")
        problems[where] = f"{problems.get(where, '')} {violation.description}".strip()
    return problems or {"": error.message}
