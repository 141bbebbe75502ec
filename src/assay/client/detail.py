"""How much of a resolution the Resolver sends back: ``detail=`` of the resolver clients.

``"full"`` is the per-claim explanation, ``"summary"`` per value only (far smaller for
large evidence); a ``ResolutionDetail`` number is taken as is. The value is written into
the request message; left out (None), the request's own ``detail`` stands (FULL by default).
"""

from __future__ import annotations

from typing import Literal

from assay.v1 import resolver_service_pb2 as rs

Detail = Literal["full", "summary"] | int
_DETAILS = {"full": rs.RESOLUTION_DETAIL_FULL, "summary": rs.RESOLUTION_DETAIL_SUMMARY}


def with_detail(
    request: rs.ResolveSemanticRequest | rs.ResolveEvidenceRequest | rs.ResolveColumnsRequest,
    detail: Detail | None,
) -> None:
    """Write ``detail`` into ``request`` (a name or a number), unless it is None."""
    if detail is None:
        return
    if isinstance(detail, str):
        if detail not in _DETAILS:
            raise ValueError(f"detail must be 'full' or 'summary', not {detail!r}")
        detail = _DETAILS[detail]
    request.detail = rs.ResolutionDetail.ValueType(detail)
