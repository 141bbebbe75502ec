"""The gRPC face of the planner: read the request, ask the resolver, plan, answer.

Two resolver calls per plan, both within the caller's remaining deadline:
ResolveSemantic for the base resolution, then (when there is anything to
weigh) one ResolveHypotheses carrying one hypothesis per distinct candidate
outcome. The planner's request id travels with them, so one grep finds a plan
in both services' logs.
"""

from __future__ import annotations

import grpc

from assay.runtime.handlers import REQUEST_ID_KEY, request_id_of
from assay.services.planner import convert
from assay.services.planner.model import PlanInput, Resolution
from assay.services.planner.paging import page
from assay.services.planner.plan import draft_plan, finish_plan
from assay.services.planner.probes import CATALOGUE
from assay.services.planner.resolver_client import Deadline, ResolverClient
from assay.v1 import planner_service_pb2 as pb


class PlannerServicer:
    """Implements ``assay.v1.PlannerService`` over one resolver channel."""

    def __init__(self, resolver: ResolverClient) -> None:
        self.resolver = resolver

    async def PlanEvidence(
        self, request: pb.PlanEvidenceRequest, context: grpc.aio.ServicerContext
    ) -> pb.PlanEvidenceResponse:
        deadline = Deadline.after(context.time_remaining())
        metadata = ((REQUEST_ID_KEY, request_id_of(context)),)
        notes, capabilities, policy = convert.read_request(request)
        base = await self.resolver.resolve_semantic(
            convert.semantic_request(request), deadline, metadata
        )
        draft = draft_plan(
            PlanInput(
                subject=request.subject,
                predicate=request.predicate,
                resolution=convert.resolution(base.resolution),
                notes=notes,
                capabilities=capabilities,
                policy=policy,
            )
        )
        hypothetical: list[Resolution] = []
        if draft.outcomes:
            answer = await self.resolver.resolve_hypotheses(
                convert.hypotheses_request(request, draft.outcomes), deadline, metadata
            )
            hypothetical = [
                convert.resolution(h.resolution, with_counted=False) for h in answer.hypotheses
            ]
        plan = finish_plan(draft, hypothetical)
        return pb.PlanEvidenceResponse(plan=convert.plan(plan), resolution=base.resolution)

    async def ListProbes(
        self, request: pb.ListProbesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListProbesResponse:
        probes, next_token = page(list(CATALOGUE.values()), request.page_size, request.page_token)
        return pb.ListProbesResponse(
            probes=[convert.probe_spec(p) for p in probes], next_page_token=next_token
        )
