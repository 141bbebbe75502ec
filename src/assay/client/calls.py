"""What every Assay client does on every call, sync or async, written once.

- a timeout on every call: the client's default (``DEFAULT_TIMEOUT_SECONDS``
  unless the client was built with another), overridable per call. There is
  deliberately no "no timeout": a call that can hang forever is a bug;
- ``x-request-id`` metadata when the caller gives one (the server logs it and
  echoes it, and failed calls carry it as ``AssayCallError.request_id``);
- a fresh ``request_id`` in the body of a mutating request that has the field
  but was given none, so the channel's retries of UNAVAILABLE are safe: the
  server recognises the repeat and returns the first result.

The call itself (awaited or not) is the clients' bases' (``assay.client._async.base``
and the blocking one generated from it); this module is the part with nothing to
await, shared by both rather than generated twice. ``AsyncChannel`` and
``SyncChannel`` name the one type the two bases differ in, so the generator
(tools/gen_sync_client.py) maps one to the other like any other ``Async`` name.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, ClassVar, TypeAlias, TypeVar

import grpc
from google.protobuf import message as pb_message
from google.protobuf.descriptor import ServiceDescriptor

from assay.client.credentials import Credentials

REQUEST_ID_HEADER = "x-request-id"

Req = TypeVar("Req", bound=pb_message.Message)
Resp = TypeVar("Resp", bound=pb_message.Message)

Metadata = Sequence[tuple[str, str]]

AsyncChannel: TypeAlias = grpc.aio.Channel
SyncChannel: TypeAlias = grpc.Channel


def new_request_id() -> str:
    """A fresh retry key for a mutating request."""
    return uuid.uuid4().hex


def with_request_id(request: Req) -> Req:
    """``request`` with a ``request_id`` filled in when it has the field and it is empty.

    The caller's message is not modified: a copy is filled, so reusing a request
    object for a second, deliberate call gets a second id.
    """
    fields = request.DESCRIPTOR.fields_by_name
    if "request_id" not in fields or getattr(request, "request_id"):  # noqa: B009
        return request
    filled = type(request)()
    filled.CopyFrom(request)
    setattr(filled, "request_id", new_request_id())  # noqa: B010
    return filled


def call_metadata(base: Metadata, x_request_id: str | None) -> tuple[tuple[str, str], ...]:
    """The metadata sent with a call: the client's, plus ``x-request-id`` when given."""
    extra = ((REQUEST_ID_HEADER, x_request_id),) if x_request_id else ()
    return (*tuple(base), *extra)


def _check_timeout(timeout: float) -> float:
    # A caller's programming error, not a failed call: ValueError, not AssayCallError.
    if not timeout > 0:
        raise ValueError(f"timeout must be positive seconds, not {timeout!r}")
    return timeout


def no_credentials_for_owned_channel(credentials: Credentials | None) -> None:
    """A caller-owned channel already chose its transport: credentials given with one are
    refused rather than a token silently not sent."""
    if credentials is not None:
        raise ValueError(
            "credentials apply to a channel the client opens from a target; for a channel you "
            "own, give them to assay.client.channel.sync_channel / aio_channel instead"
        )


def serialize(message: pb_message.Message) -> bytes:
    return message.SerializeToString()


class ClientBase:
    """Options and method paths shared by the sync and async bases."""

    SERVICE: ClassVar[ServiceDescriptor]

    def __init__(self, timeout: float, metadata: Metadata) -> None:
        self.timeout = _check_timeout(timeout)
        self.metadata = tuple(metadata)
        # One multicallable per method, made on first use: creating one per call costs more
        # than many small calls do.
        self._stubs: dict[str, Any] = {}

    def _path(self, method: str) -> str:
        return f"/{self.SERVICE.full_name}/{method}"

    def _options(self, timeout: float | None, x_request_id: str | None) -> dict[str, Any]:
        return {
            "timeout": self.timeout if timeout is None else _check_timeout(timeout),
            "metadata": call_metadata(self.metadata, x_request_id),
        }
