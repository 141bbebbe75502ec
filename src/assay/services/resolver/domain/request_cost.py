"""What one request may cost the resolver: a cap on the claim resolutions it asks for.

Most of the resolver's work grows with the request. Two RPCs multiply instead:
ResolveHypotheses resolves the target once per hypothesis, and Reconcile a semantic before
and after each proposal, each time with every claim about it, so a small request could ask
for a response of gigabytes. So a request may ask for at most ``MAX_CLAIM_RESOLUTIONS``
claim resolutions (ResolveHypotheses: (hypotheses + 1) x the claims about the target, plus
the hypotheses' own; Reconcile: per proposal, one plus the claims about every semantic it is
judged on); ``charge`` refuses more with REQUEST_TOO_EXPENSIVE before any work starts.
Every response is also held to ``assay.runtime.response_budget``.

ResolveColumns multiplies differently: a few kilobytes of ZSTD can declare a million rows.
Its stream is measured from its message headers before anything is decompressed
(``columnar.input.bounds``) and held to the server's ``ColumnsLimits`` (rows, decompressed
bytes, decompression ratio; ``assay serve --columns-max-*``); ``charge_columns`` refuses
more with RESOURCE_EXHAUSTED, REQUEST_TOO_EXPENSIVE, naming the limit and its flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.errors import FieldViolation, InvalidArgument, Reason, ResourceExhausted

# Two million cost about 0.5-2 s of CPU at summary detail, and admit the planner's largest
# call (100,000 claims about its target, 14 hypotheses).
MAX_CLAIM_RESOLUTIONS = 2_000_000


def charge(resolutions: int, field: str, description: str) -> None:
    """Refuse a request asking for more than ``MAX_CLAIM_RESOLUTIONS`` (module docstring).

    ``description`` says how ``resolutions`` was counted, for the caller to act on."""
    if resolutions <= MAX_CLAIM_RESOLUTIONS:
        return
    why = (
        f"{description} = {resolutions:,} claim resolutions; "
        f"at most {MAX_CLAIM_RESOLUTIONS:,} per request: split it"
    )
    raise InvalidArgument(
        Reason.REQUEST_TOO_EXPENSIVE,
        f"{field}: {why}",
        [FieldViolation(field, why)],
        {"limit": str(MAX_CLAIM_RESOLUTIONS), "requested": str(resolutions)},
    )


# A million claims, as documented for ResolveColumns (~50 MB of typical evidence).
MAX_COLUMNS_ROWS = 1_000_000
# Decompressed Arrow buffers: five times a million typical claims.
MAX_COLUMNS_BYTES = 256 * 1024 * 1024
# Typical evidence compresses 2-3x with ZSTD (dictionary-encoded strings already are small).
MAX_COLUMNS_RATIO = 32
# Streams that decompress to at most this many bytes pass the ratio whatever their size.
RATIO_FLOOR_BYTES = 256 * 1024
_STREAM_FIELD = "claims_arrow"


@dataclass(frozen=True, slots=True)
class ColumnsLimits:
    """How much one ResolveColumns stream may hold (module docstring)."""

    max_rows: int = MAX_COLUMNS_ROWS
    max_bytes: int = MAX_COLUMNS_BYTES
    max_ratio: int = MAX_COLUMNS_RATIO

    @classmethod
    def of(
        cls, max_rows: int | None, max_bytes: int | None, max_ratio: int | None
    ) -> ColumnsLimits:
        """The defaults, with those given (not None) in their place."""
        return cls(
            MAX_COLUMNS_ROWS if max_rows is None else max_rows,
            MAX_COLUMNS_BYTES if max_bytes is None else max_bytes,
            MAX_COLUMNS_RATIO if max_ratio is None else max_ratio,
        )

    def ratio_bytes(self, received: int) -> int:
        """The most bytes a stream of ``received`` bytes may decompress to by the ratio."""
        return max(RATIO_FLOOR_BYTES, self.max_ratio * received)


def charge_columns(limits: ColumnsLimits, rows: int, decompressed: int, received: int) -> None:
    """Refuse a stream of ``received`` bytes once the rows or decompressed bytes its headers
    declared so far pass a limit. The figures are at least the stream's: it is refused at
    the first message that passes, before that message is decompressed."""
    if rows > limits.max_rows:
        _refuse(
            "columns_max_rows",
            limits.max_rows,
            rows,
            f"the stream holds at least {rows:,} rows; at most {limits.max_rows:,} per "
            "request (--columns-max-rows): split the claims across calls",
        )
    if decompressed > limits.max_bytes:
        _refuse(
            "columns_max_bytes",
            limits.max_bytes,
            decompressed,
            f"the stream decompresses to at least {decompressed:,} bytes; at most "
            f"{limits.max_bytes:,} per request (--columns-max-bytes): split the claims "
            "across calls",
        )
    if decompressed > limits.ratio_bytes(received):
        _refuse(
            "columns_max_ratio",
            limits.ratio_bytes(received),
            decompressed,
            f"the stream's {received:,} bytes decompress to at least {decompressed:,} "
            f"({decompressed / max(1, received):,.0f}x); at most {limits.max_ratio:,}x its "
            f"size, or {RATIO_FLOOR_BYTES:,} bytes, per request (--columns-max-ratio): "
            "send the claims less compressed, or split them across calls",
        )


def _refuse(name: str, limit: int, requested: int, why: str) -> None:
    raise ResourceExhausted(
        Reason.REQUEST_TOO_EXPENSIVE,
        f"{_STREAM_FIELD}: {why}",
        [FieldViolation(_STREAM_FIELD, why)],
        {"limit_name": name, "limit": str(limit), "requested": str(requested)},
    )
