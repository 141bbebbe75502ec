"""Each resolver answer written into its response message, within the response's budget.

ResolveHypotheses and Reconcile repeat a resolution per hypothesis or proposal, so their
writers count the response as they fill it in (``ResponseBudget.element``) and pull the
next resolution only once the last one fitted: an oversized response is refused as soon
as it passes its budget, with no more resolved than was written. ResolveSemantic,
ResolveEvidence and ResolveColumns, whose responses only grow with their request, have a
budget here that the servicer checks once, on the serialized bytes
(``assay.runtime.response_budget``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from google.protobuf.message import Message

from assay.protowire import tag_of
from assay.runtime.response_budget import MIN_CLAIM_WIRE_BYTES, ResponseBudget
from assay.services.resolver.domain.asks import EvidenceAnswer, HypothesesAnswer, HypothesesAsk
from assay.services.resolver.domain.model import ProposalOutcome, Resolution
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.resolve import CHECK_EVERY
from assay.services.resolver.wire.convert import ResolutionWriter
from assay.v1 import resolver_service_pb2 as pb

_HasEvidence = pb.ResolveSemanticRequest | pb.ResolveEvidenceRequest
# The response fields a budget counts element by element as they are filled in.
_BASE_TAG = tag_of(pb.ResolveHypothesesResponse, "base")
_HYPOTHESIS_TAG = tag_of(pb.ResolveHypothesesResponse, "hypotheses")
_OUTCOME_TAG = tag_of(pb.ReconcileResponse, "outcomes")


def semantic(
    writer: ResolutionWriter, resolution: Resolution, full: bool
) -> pb.ResolveSemanticResponse:
    response = pb.ResolveSemanticResponse()
    writer.resolution(resolution, response.resolution, full)
    return response


def evidence(
    writer: ResolutionWriter, answer: EvidenceAnswer, full: bool, check: Callable[[], None]
) -> pb.ResolveEvidenceResponse:
    """``check`` is called every ``CHECK_EVERY`` resolutions written (it may raise to
    abandon the work)."""
    response = pb.ResolveEvidenceResponse()
    add = response.resolutions.add
    for i, resolution in enumerate(answer.resolutions):
        if not i % CHECK_EVERY:
            check()
        writer.resolution(resolution, add(), full)
    for subject, predicate in answer.conflicted_safety:
        response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
    response.coverage_confidence = answer.coverage
    if full:  # SUMMARY leaves the response's warnings out too, as each resolution's
        for resolution in answer.resolutions:
            for warning in resolution.warnings:
                writer.warning(warning, response.warnings.add())
    return response


def hypotheses(
    writer: ResolutionWriter,
    answer: HypothesesAnswer,
    ask: HypothesesAsk,
    budget: ResponseBudget,
) -> pb.ResolveHypothesesResponse:
    response = pb.ResolveHypothesesResponse()
    writer.resolution(answer.base, response.base, ask.base_full)
    budget.element(_BASE_TAG, response.base.ByteSize())
    for label, resolution in answer.hypotheses:
        out = response.hypotheses.add(label=label)
        writer.resolution(resolution, out.resolution, ask.full)
        budget.element(_HYPOTHESIS_TAG, out.ByteSize())
    return response


def reconcile(
    writer: ResolutionWriter, outcomes: Iterator[ProposalOutcome], budget: ResponseBudget
) -> pb.ReconcileResponse:
    response = pb.ReconcileResponse()
    for outcome in outcomes:
        out = response.outcomes.add(
            claim_ref=outcome.claim_ref,
            decision=outcome.decision.value,
            reason=outcome.reason.value,
        )
        writer.resolution(outcome.before, out.before)
        writer.resolution(outcome.after, out.after)
        budget.element(_OUTCOME_TAG, out.ByteSize())
    return response


def policy(policy: Policy, load_time: float) -> pb.GetResolverPolicyResponse:
    """``load_time``: when the table was read, in seconds since the epoch."""
    response = pb.GetResolverPolicyResponse(
        conflict_margin=policy.conflict_margin,
        margin_tolerance=policy.margin_tolerance,
        safety_sensitive_predicates=sorted(policy.safety_sensitive),
        reliability_table_origin=policy.origin,
        reliability_table_digest=policy.digest,
    )
    response.reliability_table_load_time.FromNanoseconds(round(load_time * 1e9))
    for source, reliability in policy.sorted_table():
        response.reliability_table.add(source=source, reliability=reliability)
    return response


class Budgets:
    """The response budgets of one server's requests, under its message limit."""

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes

    def of(self, request: Message, at_least: int, field: str, advice: str) -> ResponseBudget:
        """A budget of at least ``at_least`` request bytes' worth, naming ``field``."""
        return ResponseBudget(self.max_message_bytes, at_least, request.ByteSize, field, advice)

    def evidence(self, advice: str) -> Callable[[_HasEvidence], ResponseBudget]:
        """The budget of an RPC whose response grows with its evidence, checked once sent."""

        def budget(request: _HasEvidence) -> ResponseBudget:
            at_least = MIN_CLAIM_WIRE_BYTES * len(request.evidence.claims)
            return self.of(request, at_least, "evidence.claims", advice)

        return budget

    def hypotheses(
        self, request: pb.ResolveHypothesesRequest, ask: HypothesesAsk
    ) -> ResponseBudget:
        extra_claims = sum(h.claims.count for h in ask.hypotheses)
        return self.of(
            request,
            MIN_CLAIM_WIRE_BYTES * (ask.base.count + extra_claims) + 2 * len(ask.hypotheses),
            "hypotheses",
            "send fewer hypotheses"
            + (", or ask for RESOLUTION_DETAIL_SUMMARY" if ask.full else " per call"),
        )

    def reconcile(self, request: pb.ReconcileRequest) -> ResponseBudget:
        return self.of(
            request,
            MIN_CLAIM_WIRE_BYTES * (len(request.evidence.claims) + len(request.proposals)),
            "proposals",
            "send fewer proposals per call",
        )

    def columns(self, request: pb.ResolveColumnsRequest, size: int | None = None) -> ResponseBudget:
        """The response grows with the claims (one row each at FULL), so it is held to the
        request's size like ResolveEvidence's, naming the stream; ``size`` is the stream's
        length when the caller read it already (each read of a bytes field copies it)."""
        return self.of(
            request,
            len(request.claims_arrow) if size is None else size,
            "claims_arrow",
            "split the claims across calls, or ask for RESOLUTION_DETAIL_SUMMARY",
        )
