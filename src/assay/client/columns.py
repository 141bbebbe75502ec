"""The columnar form on the client side: a pyarrow Table in, the response's tables out.

``ResolveColumns`` takes claims as one Arrow IPC stream and answers with six. These
helpers do the encoding both ways, so a caller hands ``ResolverClient.resolve_columns``
a ``pyarrow.Table`` (one row per claim, the columns of ``ResolveColumnsRequest``) and
gets ``ColumnsResult``, whose tables are ``pyarrow.Table``s (``None`` for the per-claim
tables at summary detail). The tables are returned as the server wrote them: a string
column may be dictionary-encoded where its strings repeat (the ``correlation_group``
columns are), which pyarrow reads like utf8 (``to_pylist``) and pandas as a categorical;
decoding it here would only copy the repeated strings back out. pyarrow is imported on
first use, so the rest of the client does not pay for it, and does not need it: it is not
among the client's own dependencies (``pip install 'assay[columnar]'`` adds it), and these
helpers say so when it is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from assay.v1 import resolver_service_pb2 as rs

if TYPE_CHECKING:
    import pyarrow as pa

Compression = str | None
"""The codec of the request's record batches: "zstd" (the default), "lz4" or None."""


@dataclass(frozen=True)
class ColumnsResult:
    """A decoded ResolveColumnsResponse (see the contract for every table's columns)."""

    semantics: pa.Table
    values: pa.Table
    excluded: pa.Table
    claims: pa.Table | None
    groups: pa.Table | None
    warnings: pa.Table | None
    coverage_confidence: float
    conflicted_safety_predicates: list[tuple[str, str]] = field(default_factory=list)
    # The digest of the reliability table the resolver used ("" from a server predating it).
    reliability_table_digest: str = ""


def columns_request(
    claims: pa.Table,
    as_of: datetime | None = None,
    stale_after: timedelta | None = None,
    compression: Compression = "zstd",
) -> rs.ResolveColumnsRequest:
    """A ResolveColumnsRequest carrying ``claims`` as one Arrow IPC stream."""
    pa = _pyarrow()
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, claims.schema, options=options) as writer:
        writer.write_table(claims)
    request = rs.ResolveColumnsRequest(claims_arrow=sink.getvalue().to_pybytes())
    if as_of is not None:
        request.as_of.FromDatetime(as_of)
    if stale_after is not None:
        request.stale_after.FromTimedelta(stale_after)
    return request


def columns_result(response: rs.ResolveColumnsResponse) -> ColumnsResult:
    """The response's tables, decoded."""
    return ColumnsResult(
        semantics=_table(response.semantics_arrow),
        values=_table(response.values_arrow),
        excluded=_table(response.excluded_arrow),
        claims=_table(response.claims_arrow) if response.claims_arrow else None,
        groups=_table(response.groups_arrow) if response.groups_arrow else None,
        warnings=_table(response.warnings_arrow) if response.warnings_arrow else None,
        coverage_confidence=response.coverage_confidence,
        conflicted_safety_predicates=[
            (key.subject, key.predicate) for key in response.conflicted_safety_predicates
        ],
        reliability_table_digest=response.reliability_table_digest,
    )


def _pyarrow() -> Any:
    """pyarrow, or an ImportError that says how to install it."""
    try:
        import pyarrow
    except ImportError as error:
        raise ImportError(
            "the columnar helpers (resolve_columns, resolve_table) need pyarrow, which the "
            "client does not install by itself: pip install 'assay[columnar]'"
        ) from error
    return pyarrow


def _table(data: bytes) -> Any:
    pa = _pyarrow()
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
