"""The gRPC face of the planner: read the request, ask the resolver, plan, answer.

Two resolver calls per plan, both within the caller's remaining deadline:
ResolveSemantic for the base resolution, then (when there is anything to
weigh) one ResolveHypotheses carrying one hypothesis per distinct plausible
outcome of every candidate, over only the claims that can affect the target
semantic. The resolver's reliability table (each probe's accuracy) is asked for
beside the first call when the cached copy is older than ``reliability.TABLE_TTL_SECONDS``. The
planner's request id travels with them, so one grep finds a plan in both
services' logs.

A plan repeats values of the target: the hypotheses carry the value each outcome
asserts, the resolver answers with every value of the target once per hypothesis, and
every candidate names its outcome's value key. Evidence whose values make any of that
exceed a cap (the resolver's, or its message limit) is refused as
ERROR_REASON_REQUEST_TOO_EXPENSIVE (``resolver_client.translate``); a plan response
over ``assay.runtime.budget`` (100 times the request, within the message limit) as
ERROR_REASON_RESPONSE_TOO_LARGE. Either names ``evidence``.
"""

from __future__ import annotations

import asyncio

import grpc

from assay.runtime.budget import MIN_CLAIM_WIRE_BYTES, ResponseBudget
from assay.runtime.handlers import REQUEST_ID_KEY, current_request_id
from assay.runtime.logging import get_logger
from assay.services.planner import convert
from assay.services.planner.model import PlanInput, Resolution
from assay.services.planner.paging import page
from assay.services.planner.plan import Draft, draft_plan, finish_plan
from assay.services.planner.probes import CATALOGUE, Catalogue
from assay.services.planner.reliability import ReliabilityTable
from assay.services.planner.resolver_client import (
    Deadline,
    ResolverClient,
    no_paths,
    summary_of,
)
from assay.services.planner.scope import all_about_target, target_scope
from assay.v1 import planner_service_pb2 as pb
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as rpb

_log = get_logger("assay.planner")


class PlannerServicer:
    """Implements ``assay.v1.PlannerService`` over one resolver channel."""

    def __init__(self, resolver: ResolverClient, catalogue: Catalogue = CATALOGUE) -> None:
        self.resolver = resolver
        self.catalogue = catalogue
        self.reliability = ReliabilityTable(resolver)

    async def PlanEvidence(
        self, request: pb.PlanEvidenceRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        """The plan, serialized here (the handler sends bytes as they are): its
        ``resolution`` is the resolver's own bytes, re-tagged (``convert.plan_response_bytes``)."""
        deadline = Deadline.after(context.time_remaining())
        metadata = ((REQUEST_ID_KEY, current_request_id()),)
        notes, capabilities, policy = convert.read_request(request)
        # The evidence is serialized once for both resolver calls (convert: "as bytes"),
        # and the base resolution's bytes become the answer's without a re-serialization.
        evidence = convert.evidence_field(request.evidence)
        semantic = convert.semantic_request_bytes(request, evidence)
        # The reliability table (cached) is fetched alongside the base resolution.
        cached = self.reliability.cached()
        if cached is None:
            raw, table = await asyncio.gather(
                self.resolver.resolve_semantic_bytes(semantic, deadline, metadata),
                self.reliability.get(deadline, metadata),
            )
        else:
            table = cached
            raw = await self.resolver.resolve_semantic_bytes(semantic, deadline, metadata)
        base = rpb.ResolveSemanticResponse.FromString(raw)
        stale = convert.stale_refs(request)
        draft = draft_plan(
            PlanInput(
                subject=request.subject,
                predicate=request.predicate,
                resolution=convert.resolution(base.resolution, with_members=bool(stale)),
                notes=notes,
                capabilities=capabilities,
                policy=policy,
                reliability=table,
                stale_refs=stale,
            ),
            self.catalogue,
        )
        hypothetical: list[Resolution] = []
        if draft.outcomes:
            answer = await self._hypotheses(
                request, draft, base.resolution, evidence, deadline, metadata
            )
            hypothetical = [
                convert.resolution(h.resolution, with_counted=False) for h in answer.hypotheses
            ]
        plan = convert.plan(finish_plan(draft, hypothetical))
        try:
            response = convert.plan_response_bytes(plan, raw)
        except ValueError:  # not one resolution field: build the message instead
            response = pb.PlanEvidenceResponse(
                plan=plan, resolution=base.resolution
            ).SerializeToString(deterministic=True)
        ResponseBudget(
            self.resolver.max_message_bytes,
            MIN_CLAIM_WIRE_BYTES * len(request.evidence.claims),
            request.ByteSize,
            "evidence",
            "every candidate repeats the value it would assert: send fewer or smaller "
            "claims about the target",
        ).add(len(response))
        return response

    async def _hypotheses(
        self,
        request: pb.PlanEvidenceRequest,
        draft: Draft,
        base: resolution_pb2.SemanticResolution,
        evidence: bytes,
        deadline: Deadline,
        metadata: tuple[tuple[str, str], ...],
    ) -> rpb.ResolveHypothesesResponse:
        """The one ResolveHypotheses call, over the claims that can affect the target.

        Large evidence mostly concerns other semantics; sending only the target's scope
        keeps the second call small. The resolver's own base resolution of the scope (a
        summary, as the call asks) must equal the summary of ``base``, the full one; if it
        ever does not, the scope is not trusted and the call is repeated over the full
        evidence (logged: it would mean the scoping rule is stale).
        """
        scoped = None if all_about_target(request, base) else target_scope(request)
        if scoped is None or len(scoped.claims) == len(request.evidence.claims):
            return await self.resolver.resolve_hypotheses_bytes(
                convert.hypotheses_request_bytes(request, draft.outcomes, evidence),
                deadline,
                metadata,
            )
        answer = await self.resolver.resolve_hypotheses(
            convert.hypotheses_request(request, draft.outcomes, scoped),
            deadline,
            metadata,
            no_paths,
        )
        if answer.base == summary_of(base):
            return answer
        _log.warning(
            "hypothesis_scope_mismatch",
            subject=request.subject,
            predicate=request.predicate,
            scoped_claims=len(scoped.claims),
        )
        return await self.resolver.resolve_hypotheses_bytes(
            convert.hypotheses_request_bytes(request, draft.outcomes, evidence), deadline, metadata
        )

    async def ListProbes(
        self, request: pb.ListProbesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListProbesResponse:
        catalogue = [self.catalogue[k] for k in sorted(self.catalogue)]
        probes, next_token = page(catalogue, request.page_size, request.page_token)
        return pb.ListProbesResponse(
            probes=[convert.probe_spec(p) for p in probes], next_page_token=next_token
        )
