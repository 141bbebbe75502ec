"""The gRPC face of the resolver: translate the request, call the domain, translate back.

Every RPC reads all of its claim lists through one ``Reader`` first, so a bad
request is rejected as a whole, with every violation, before any fusion runs.
Then it keeps within what one request may cost. ResolveHypotheses and Reconcile,
which repeat a resolution per hypothesis or proposal, charge their claim resolutions
before resolving anything (``budget.charge``) and count their response as they fill
it in, so an oversized one is refused as soon as it passes its budget
(``assay.runtime.budget``); ResolveSemantic and ResolveEvidence, whose responses only
grow with their request, have theirs checked once, serialized. Work above
``offload.INLINE_MAX_UNITS`` runs on a worker thread and stops at its next check once
the caller is gone; smaller work runs on the loop with the cyclic collector paused
(``without_gc``), as does a call made without a gRPC context (in-process, from tests
and benchmarks: nothing is sent, so only the counting RPCs' budgets apply).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, partial
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from assay.errors import Reason
from assay.runtime.budget import MIN_CLAIM_WIRE_BYTES, ResponseBudget
from assay.runtime.config import DEFAULT_MAX_MESSAGE_BYTES
from assay.services.resolver import engine, reconcile
from assay.services.resolver.budget import charge
from assay.services.resolver.columnar import bridge, resolve_stream
from assay.services.resolver.convert import Emitter, claim_ref
from assay.services.resolver.intake import source_table, without_gc
from assay.services.resolver.model import Intake, Resolution, SemKey
from assay.services.resolver.offload import INLINE_MAX_UNITS, NEVER, Offload, Stop
from assay.services.resolver.policy import Policy
from assay.services.resolver.reader import Reader, WireTime
from assay.services.resolver.validation import MAX_HYPOTHESES, Violation
from assay.v1 import resolver_service_pb2 as pb

_Request = TypeVar("_Request", bound=Message)
_Response = TypeVar("_Response", bound=Message)
_HasEvidence = pb.ResolveSemanticRequest | pb.ResolveEvidenceRequest


# ResolveColumns counts one unit of work per this many bytes of Arrow stream.
COLUMNS_BYTES_PER_UNIT = 8


class ResolverServicer:
    """Implements ``assay.v1.ResolverService`` over one policy."""

    def __init__(self, policy: Policy, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        """``max_message_bytes``: the server's message limit, which no response may pass."""
        self.policy = policy
        self.max_message_bytes = max_message_bytes
        self._sources = source_table(policy.reliability)
        self.offload = Offload()
        # ResolveEvidence with at least this many claims is resolved column-wise (SUMMARY,
        # FULL detail): see ``bridge``.
        self.bridge_min_claims = bridge.MIN_CLAIMS
        self.bridge_min_claims_full = bridge.MIN_CLAIMS_FULL

    async def close(self) -> None:
        """The ServiceSpec hook: heavy work that has not started is dropped."""
        self.offload.close()

    def _reader(self, stop: Stop = NEVER) -> Reader:
        if stop is NEVER:  # nothing to check: the reader skips the checks altogether
            return Reader(self.policy, self._sources)
        return Reader(self.policy, self._sources, stop.check)

    def _budget(self, request: Message, at_least: int, field: str, advice: str) -> ResponseBudget:
        return ResponseBudget(self.max_message_bytes, at_least, request.ByteSize, field, advice)

    def _evidence_budget(self, advice: str) -> Callable[[_HasEvidence], ResponseBudget]:
        """The budget of an RPC whose response grows with its evidence, checked once sent."""

        def budget(request: _HasEvidence) -> ResponseBudget:
            at_least = MIN_CLAIM_WIRE_BYTES * len(request.evidence.claims)
            return self._budget(request, at_least, "evidence.claims", advice)

        return budget

    async def _serve(
        self,
        method: str,
        work: Callable[[_Request, Stop], _Response],
        request: _Request,
        context: grpc.aio.ServicerContext | None,
        units: int,
        budget: Callable[[_Request], ResponseBudget] | None = None,
    ) -> _Response | bytes:
        """``work`` on the loop when it is small, else on a worker, and the response's size
        checked against ``budget`` if given (RPCs that multiply count as they go instead).

        The response is serialized here, on the worker for large work, and returned as
        bytes (the runtime sends bytes as they are): the loop never serializes a large
        response, and its size is checked on the bytes that go out, not counted by a
        ``ByteSize`` walk before the runtime serializes it again. Without a context (an
        in-process call, no transport) nothing is sent, so nothing is checked, and the
        message itself is returned."""
        if context is None:
            return without_gc(partial(_unstoppable, work), request)
        if units <= INLINE_MAX_UNITS:
            return without_gc(partial(_serialized, work, budget), request)
        serialized = partial(_serialized, work, budget)
        return await self.offload.run(method, serialized, request, context.time_remaining())

    async def ResolveSemantic(
        self, request: pb.ResolveSemanticRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveSemanticResponse | bytes:
        units = len(request.evidence.claims)
        budget = self._evidence_budget("send fewer or smaller claims about the target")
        return await self._serve(
            "ResolveSemantic", self._ResolveSemantic, request, context, units, budget
        )

    def _ResolveSemantic(
        self, request: pb.ResolveSemanticRequest, stop: Stop = NEVER
    ) -> pb.ResolveSemanticResponse:
        reader = self._reader(stop)
        reader.semantic(request.subject, request.predicate)
        full = _full_detail(reader, request.detail)
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        reader.done()
        assert base is not None
        stop.check()
        sem = (request.subject, request.predicate)
        # One semantic, resolved once: nothing to prepare for layering (``Layered``).
        resolution = engine.resolve_one((base,), sem, self.policy, staleness)
        stop.check()
        response = pb.ResolveSemanticResponse()
        Emitter(reader.index).resolution(resolution, response.resolution, full)
        return response

    async def ResolveEvidence(
        self, request: pb.ResolveEvidenceRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveEvidenceResponse | bytes:
        units = len(request.evidence.claims)
        budget = self._evidence_budget("split the evidence across calls")
        return await self._serve(
            "ResolveEvidence", self._ResolveEvidence, request, context, units, budget
        )

    def _ResolveEvidence(
        self, request: pb.ResolveEvidenceRequest, stop: Stop = NEVER
    ) -> pb.ResolveEvidenceResponse:
        reader = self._reader(stop)
        full = _full_detail(reader, request.detail)
        staleness = reader.staleness(*_staleness_fields(request))
        least = self.bridge_min_claims_full if full else self.bridge_min_claims
        if not reader.problems and len(request.evidence.claims) >= least:
            bulk = bridge.resolve_evidence(
                request.evidence, self.policy, staleness, full, stop.check
            )
            if bulk is not None:  # else invalid or unusual: the per-claim path answers
                return bulk
        base = reader.base(request.evidence.claims, "evidence.claims")
        reader.done()
        assert base is not None
        stop.check()
        resolutions = engine.resolve_evidence(base, self.policy, staleness, stop.check)
        response = pb.ResolveEvidenceResponse()
        emitter = Emitter(reader.index)
        add = response.resolutions.add
        for i, resolution in enumerate(resolutions):
            if not i % engine.CHECK_EVERY:
                stop.check()
            emitter.resolution(resolution, add(), full)
        for subject, predicate in engine.conflicted_safety(resolutions):
            response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
        response.coverage_confidence = engine.coverage(resolutions)
        if full:  # SUMMARY leaves the response's warnings out too, as each resolution's
            for resolution in resolutions:
                for warning in resolution.warnings:
                    emitter.warning(warning, response.warnings.add())
        return response

    async def ResolveHypotheses(
        self, request: pb.ResolveHypothesesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveHypothesesResponse | bytes:
        # At most this many claim resolutions (and each claim read once).
        units = len(request.evidence.claims) * (len(request.hypotheses) + 1) + sum(
            len(h.claims) for h in request.hypotheses
        )
        return await self._serve(
            "ResolveHypotheses", self._ResolveHypotheses, request, context, units
        )

    def _ResolveHypotheses(
        self, request: pb.ResolveHypothesesRequest, stop: Stop = NEVER
    ) -> pb.ResolveHypothesesResponse:
        reader = self._reader(stop)
        reader.semantic(request.subject, request.predicate)
        if len(request.hypotheses) > MAX_HYPOTHESES:
            reader.problems.append(
                Violation(Reason.INVALID_FIELD, "hypotheses", f"at most {MAX_HYPOTHESES}")
            )
        full = _full_detail(reader, request.detail)
        # The base's own detail: a caller that echoes the base asks FULL for it alone.
        base_full = (
            full
            if request.base_detail == pb.RESOLUTION_DETAIL_UNSPECIFIED
            else _full_detail(reader, request.base_detail, "base_detail")
        )
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        extras = [
            reader.extra(h.claims, f"hypotheses[{i}].claims")
            for i, h in enumerate(request.hypotheses)
        ]
        reader.done()
        assert base is not None
        stop.check()
        sem = (request.subject, request.predicate)
        layered = engine.Layered(base, self.policy, staleness)
        about = layered.claims_about(sem)
        extra_claims = sum(extra.count for extra in extras if extra is not None)
        charge(
            (len(extras) + 1) * about + extra_claims,
            "hypotheses",
            f"({len(extras)} hypotheses + 1) x {about:,} claims about the target "
            f"+ {extra_claims:,} hypothesis claims",
        )
        budget = self._budget(
            request,
            MIN_CLAIM_WIRE_BYTES * (base.count + extra_claims) + 2 * len(extras),
            "hypotheses",
            "send fewer hypotheses"
            + (", or ask for RESOLUTION_DETAIL_SUMMARY" if full else " per call"),
        )
        response = pb.ResolveHypothesesResponse()
        emitter = Emitter(reader.index)
        emitter.resolution(layered.resolve(sem), response.base, base_full)
        budget.element(response.base.ByteSize())
        for hypothesis, extra in zip(request.hypotheses, extras, strict=True):
            assert extra is not None
            stop.check()
            out = response.hypotheses.add(label=hypothesis.label)
            emitter.resolution(layered.resolve_with(extra, sem), out.resolution, full)
            budget.element(out.ByteSize())
        return response

    async def Reconcile(
        self, request: pb.ReconcileRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReconcileResponse | bytes:
        # At most this many claim resolutions (and each claim read once).
        units = (len(request.evidence.claims) + 1) * (len(request.proposals) + 1)
        return await self._serve("Reconcile", self._Reconcile, request, context, units)

    def _Reconcile(self, request: pb.ReconcileRequest, stop: Stop = NEVER) -> pb.ReconcileResponse:
        reader = self._reader(stop)
        if not request.proposals:
            reader.problems.append(
                Violation(Reason.INVALID_FIELD, "proposals", "required: at least one proposal")
            )
        claims = request.evidence.claims
        base = reader.base(claims, "evidence.claims")
        extras = [
            reader.extra(request.proposals[i : i + 1], "proposals", offset=i)
            for i in range(len(request.proposals))
        ]
        reader.done()
        assert base is not None
        stop.check()
        layered = engine.Layered(base, self.policy)
        judged_on = [
            reconcile.affected((proposal.subject, proposal.predicate), extra, base)
            for proposal, extra in zip(request.proposals, extras, strict=True)
            if extra is not None
        ]
        charge(
            sum(1 + sum(map(layered.claims_about, sems)) for sems in judged_on),
            "proposals",
            f"{len(judged_on)} proposals x (1 + the claims about the semantics each is judged on)",
        )
        budget = self._budget(
            request,
            MIN_CLAIM_WIRE_BYTES * (len(claims) + len(extras)),
            "proposals",
            "send fewer proposals per call",
        )
        before: dict[SemKey, Resolution] = {}

        def resolve_before(sem: SemKey) -> Resolution:
            if sem not in before:
                before[sem] = layered.resolve(sem)
            return before[sem]

        response = pb.ReconcileResponse()
        emitter = Emitter(reader.index)
        for proposal, extra, sems in zip(request.proposals, extras, judged_on, strict=True):
            assert extra is not None
            stop.check()
            decision, reason, old, new = reconcile.judge(
                sems, resolve_before, partial(_after, layered, extra)
            )
            out = response.outcomes.add(
                claim_ref=claim_ref(proposal), decision=decision.value, reason=reason.value
            )
            emitter.resolution(old, out.before)
            emitter.resolution(new, out.after)
            budget.element(out.ByteSize())
        return response

    async def GetResolverPolicy(
        self, request: pb.GetResolverPolicyRequest, context: grpc.aio.ServicerContext | None
    ) -> pb.GetResolverPolicyResponse | bytes:
        """The policy never changes while the servicer serves it, so its response is built
        and serialized once (``_policy_response``) and sent as those bytes; an in-process
        call (no context) gets the message."""
        if context is None:
            return self._policy_message()
        return self._policy_response

    @cached_property
    def _policy_response(self) -> bytes:
        data: bytes = self._policy_message().SerializeToString(deterministic=True)
        return data

    def _policy_message(self) -> pb.GetResolverPolicyResponse:
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

    async def ResolveColumns(
        self, request: pb.ResolveColumnsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveColumnsResponse | bytes:
        # A claim takes more than 8 bytes of Arrow even compressed, so this never counts
        # fewer units than claims: every large request goes to a worker.
        units = len(request.claims_arrow) // COLUMNS_BYTES_PER_UNIT
        return await self._serve(
            "ResolveColumns", self._ResolveColumns, request, context, units, self._columns_budget
        )

    def _columns_budget(self, request: pb.ResolveColumnsRequest) -> ResponseBudget:
        """The response grows with the claims (one row each at FULL), so it is held to the
        request's size like ResolveEvidence's, naming the stream."""
        return self._budget(
            request,
            len(request.claims_arrow),
            "claims_arrow",
            "split the claims across calls, or ask for RESOLUTION_DETAIL_SUMMARY",
        )

    def _ResolveColumns(
        self, request: pb.ResolveColumnsRequest, stop: Stop = NEVER
    ) -> pb.ResolveColumnsResponse:
        reader = self._reader(stop)
        full = _full_detail(reader, request.detail)
        as_of = stale_after = None
        if request.HasField("as_of"):
            as_of = (request.as_of.seconds, request.as_of.nanos)
        if request.HasField("stale_after"):
            stale_after = (request.stale_after.seconds, request.stale_after.nanos)
        staleness = reader.staleness(as_of, stale_after)
        answer = resolve_stream(
            request.claims_arrow,
            self.policy,
            None if staleness is None else staleness.horizon,
            full=full,
            problems=reader.problems,
            check=stop.check,
        )
        tables = answer.tables
        response = pb.ResolveColumnsResponse(
            semantics_arrow=tables.semantics,
            values_arrow=tables.values,
            excluded_arrow=tables.excluded,
            claims_arrow=tables.claims,
            groups_arrow=tables.groups,
            warnings_arrow=tables.warnings,
            coverage_confidence=answer.coverage,
        )
        for subject, predicate in answer.conflicted_safety:
            response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
        return response


def _unstoppable(work: Callable[[_Request, Stop], _Response], request: _Request) -> _Response:
    return work(request, NEVER)


def _serialized(
    work: Callable[[_Request, Stop], _Response],
    budget: Callable[[_Request], ResponseBudget] | None,
    request: _Request,
    stop: Stop = NEVER,
) -> bytes:
    """``work``'s response, serialized as the runtime would, within ``budget`` if given."""
    data: bytes = work(request, stop).SerializeToString(deterministic=True)
    if budget is not None:
        budget(request).add(len(data))
    return data


def _after(layered: engine.Layered, extra: Intake, sem: SemKey) -> Resolution:
    return layered.resolve_with(extra, sem)


def _full_detail(reader: Reader, detail: int, field: str = "detail") -> bool:
    """True unless SUMMARY was asked for; an unknown number is recorded as a violation
    of ``field``."""
    if detail == pb.RESOLUTION_DETAIL_SUMMARY:
        return False
    if detail not in (pb.RESOLUTION_DETAIL_UNSPECIFIED, pb.RESOLUTION_DETAIL_FULL):
        reader.problems.append(
            Violation(Reason.INVALID_FIELD, field, f"unknown ResolutionDetail value {detail}")
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
