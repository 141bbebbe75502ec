"""The gRPC face of the resolver: translate the request, call the domain, translate back.

Every RPC reads all of its claim lists through one ``Reader`` first, so a bad
request is rejected as a whole, with every violation, before any fusion runs.
"""

from __future__ import annotations

from functools import partial

import grpc

from assay.errors import Reason
from assay.services.resolver import engine, reconcile
from assay.services.resolver.convert import Emitter, claim_ref
from assay.services.resolver.intake import source_table, without_gc
from assay.services.resolver.model import Intake, Resolution, SemKey
from assay.services.resolver.policy import Policy
from assay.services.resolver.reader import Reader, WireTime
from assay.services.resolver.validation import MAX_HYPOTHESES, Violation
from assay.v1 import resolver_service_pb2 as pb


class ResolverServicer:
    """Implements ``assay.v1.ResolverService`` over one policy."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._sources = source_table(policy.reliability)

    def _reader(self) -> Reader:
        return Reader(self.policy, self._sources)

    async def ResolveSemantic(
        self, request: pb.ResolveSemanticRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveSemanticResponse:
        return without_gc(self._ResolveSemantic, request)

    def _ResolveSemantic(self, request: pb.ResolveSemanticRequest) -> pb.ResolveSemanticResponse:
        reader = self._reader()
        reader.semantic(request.subject, request.predicate)
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        reader.done()
        assert base is not None
        sem = (request.subject, request.predicate)
        resolution = engine.Layered(base, self.policy, staleness).resolve(sem)
        response = pb.ResolveSemanticResponse()
        Emitter(reader.index).resolution(resolution, response.resolution)
        return response

    async def ResolveEvidence(
        self, request: pb.ResolveEvidenceRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveEvidenceResponse:
        return without_gc(self._ResolveEvidence, request)

    def _ResolveEvidence(self, request: pb.ResolveEvidenceRequest) -> pb.ResolveEvidenceResponse:
        reader = self._reader()
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        reader.done()
        assert base is not None
        resolutions = engine.resolve_evidence(base, self.policy, staleness)
        response = pb.ResolveEvidenceResponse()
        emitter = Emitter(reader.index)
        add = response.resolutions.add
        for resolution in resolutions:
            emitter.resolution(resolution, add())
        for subject, predicate in engine.conflicted_safety(resolutions):
            response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
        response.coverage_confidence = engine.coverage(resolutions)
        for resolution in resolutions:
            for warning in resolution.warnings:
                emitter.warning(warning, response.warnings.add())
        return response

    async def ResolveHypotheses(
        self, request: pb.ResolveHypothesesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveHypothesesResponse:
        return without_gc(self._ResolveHypotheses, request)

    def _ResolveHypotheses(
        self, request: pb.ResolveHypothesesRequest
    ) -> pb.ResolveHypothesesResponse:
        reader = self._reader()
        reader.semantic(request.subject, request.predicate)
        if len(request.hypotheses) > MAX_HYPOTHESES:
            reader.problems.append(
                Violation(Reason.INVALID_FIELD, "hypotheses", f"at most {MAX_HYPOTHESES}")
            )
        full = _full_detail(reader, request.detail)
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        extras = [
            reader.extra(h.claims, f"hypotheses[{i}].claims")
            for i, h in enumerate(request.hypotheses)
        ]
        reader.done()
        assert base is not None
        sem = (request.subject, request.predicate)
        response = pb.ResolveHypothesesResponse()
        emitter = Emitter(reader.index)
        layered = engine.Layered(base, self.policy, staleness)
        emitter.resolution(layered.resolve(sem), response.base, full)
        for hypothesis, extra in zip(request.hypotheses, extras, strict=True):
            assert extra is not None
            out = response.hypotheses.add(label=hypothesis.label)
            emitter.resolution(layered.resolve_with(extra, sem), out.resolution, full)
        return response

    async def Reconcile(
        self, request: pb.ReconcileRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReconcileResponse:
        return without_gc(self._Reconcile, request)

    def _Reconcile(self, request: pb.ReconcileRequest) -> pb.ReconcileResponse:
        reader = self._reader()
        if not request.proposals:
            reader.problems.append(
                Violation(Reason.INVALID_FIELD, "proposals", "required: at least one proposal")
            )
        base = reader.base(request.evidence.claims, "evidence.claims")
        extras = [
            reader.extra(request.proposals[i : i + 1], "proposals", offset=i)
            for i in range(len(request.proposals))
        ]
        reader.done()
        assert base is not None
        layered = engine.Layered(base, self.policy)
        before: dict[SemKey, Resolution] = {}

        def resolve_before(sem: SemKey) -> Resolution:
            if sem not in before:
                before[sem] = layered.resolve(sem)
            return before[sem]

        response = pb.ReconcileResponse()
        emitter = Emitter(reader.index)
        for proposal, extra in zip(request.proposals, extras, strict=True):
            assert extra is not None
            sems = reconcile.affected((proposal.subject, proposal.predicate), extra, base)
            decision, reason, old, new = reconcile.judge(
                sems, resolve_before, partial(_after, layered, extra)
            )
            out = response.outcomes.add(
                claim_ref=claim_ref(proposal), decision=decision.value, reason=reason.value
            )
            emitter.resolution(old, out.before)
            emitter.resolution(new, out.after)
        return response

    async def GetResolverPolicy(
        self, request: pb.GetResolverPolicyRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetResolverPolicyResponse:
        policy = self.policy
        response = pb.GetResolverPolicyResponse(
            conflict_margin=policy.conflict_margin,
            margin_tolerance=policy.margin_tolerance,
            safety_sensitive_predicates=sorted(policy.safety_sensitive),
            reliability_table_origin=policy.origin,
        )
        for source, reliability in policy.sorted_table():
            response.reliability_table.add(source=source, reliability=reliability)
        return response


def _after(layered: engine.Layered, extra: Intake, sem: SemKey) -> Resolution:
    return layered.resolve_with(extra, sem)


def _full_detail(reader: Reader, detail: int) -> bool:
    """True unless SUMMARY was asked for; an unknown number is recorded as a violation."""
    if detail == pb.RESOLUTION_DETAIL_SUMMARY:
        return False
    if detail not in (pb.RESOLUTION_DETAIL_UNSPECIFIED, pb.RESOLUTION_DETAIL_FULL):
        reader.problems.append(
            Violation(Reason.INVALID_FIELD, "detail", f"unknown ResolutionDetail value {detail}")
        )
    return True


def _staleness_fields(
    request: pb.ResolveSemanticRequest | pb.ResolveEvidenceRequest | pb.ResolveHypothesesRequest,
) -> tuple[WireTime | None, WireTime | None]:
    """``as_of`` and ``stale_after`` as (seconds, nanos), for the reader to check and use."""
    as_of = stale_after = None
    if request.HasField("as_of"):
        as_of = (request.as_of.seconds, request.as_of.nanos)
    if request.HasField("stale_after"):
        stale_after = (request.stale_after.seconds, request.stale_after.nanos)
    return as_of, stale_after
