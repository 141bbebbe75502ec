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

from assay.client._async.base import AsyncClient, follow_pages, unary, unary_default_request
from assay.client.builders import EvidenceLike, acquisition_policy, plan_request
from assay.v1 import plan_pb2
from assay.v1 import planner_service_pb2 as ps

SERVICE = ps.DESCRIPTOR.services_by_name["PlannerService"]


class AsyncPlannerClient(AsyncClient):
    """Asyncio client for ``assay.v1.PlannerService``."""

    SERVICE = SERVICE

    # The RPCs, in the contract's order.
    plan_evidence = unary(ps.PlanEvidenceRequest, ps.PlanEvidenceResponse)
    list_probes = unary_default_request(ps.ListProbesRequest, ps.ListProbesResponse)

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
        request = ps.ListProbesRequest()
        async for probe in follow_pages(
            self.list_probes, request, lambda page: page.probes, timeout
        ):
            yield probe
