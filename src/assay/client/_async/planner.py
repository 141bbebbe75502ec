"""The Planner's client (``AsyncPlannerClient``; ``PlannerClient`` is generated from it).

``plan`` builds a ``PlanEvidenceRequest`` from plain values: evidence, the
target, the side effects granted (names like ``"VCS_READ"``), capabilities
and missing-signal notes. The planner recommends; nothing it returns is
executable: acting on a plan is the executor's job (``assay.executor``).
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime, timedelta

from assay.client._async.base import AsyncClient
from assay.client.builders import EvidenceLike, acquisition_policy, plan_request
from assay.v1 import plan_pb2
from assay.v1 import planner_service_pb2 as ps

SERVICE = ps.DESCRIPTOR.services_by_name["PlannerService"]


class AsyncPlannerClient(AsyncClient):
    """Asyncio client for ``assay.v1.PlannerService``."""

    SERVICE = SERVICE

    async def plan_evidence(
        self,
        request: ps.PlanEvidenceRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> ps.PlanEvidenceResponse:
        return await self._unary(
            "PlanEvidence", request, ps.PlanEvidenceResponse, timeout, x_request_id
        )

    async def list_probes(
        self,
        request: ps.ListProbesRequest | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> ps.ListProbesResponse:
        return await self._unary(
            "ListProbes",
            request or ps.ListProbesRequest(),
            ps.ListProbesResponse,
            timeout,
            x_request_id,
        )

    # Convenience.

    async def plan(
        self,
        evidence: EvidenceLike,
        subject: str,
        predicate: str,
        *,
        granted: Iterable[int | str] = (),
        cloud_sync_allowed: bool = False,
        egress_allowed: bool = False,
        capabilities: Mapping[int | str, int | str] | None = None,
        missing_signals: Iterable[tuple[int | str, int | str, str]] = (),
        as_of: datetime | None = None,
        stale_after: timedelta | None = None,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> ps.PlanEvidenceResponse:
        """The plan (and the resolution it was computed from) for one target."""
        request = plan_request(
            evidence,
            subject,
            predicate,
            policy=acquisition_policy(granted, cloud_sync_allowed, egress_allowed),
            capabilities=capabilities,
            missing_signals=missing_signals,
            as_of=as_of,
            stale_after=stale_after,
        )
        return await self.plan_evidence(request, timeout=timeout, x_request_id=x_request_id)

    async def probes(self, *, timeout: float | None = None) -> AsyncIterator[plan_pb2.ProbeSpec]:
        """Every probe of the catalogue, following pages."""
        token = ""
        while True:
            page = await self.list_probes(ps.ListProbesRequest(page_token=token), timeout=timeout)
            for probe in page.probes:
                yield probe
            token = page.next_page_token
            if not token:
                return
