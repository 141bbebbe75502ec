"""The gRPC face of the planner: translate the request, run the use case, translate back.

``PlanEvidence`` reads the caller's remaining deadline and request id off the call and
hands them, with the request, to the use case it holds
(``use_cases.plan_evidence.PlanEvidence``), which makes the resolver calls and returns
the plan as a domain value. The plan is translated (``wire.convert.plan``) and
serialized here, as the handler sends bytes as they are.

A plan repeats values of the target: the hypotheses carry the value each outcome
asserts, the resolver answers with every value of the target once per hypothesis, and
every candidate names its outcome's value key. Evidence whose values make any of that
exceed a cap (the resolver's, or its message limit) is refused as
ERROR_REASON_REQUEST_TOO_EXPENSIVE (``resolver_client.translate``); a plan response
over ``assay.runtime.response_budget`` (100 times the request, within the message limit) as
ERROR_REASON_RESPONSE_TOO_LARGE. Either names ``evidence``.
"""

from __future__ import annotations

import grpc

from assay.runtime.handlers import REQUEST_ID_KEY, current_request_id
from assay.runtime.paging import page
from assay.runtime.response_budget import MIN_CLAIM_WIRE_BYTES, ResponseBudget
from assay.services.planner.adapters.observation_file import NoObservations, ObservationFile
from assay.services.planner.adapters.reliability import ReliabilityTable
from assay.services.planner.adapters.resolver_client import ResolverClient
from assay.services.planner.domain.deadline import Deadline
from assay.services.planner.domain.probes import CATALOGUE, Catalogue
from assay.services.planner.use_cases.plan_evidence import PlanEvidence
from assay.services.planner.wire import convert
from assay.v1 import planner_service_pb2 as pb


class PlannerServicer:
    """Implements ``assay.v1.PlannerService`` over one resolver channel."""

    def __init__(
        self,
        resolver: ResolverClient,
        catalogue: Catalogue = CATALOGUE,
        observations: ObservationFile | None = None,
    ) -> None:
        self.resolver = resolver
        self.catalogue = catalogue
        self.reliability = ReliabilityTable(resolver)
        self.observations = observations or NoObservations()
        self.plan_evidence = PlanEvidence(resolver, self.reliability, catalogue, self.observations)

    async def PlanEvidence(
        self, request: pb.PlanEvidenceRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        """The plan, serialized here (the handler sends bytes as they are): its
        ``resolution`` is the resolver's own bytes, re-tagged (``convert.plan_response_bytes``)."""
        deadline = Deadline.after(context.time_remaining())
        metadata = ((REQUEST_ID_KEY, current_request_id()),)
        planned, raw, base = await self.plan_evidence(request, deadline, metadata)
        plan = convert.plan(planned)
        try:
            response = convert.plan_response_bytes(plan, raw)
        except ValueError:  # not the resolution field first: build the message instead
            response = pb.PlanEvidenceResponse(plan=plan, resolution=base).SerializeToString(
                deterministic=True
            )
        ResponseBudget(
            self.resolver.max_message_bytes,
            MIN_CLAIM_WIRE_BYTES * len(request.evidence.claims),
            request.ByteSize,
            "evidence",
            "every candidate repeats the value it would assert: send fewer or smaller "
            "claims about the target",
        ).add(len(response))
        return response

    async def ListProbes(
        self, request: pb.ListProbesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListProbesResponse:
        """The catalogue, each probe with its observed figures and judgement (when the
        planner reads an observations file)."""
        catalogue = [self.catalogue[k] for k in sorted(self.catalogue)]
        probes, next_token = page(catalogue, request.page_size, request.page_token, "probes")
        measured = await self.observations.current()
        return pb.ListProbesResponse(
            probes=[
                convert.probe_spec(p, measured.costs.get(p.kind), measured.checks.get(p.kind, ()))
                for p in probes
            ],
            next_page_token=next_token,
        )
