"""What ResolveColumns does, in order: measure the stream, read it, validate, resolve, encode.

The stream is measured from its headers first and refused if it holds more than the
server's limits allow (``bounds``), before anything is decompressed. Every violation is
collected before anything is resolved, as in the per-claim RPCs: the request-level ones
the caller found (``detail``, ``as_of``, ``stale_after``), then a malformed stream or
schema (which stops the reading there), then every bad row. The result is the six
tables, compressed like the request, plus the two evidence-level summaries and the
digest of the reliability table used, which travel as plain fields.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.services.resolver.columnar.engine.refs import ContentRefs
from assay.services.resolver.columnar.engine.vectorized import resolve_table
from assay.services.resolver.columnar.input import bounds, decode, stream
from assay.services.resolver.columnar.output.arrow_out import encode
from assay.services.resolver.columnar.output.response import Answer
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.request_cost import ColumnsLimits
from assay.services.resolver.domain.validation import Violation, raise_if_any


def _carry_on() -> None:
    """The ``check`` of work nobody can stop half-way."""


def resolve_stream(
    data: bytes | memoryview,
    policy: Policy,
    horizon: float | None = None,
    *,
    full: bool = True,
    problems: list[Violation] | None = None,
    check: Callable[[], None] = _carry_on,
    limits: ColumnsLimits | None = None,
    surveyed: bounds.Survey | None = None,
) -> Answer:
    """Resolve the claims of one Arrow IPC stream; raise InvalidArgument for bad input and
    ResourceExhausted for a stream over ``limits`` (the defaults when None).

    ``problems`` are request-level violations found already, reported with the stream's;
    ``surveyed`` is the stream's survey when the caller made it already."""
    if surveyed is None:
        surveyed = bounds.survey(data, limits or ColumnsLimits(), check)
    found = list(problems or ())
    table = dict(policy.reliability)
    if surveyed.problem is not None:
        raise_if_any([*found, surveyed.problem], table)
    check()
    read, malformed = stream.read(data, surveyed.codec)
    found.extend(malformed)
    if read is None:
        raise_if_any(found, table)
        raise AssertionError("an unreadable stream always has a violation")
    check()
    raw = decode.read_raw(read.table, table)
    found.extend(decode.violations(raw, table))
    raise_if_any(found, table)
    check()
    claims = decode.columns(raw, table, stale=horizon is not None)
    refs = ContentRefs(read.table, raw, check)
    resolved = resolve_table(claims, policy, horizon, refs=refs, full=full, check=check)
    check()
    return Answer(
        encode(resolved, read.codec, full),
        resolved.coverage,
        resolved.conflicted_safety,
        policy.digest,
    )
