"""What each resolver RPC does, from its request message to its response message.

Every call reads all of its claim lists through one ``Reader`` first, so a bad
request is rejected as a whole, with every violation, before any fusion runs.
Then it keeps within what one request may cost: ResolveHypotheses and Reconcile,
which repeat a resolution per hypothesis or proposal, charge their claim resolutions
before resolving anything (``budget.charge``) and count their response as they fill
it in, so an oversized one is refused as soon as it passes its budget
(``assay.runtime.budget``); ResolveSemantic, ResolveEvidence and ResolveColumns, whose
responses only grow with their request, have a budget here that the adapter checks
once, on the serialized bytes. ResolveColumns's stream, which may be compressed, is also
held to the server's ``ColumnsLimits`` before any of it is decompressed.

Nothing here knows gRPC: a call is handed its request and a ``Stop`` and returns its
response; where it runs (on the loop or on a worker) and what sets the stop is the
servicer's business (``adapters.servicer``), which holds one ``ResolverCalls`` and puts
each call behind its RPC. Tests and benchmarks call these directly: a use case needs no
servicer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from google.protobuf.message import Message

from assay.errors import Reason
from assay.protowire import tag_of
from assay.runtime.budget import MIN_CLAIM_WIRE_BYTES, ResponseBudget
from assay.services.resolver.columnar import resolve_stream
from assay.services.resolver.columnar.input.bounds import Survey
from assay.services.resolver.columnar.output.response import response_bytes
from assay.services.resolver.domain import reconcile, resolve
from assay.services.resolver.domain.budget import ColumnsLimits, charge
from assay.services.resolver.domain.model import Intake, Resolution, SemKey
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.validation import MAX_HYPOTHESES, Violation
from assay.services.resolver.use_cases.stop import NEVER, Stop
from assay.services.resolver.wire.convert import ResolutionWriter, claim_ref
from assay.services.resolver.wire.intake import source_table
from assay.services.resolver.wire.reader import Reader, WireTime
from assay.transport import DEFAULT_MAX_MESSAGE_BYTES
from assay.v1 import resolver_service_pb2 as pb

_HasEvidence = pb.ResolveSemanticRequest | pb.ResolveEvidenceRequest
# The response fields a budget counts element by element as they are filled in.
_BASE_TAG = tag_of(pb.ResolveHypothesesResponse, "base")
_HYPOTHESIS_TAG = tag_of(pb.ResolveHypothesesResponse, "hypotheses")
_OUTCOME_TAG = tag_of(pb.ReconcileResponse, "outcomes")


class ResolverCalls:
    """The resolver's RPCs over one policy, as plain calls on request messages."""

    def __init__(
        self,
        policy: Policy,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        columns_limits: ColumnsLimits | None = None,
    ) -> None:
        """``max_message_bytes``: the server's message limit, which no response may pass
        (the runtime's by default); ``columns_limits``: what one ResolveColumns stream
        may hold (the defaults when None)."""
        self.policy = policy
        self.max_message_bytes = max_message_bytes
        self.columns_limits = columns_limits or ColumnsLimits()
        self._sources = source_table(policy.reliability)

    def reader(self, stop: Stop = NEVER) -> Reader:
        """A reader of this policy's claims, checking ``stop`` as it reads."""
        if stop is NEVER:  # nothing to check: the reader skips the checks altogether
            return Reader(self.policy, self._sources)
        return Reader(self.policy, self._sources, stop.check)

    def _budget(self, request: Message, at_least: int, field: str, advice: str) -> ResponseBudget:
        return ResponseBudget(self.max_message_bytes, at_least, request.ByteSize, field, advice)

    def evidence_budget(self, advice: str) -> Callable[[_HasEvidence], ResponseBudget]:
        """The budget of an RPC whose response grows with its evidence, checked once sent."""

        def budget(request: _HasEvidence) -> ResponseBudget:
            at_least = MIN_CLAIM_WIRE_BYTES * len(request.evidence.claims)
            return self._budget(request, at_least, "evidence.claims", advice)

        return budget

    def resolve_semantic(
        self, request: pb.ResolveSemanticRequest, stop: Stop = NEVER
    ) -> pb.ResolveSemanticResponse:
        reader = self.reader(stop)
        reader.semantic(request.subject, request.predicate)
        full = _full_detail(reader, request.detail)
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        reader.done()
        assert base is not None
        stop.check()
        sem = (request.subject, request.predicate)
        # One semantic, resolved once: nothing to prepare for layering (``Layered``).
        resolution = resolve.resolve_one((base,), sem, self.policy, staleness)
        stop.check()
        response = pb.ResolveSemanticResponse()
        ResolutionWriter(reader.index).resolution(resolution, response.resolution, full)
        return response

    def resolve_evidence(
        self, request: pb.ResolveEvidenceRequest, stop: Stop = NEVER
    ) -> pb.ResolveEvidenceResponse:
        reader = self.reader(stop)
        full = _full_detail(reader, request.detail)
        staleness = reader.staleness(*_staleness_fields(request))
        base = reader.base(request.evidence.claims, "evidence.claims")
        reader.done()
        assert base is not None
        stop.check()
        resolutions = resolve.resolve_evidence(base, self.policy, staleness, stop.check)
        response = pb.ResolveEvidenceResponse()
        writer = ResolutionWriter(reader.index)
        add = response.resolutions.add
        for i, resolution in enumerate(resolutions):
            if not i % resolve.CHECK_EVERY:
                stop.check()
            writer.resolution(resolution, add(), full)
        for subject, predicate in resolve.conflicted_safety(resolutions):
            response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
        response.coverage_confidence = resolve.coverage(resolutions)
        if full:  # SUMMARY leaves the response's warnings out too, as each resolution's
            for resolution in resolutions:
                for warning in resolution.warnings:
                    writer.warning(warning, response.warnings.add())
        return response

    def resolve_hypotheses(
        self, request: pb.ResolveHypothesesRequest, stop: Stop = NEVER
    ) -> pb.ResolveHypothesesResponse:
        reader = self.reader(stop)
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
        layered = resolve.Layered(base, self.policy, staleness)
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
        writer = ResolutionWriter(reader.index)
        writer.resolution(layered.resolve(sem), response.base, base_full)
        budget.element(_BASE_TAG, response.base.ByteSize())
        for hypothesis, extra in zip(request.hypotheses, extras, strict=True):
            assert extra is not None
            stop.check()
            out = response.hypotheses.add(label=hypothesis.label)
            writer.resolution(layered.resolve_with(extra, sem), out.resolution, full)
            budget.element(_HYPOTHESIS_TAG, out.ByteSize())
        return response

    def reconcile(self, request: pb.ReconcileRequest, stop: Stop = NEVER) -> pb.ReconcileResponse:
        reader = self.reader(stop)
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
        layered = resolve.Layered(base, self.policy)
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
        writer = ResolutionWriter(reader.index)
        for proposal, extra, sems in zip(request.proposals, extras, judged_on, strict=True):
            assert extra is not None
            stop.check()
            decision, reason, old, new = reconcile.judge(
                sems, resolve_before, partial(_after, layered, extra)
            )
            out = response.outcomes.add(
                claim_ref=claim_ref(proposal), decision=decision.value, reason=reason.value
            )
            writer.resolution(old, out.before)
            writer.resolution(new, out.after)
            budget.element(_OUTCOME_TAG, out.ByteSize())
        return response

    def policy_message(self) -> pb.GetResolverPolicyResponse:
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

    def columns_budget(
        self, request: pb.ResolveColumnsRequest, size: int | None = None
    ) -> ResponseBudget:
        """The response grows with the claims (one row each at FULL), so it is held to the
        request's size like ResolveEvidence's, naming the stream; ``size`` is the stream's
        length when the caller read it already (each read of a bytes field copies it)."""
        return self._budget(
            request,
            len(request.claims_arrow) if size is None else size,
            "claims_arrow",
            "split the claims across calls, or ask for RESOLUTION_DETAIL_SUMMARY",
        )

    def resolve_columns(
        self, request: pb.ResolveColumnsRequest, stop: Stop = NEVER
    ) -> pb.ResolveColumnsResponse:
        """The response as a message, for in-process callers."""
        return pb.ResolveColumnsResponse.FromString(self.resolve_columns_wire(request, stop))

    def resolve_columns_wire(
        self,
        request: pb.ResolveColumnsRequest,
        stop: Stop = NEVER,
        *,
        data: bytes | memoryview | None = None,
        surveyed: Survey | None = None,
    ) -> bytes:
        """The response serialized (``columnar.output.response``): what the server sends. ``data``
        is the request's stream when the caller read it already: each read of a bytes field
        copies it (~30 ms at a million claims); ``surveyed`` its survey
        (``columnar.input.bounds``), when the caller made it already."""
        reader = self.reader(stop)
        full = _full_detail(reader, request.detail)
        staleness = reader.staleness(*_staleness_fields(request))
        answer = resolve_stream(
            request.claims_arrow if data is None else data,
            self.policy,
            None if staleness is None else staleness.horizon,
            full=full,
            problems=reader.problems,
            check=stop.check,
            limits=self.columns_limits,
            surveyed=surveyed,
        )
        stop.check()
        return response_bytes(answer)


def _after(layered: resolve.Layered, extra: Intake, sem: SemKey) -> Resolution:
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
    request: pb.ResolveSemanticRequest
    | pb.ResolveEvidenceRequest
    | pb.ResolveHypothesesRequest
    | pb.ResolveColumnsRequest,
) -> tuple[WireTime | None, WireTime | None]:
    """``as_of`` and ``stale_after`` as (seconds, nanos), for the reader to check and use."""
    as_of = stale_after = None
    if request.HasField("as_of"):
        as_of = (request.as_of.seconds, request.as_of.nanos)
    if request.HasField("stale_after"):
        stale_after = (request.stale_after.seconds, request.stale_after.nanos)
    return as_of, stale_after
