"""The Resolver's client (``AsyncResolverClient``; ``ResolverClient`` is generated from it).

Each RPC has a method of the same name in snake_case taking the request
message; ``resolve``, ``resolve_all`` and ``policy`` build the request from
plain values (evidence as a message, a list of claim dicts, or decoded JSON).
Every method takes ``timeout`` (seconds; default: the client's) and
``x_request_id`` (sent as metadata, logged by the server). ``resolve_semantic``,
``resolve_evidence``, ``resolve`` and ``resolve_all`` take ``detail``: ``"full"`` (the
per-claim explanation) or ``"summary"`` (per value only; far smaller for large evidence),
or a ``ResolutionDetail`` number, written into the request message; left out, the
request's own ``detail`` (FULL by default).
``resolve_table`` sends a pyarrow Table of claims through ``resolve_columns`` (the
columnar form, for large evidence) and returns the response's tables decoded
(``ColumnsResult``).
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar

from assay.client._async.base import (
    AsyncClient,
    ReqIn,
    RespOut,
    Rpc,
    rpc_name,
    unary,
    unary_default_request,
)
from assay.client.builders import (
    EvidenceLike,
    resolve_evidence_request,
    resolve_semantic_request,
)
from assay.client.calls import Resp
from assay.client.columns import ColumnsResult, Compression, columns_request, columns_result
from assay.client.detail import Detail, with_detail
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as rs

if TYPE_CHECKING:
    import pyarrow as pa

SERVICE = rs.DESCRIPTOR.services_by_name["ResolverService"]

DetailedReq = TypeVar(
    "DetailedReq", rs.ResolveSemanticRequest, rs.ResolveEvidenceRequest, rs.ResolveColumnsRequest
)


class DetailedCall(Protocol[ReqIn, RespOut]):
    """A resolving RPC method: ``detail`` is written into the request before it is sent."""

    async def __call__(
        self,
        request: ReqIn,
        *,
        detail: Detail | None = None,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> RespOut: ...


def _detailed(
    request_type: type[DetailedReq], response_type: type[Resp]
) -> Rpc[DetailedCall[DetailedReq, Resp]]:
    rpc = rpc_name(request_type)

    async def call(
        self: AsyncClient,
        request: DetailedReq,
        *,
        detail: Detail | None = None,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> Resp:
        with_detail(request, detail)
        return await self._unary(rpc, request, response_type, timeout, x_request_id)

    return Rpc(call, request_type, response_type)


class AsyncResolverClient(AsyncClient):
    """Asyncio client for ``assay.v1.ResolverService``."""

    SERVICE = SERVICE

    # The RPCs, in the contract's order.
    resolve_semantic = _detailed(rs.ResolveSemanticRequest, rs.ResolveSemanticResponse)
    resolve_evidence = _detailed(rs.ResolveEvidenceRequest, rs.ResolveEvidenceResponse)
    resolve_columns = _detailed(rs.ResolveColumnsRequest, rs.ResolveColumnsResponse)
    resolve_hypotheses = unary(rs.ResolveHypothesesRequest, rs.ResolveHypothesesResponse)
    reconcile = unary(rs.ReconcileRequest, rs.ReconcileResponse)
    get_resolver_policy = unary_default_request(
        rs.GetResolverPolicyRequest, rs.GetResolverPolicyResponse
    )

    # Convenience.

    async def resolve(
        self,
        evidence: EvidenceLike,
        subject: str,
        predicate: str,
        *,
        as_of: datetime | None = None,
        stale_after: timedelta | None = None,
        detail: Detail | None = None,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> resolution_pb2.SemanticResolution:
        """The resolution of one (subject, predicate)."""
        request = resolve_semantic_request(evidence, subject, predicate, as_of, stale_after)
        response = await self.resolve_semantic(
            request, detail=detail, timeout=timeout, x_request_id=x_request_id
        )
        return response.resolution

    async def resolve_all(
        self,
        evidence: EvidenceLike,
        *,
        as_of: datetime | None = None,
        stale_after: timedelta | None = None,
        detail: Detail | None = None,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> rs.ResolveEvidenceResponse:
        """Every semantic of the evidence, with the evidence-level summary."""
        request = resolve_evidence_request(evidence, as_of, stale_after)
        return await self.resolve_evidence(
            request, detail=detail, timeout=timeout, x_request_id=x_request_id
        )

    async def resolve_table(
        self,
        claims: pa.Table,
        *,
        as_of: datetime | None = None,
        stale_after: timedelta | None = None,
        detail: Detail | None = None,
        compression: Compression = "zstd",
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> ColumnsResult:
        """Every semantic of ``claims`` (a pyarrow Table, one row per claim) through
        ResolveColumns: the form for large evidence. ``compression`` is the request's
        codec, which the response's tables share; they come back decoded."""
        request = columns_request(claims, as_of, stale_after, compression)
        response = await self.resolve_columns(
            request, detail=detail, timeout=timeout, x_request_id=x_request_id
        )
        return columns_result(response)

    async def policy(self, *, timeout: float | None = None) -> dict[str, float]:
        """The reliability table, source kind -> reliability."""
        response = await self.get_resolver_policy(timeout=timeout)
        return {row.source: row.reliability for row in response.reliability_table}
