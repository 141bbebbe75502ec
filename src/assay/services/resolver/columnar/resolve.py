"""What ResolveColumns does, in order: read the stream, validate, resolve, encode.

Every violation is collected before anything is resolved, as in the per-claim RPCs:
the request-level ones the caller found (``detail``, ``as_of``, ``stale_after``), then
a malformed stream or schema (which stops the reading there), then every bad row. The
result is the six tables, compressed like the request, plus the two evidence-level
summaries that travel as plain fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assay.services.resolver.columnar import decode, stream
from assay.services.resolver.columnar.arrow_out import Encoded, encode
from assay.services.resolver.columnar.engine import resolve_table
from assay.services.resolver.columnar.refs import ContentRefs
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.validation import Violation, raise_if_any


def _carry_on() -> None:
    """The ``check`` of work nobody can stop half-way."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A ResolveColumns response as plain values."""

    tables: Encoded
    coverage: float
    conflicted_safety: list[tuple[str, str]]


def resolve_stream(
    data: bytes | memoryview,
    policy: Policy,
    horizon: float | None = None,
    *,
    full: bool = True,
    problems: list[Violation] | None = None,
    check: Callable[[], None] = _carry_on,
) -> Answer:
    """Resolve the claims of one Arrow IPC stream; raise InvalidArgument for bad input.

    ``problems`` are request-level violations found already, reported with the stream's."""
    found = list(problems or ())
    table = dict(policy.reliability)
    read, malformed = stream.read(data)
    found.extend(malformed)
    if read is None:
        raise_if_any(found, table)
        raise AssertionError("an unreadable stream always has a violation")
    raw = decode.read_raw(read.table, table)
    found.extend(decode.violations(raw, table))
    raise_if_any(found, table)
    check()
    claims = decode.columns(raw, table, stale=horizon is not None)
    refs = ContentRefs(read.table, raw)
    resolved = resolve_table(claims, policy, horizon, refs=refs, full=full, check=check)
    check()
    return Answer(encode(resolved, read.codec, full), resolved.coverage, resolved.conflicted_safety)
