"""Protobuf <-> adjudication domain values: one of the few modules that see ``_pb2``.

The others are ``wire.scalars`` (times and enums), ``adapters.servicer`` (the gRPC
face) and ``service`` (which registers the service's descriptor). Requests become
domain inputs (validation happens in the rule modules, not here); domain values become
response messages; the runtime's ``Principal`` becomes the domain's ``Caller``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from assay.errors import FieldViolation
from assay.protovalues import json_to_value, value_to_json
from assay.runtime.auth.principal import Principal, Role
from assay.services.adjudication.domain import agreement as agreement_rules
from assay.services.adjudication.domain import batches, openings, reviews
from assay.services.adjudication.domain.agreement_report import AgreementReport
from assay.services.adjudication.domain.batches import BatchItem
from assay.services.adjudication.domain.model import (
    EVERY_TENANT,
    Actor,
    AuditEvent,
    Basis,
    BlindedCase,
    Caller,
    Case,
    CaseDetail,
    CaseInput,
    CaseState,
    ChainHead,
    ChainVerdict,
    DeletedCounts,
    ExportExclusion,
    ExportRecord,
    ExportTally,
    GoldLabelRevision,
    Lineage,
    Outcome,
    Resolution,
    Review,
    Reviewer,
    ReviewerKind,
    TenantScope,
    superseded_ids,
)
from assay.services.adjudication.domain.resolution import ResolveRequest
from assay.services.adjudication.domain.reviews import ReviewSubmission, Revision
from assay.services.adjudication.domain.round_agreement import RoundAgreement, round_agreements
from assay.services.adjudication.domain.state import derive_state
from assay.services.adjudication.wire import case_claims
from assay.services.adjudication.wire.scalars import (
    enum_name,
    from_proto_enum,
    from_timestamp,
    timestamp,
    to_proto_enum,
)
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2

# --- requests -> domain ----------------------------------------------------


@functools.lru_cache(maxsize=1024)  # one per principal, asked on every call it makes
def caller(principal: Principal) -> Caller:
    """The principal as the adjudication rules see it. The dev-mode principal (no
    authentication) has no actor, so no identity rule applies to it."""
    actor = Actor(principal.issuer, principal.subject) if principal.authenticated else None
    scope = EVERY_TENANT if principal.all_tenants else TenantScope(principal.tenants)
    return Caller(
        actor=actor,
        scope=scope,
        operator=principal.holds(Role.OPERATOR),
        adjudicator=principal.holds(Role.ADJUDICATOR),
        auditor=principal.holds(Role.AUDITOR),
        reviewer_id=principal.reviewer_id,
    )


def reviewer_kind(number: int) -> ReviewerKind | None:
    return from_proto_enum(ReviewerKind, enum_name(gold_pb2.ReviewerKind, number), "REVIEWER_KIND_")


def batch_items(messages: Sequence[pb.Case]) -> list[BatchItem]:
    """A batch's cases; of too many, only one more than allowed (which refuses them all)."""
    shown = messages[: batches.MAX_CASES + 1]
    return [batch_item(m, batches.path(i)) for i, m in enumerate(shown)]


def batch_item(message: pb.Case, prefix: str) -> BatchItem:
    """The case, and a violation instead of its expiry when no datetime can hold it."""
    expire = None
    unreadable: tuple[FieldViolation, ...] = ()
    if message.HasField("expire_time"):
        try:
            expire = from_timestamp(message.expire_time)
        except (OverflowError, ValueError, OSError):
            path = f"{prefix}.expire_time"
            unreadable = (FieldViolation(path, "is not a valid timestamp"),)
    claims, unreadable_claims = case_claims.claims_in(message.claims, f"{prefix}.claims")
    data = CaseInput(
        tenant=message.tenant,
        subject=message.subject,
        predicate=message.predicate,
        candidate_values=tuple(value_to_json(v) for v in message.candidate_values),
        evidence_refs=tuple(message.evidence_refs),
        context=message.context,
        local_verdict=(
            value_to_json(message.local_verdict) if message.HasField("local_verdict") else None
        ),
        lineage=Lineage(message.lineage.origin, message.lineage.origin_ref),
        expire_time=expire,
        required_reviews=message.required_reviews,
        claims=claims,
        spot_check_rate=message.spot_check_rate,
    )
    return BatchItem(data, (*unreadable, *unreadable_claims))


def submission(request: pb.SubmitReviewRequest) -> ReviewSubmission:
    outcome = from_proto_enum(
        Outcome, enum_name(pb.ReviewOutcome, request.outcome), "REVIEW_OUTCOME_"
    )
    return ReviewSubmission(
        case_id=request.case_id,
        reviewer_id=request.reviewer_id,
        round=request.round,
        outcome=outcome,
        label=value_to_json(request.label) if request.HasField("label") else None,
        reason=request.reason,
        rationale=request.rationale,
    )


def revision(request: pb.AmendReviewRequest | pb.WithdrawReviewRequest) -> Revision:
    """An amendment (a new answer) or a withdrawal (none) of the review ``review_id``."""
    if isinstance(request, pb.WithdrawReviewRequest):
        return Revision(request.review_id, None, None, request.reason, withdraw=True)
    return Revision(
        review_id=request.review_id,
        outcome=from_proto_enum(
            Outcome, enum_name(pb.ReviewOutcome, request.outcome), "REVIEW_OUTCOME_"
        ),
        label=value_to_json(request.label) if request.HasField("label") else None,
        reason=request.reason,
        rationale=request.rationale,
    )


def resolve_request(request: pb.ResolveCaseRequest) -> ResolveRequest:
    basis = from_proto_enum(
        Basis, enum_name(gold_pb2.ResolutionBasis, request.basis), "RESOLUTION_BASIS_"
    )
    return ResolveRequest(
        case_id=request.case_id,
        basis=basis,
        label=value_to_json(request.label) if request.HasField("label") else None,
        adjudicator_reviewer_id=request.adjudicator_reviewer_id,
        rationale=request.rationale,
    )


# --- domain -> responses ---------------------------------------------------


def reviewer(value: Reviewer) -> pb.Reviewer:
    return pb.Reviewer(
        reviewer_id=value.reviewer_id,
        kind=to_proto_enum(gold_pb2.ReviewerKind, "REVIEWER_KIND_", value.kind),
        attested_by=value.attested_by,
        register_time=timestamp(value.register_time),
        identity_issuer=value.identity_issuer,
        identity_subject=value.identity_subject,
    )


def case(value: Case, with_verdict: bool = True) -> pb.Case:
    """The operator view; ``with_verdict`` False leaves ``local_verdict`` unset."""
    message = pb.Case(
        case_id=value.case_id,
        tenant=value.tenant,
        subject=value.subject,
        predicate=value.predicate,
        evidence_refs=value.evidence_refs,
        context=value.context,
        lineage=pb.CaseLineage(origin=value.lineage.origin, origin_ref=value.lineage.origin_ref),
        create_time=timestamp(value.create_time),
        expire_time=timestamp(value.expire_time),
        content_digest=value.content_digest,
        content_digest_version=value.content_digest_version,
        required_reviews=value.required_reviews,
        claims=case_claims.claims_out(value.claims),
        spot_check_rate=value.spot_check_rate,
    )
    for candidate in value.candidate_values:
        json_to_value(candidate, message.candidate_values.add())
    if with_verdict:
        json_to_value(value.local_verdict, message.local_verdict)
    return message


def case_detail(value: CaseDetail) -> pb.GetCaseResponse:
    snap = value.snapshot
    return pb.GetCaseResponse(
        case=case(snap.case, with_verdict=value.verdict_shown),
        state=case_state(derive_state(snap)),
        round=snap.round,
        reviews=reviews_of(value.reviews),
        resolutions=[resolution(r) for r in value.resolutions],
        round_agreements=[round_agreement(a) for a in round_agreements(value.reviews)],
    )


def round_agreement(value: RoundAgreement) -> pb.RoundAgreement:
    return pb.RoundAgreement(
        round=value.round,
        review_count=value.review_count,
        agreeing_count=value.agreeing_count,
        agreeing_share=value.agreeing_share,
        pairwise_agreement=value.pairwise_agreement,
    )


def reviews_of(found: Sequence[Review]) -> list[pb.Review]:
    """Review records, each marked ``superseded`` when a later one among them amends or
    withdraws it."""
    superseded = superseded_ids(found)
    return [review(r, r.review_id in superseded) for r in found]


def adjudication_item(value: CaseDetail) -> pb.AdjudicationItem:
    """A worklist entry: the case as ``value`` shows it, its round and that round's reviews."""
    snap = value.snapshot
    return pb.AdjudicationItem(
        case=case(snap.case, with_verdict=value.verdict_shown),
        round=snap.round,
        reviews=[review(r) for r in value.reviews],
    )


def blinded(value: BlindedCase) -> pb.BlindedCase:
    message = pb.BlindedCase(
        case_id=value.case_id,
        subject=value.subject,
        predicate=value.predicate,
        evidence_refs=value.evidence_refs,
        context=value.context,
        round=value.round,
    )
    for candidate in value.candidate_values:
        json_to_value(candidate, message.candidate_values.add())
    return message


def case_state(value: CaseState) -> Any:
    return to_proto_enum(pb.CaseState, "CASE_STATE_", value)


# A message with a ``label`` field (a google.protobuf.Value).
_L = TypeVar("_L", pb.Review, pb.Resolution, gold_pb2.GoldLabelRevision)


def _with_label(message: _L, value: Review | Resolution | GoldLabelRevision) -> _L:
    """``message`` with ``value``'s label: set only for an answer with a label (a non-empty
    ``label_key``); UNRESOLVED and NOT_EVALUABLE leave the field unset."""
    if value.label_key:
        json_to_value(value.label, message.label)
    return message


def review(value: Review, superseded: bool = False) -> pb.Review:
    return _with_label(
        pb.Review(
            review_id=value.review_id,
            case_id=value.case_id,
            reviewer_id=value.reviewer_id,
            round=value.round,
            outcome=to_proto_enum(pb.ReviewOutcome, "REVIEW_OUTCOME_", value.outcome),
            label_key=value.label_key,
            reason=value.reason,
            submit_time=timestamp(value.submit_time),
            rationale=value.rationale,
            supersedes_review_id=value.supersedes,
            superseded=superseded,
        ),
        value,
    )


def resolution(value: Resolution) -> pb.Resolution:
    return _with_label(
        pb.Resolution(
            case_id=value.case_id,
            round=value.round,
            basis=to_proto_enum(gold_pb2.ResolutionBasis, "RESOLUTION_BASIS_", value.basis),
            label_key=value.label_key,
            adjudicator_reviewer_id=value.adjudicator_reviewer_id,
            review_ids=value.review_ids,
            resolve_time=timestamp(value.resolve_time),
            rationale=value.rationale,
        ),
        value,
    )


def gold_label(value: GoldLabelRevision) -> gold_pb2.GoldLabelRevision:
    return _with_label(
        gold_pb2.GoldLabelRevision(
            case_id=value.case_id,
            revision=value.revision,
            previous_revision=value.previous_revision,
            round=value.round,
            tenant=value.tenant,
            basis=to_proto_enum(gold_pb2.ResolutionBasis, "RESOLUTION_BASIS_", value.basis),
            label_key=value.label_key,
            contributing_review_ids=value.contributing_review_ids,
            contributing_reviewer_ids=value.contributing_reviewer_ids,
            adjudicator_reviewer_id=value.adjudicator_reviewer_id,
            provenance=to_proto_enum(
                gold_pb2.LabelingProvenance, "LABELING_PROVENANCE_", value.provenance
            ),
            freeze_time=timestamp(value.freeze_time),
            digest=value.digest,
            digest_version=value.digest_version,
        ),
        value,
    )


def chain_head(value: ChainHead) -> pb.AuditChainHead:
    return pb.AuditChainHead(sequence=value.sequence, hash=value.hash)


def audit_event(value: AuditEvent) -> pb.AuditEvent:
    message = pb.AuditEvent(
        sequence=value.sequence,
        event_type=to_proto_enum(pb.AuditEventType, "AUDIT_EVENT_TYPE_", value.event_type),
        occur_time=timestamp(value.occur_time),
        payload=dict(value.payload),
        previous_hash=value.previous_hash,
        hash=value.hash,
    )
    if value.actor is not None:
        message.actor.CopyFrom(
            pb.AuditActor(issuer=value.actor.issuer, subject=value.actor.subject)
        )
    return message


def verdict(value: ChainVerdict) -> pb.VerifyAuditChainResponse:
    return pb.VerifyAuditChainResponse(
        ok=value.ok,
        events_checked=value.events_checked,
        head=chain_head(value.head),
        first_bad_sequence=value.first_bad_sequence,
        problem=(
            to_proto_enum(pb.AuditProblem, "AUDIT_PROBLEM_", value.problem)
            if value.problem is not None
            else pb.AUDIT_PROBLEM_UNSPECIFIED
        ),
        detail=value.detail,
        bad_record_kind=(
            to_proto_enum(pb.RecordKind, "RECORD_KIND_", value.bad_record_kind)
            if value.bad_record_kind is not None
            else pb.RECORD_KIND_UNSPECIFIED
        ),
        bad_record_id=value.bad_record_id,
    )


def deleted(value: DeletedCounts) -> pb.DeletedCounts:
    return pb.DeletedCounts(cases=value.cases, reviews=value.reviews, resolutions=value.resolutions)


def _reason(
    value: agreement_rules.UndefinedReason | None,
) -> pb.AgreementUndefinedReason.ValueType:
    if value is None:
        return pb.AGREEMENT_UNDEFINED_REASON_UNSPECIFIED
    reason: pb.AgreementUndefinedReason.ValueType = to_proto_enum(
        pb.AgreementUndefinedReason, "AGREEMENT_UNDEFINED_REASON_", value
    )
    return reason


def figure(value: agreement_rules.Figure) -> pb.AgreementFigure:
    """A figure; a number only when finite (never NaN on the wire)."""
    message = pb.AgreementFigure(
        status=to_proto_enum(pb.AgreementStatus, "AGREEMENT_STATUS_", value.status),
        case_count=value.case_count,
        min_cases=value.min_cases,
        undefined_reason=_reason(value.undefined_reason),
        fixture_reviewers_contributed=value.fixture_reviewers_contributed,
    )
    for name in ("value", "ci_lower", "ci_upper"):
        number = getattr(value, name)
        if number is not None and math.isfinite(number):
            setattr(message, name, number)
    return message


def agreement(found: AgreementReport) -> pb.ComputeAgreementResponse:
    value = found.pooled
    message = pb.ComputeAgreementResponse(
        status=to_proto_enum(pb.AgreementStatus, "AGREEMENT_STATUS_", value.status),
        case_count=value.case_count,
        min_cases=value.min_cases,
        fixture_reviewers_contributed=value.fixture_reviewers_contributed,
        category_count=value.category_count,
        undefined_reason=_reason(value.undefined_reason),
        pairs=[
            pb.PairAgreement(
                reviewer_a=p.reviewer_a, reviewer_b=p.reviewer_b, kappa=figure(p.kappa)
            )
            for p in found.pairs
        ],
        categories=[
            pb.CategoryAgreement(category=c.category, kappa=figure(c.kappa))
            for c in found.categories
        ],
        fleiss_kappa=figure(found.fleiss),
        krippendorff_alpha=figure(found.krippendorff),
        percent_agreement=figure(found.percent),
        gwet_ac1=figure(found.gwet_ac1),
        gwet_ac2=figure(found.gwet_ac2),
        reviewers=[
            pb.ReviewerAgreement(reviewer_id=r.reviewer_id, gold_agreement=figure(r.gold_agreement))
            for r in found.reviewers
        ],
    )
    for name in (
        "kappa",
        "standard_error",
        "ci_lower",
        "ci_upper",
        "observed_agreement",
        "expected_agreement",
    ):
        number = getattr(value, name)
        if number is not None and math.isfinite(number):
            setattr(message, name, number)
    return message


def corpus_record(value: ExportRecord, proofs: Mapping[int, list[bytes]]) -> pb.CorpusRecord:
    """The record with what binds each of its fields to the ledger (``openings``): its
    label's GOLD_LABEL_FROZEN event and digested text, its case's CASE_ENQUEUED event and
    shown-field digests, each review's REVIEW_SUBMITTED event and answer opening; every
    event with its inclusion proof (``proofs``, by sequence) in the export's tree."""
    message = pb.CorpusRecord(
        case=blinded(value.case),
        revision=gold_label(value.revision),
        reviews=reviews_of(value.reviews),
        revision_digested=openings.gold_digested(value.revision),
        claims=case_claims.claims_out(value.claims),
        spot_check_rate=value.spot_check_rate,
    )
    if value.event is not None:
        message.inclusion.CopyFrom(
            pb.GoldLabelInclusion(
                event=audit_event(value.event),
                leaf_index=value.event.sequence - 1,
                inclusion_path=proofs[value.event.sequence],
            )
        )
    if value.case_event is not None:
        binding = message.case_binding
        binding.enqueued.CopyFrom(event_inclusion(value.case_event, proofs))
        if "shown" in value.case_event.payload:
            binding.field_digests.update(openings.shown_field_digests(value.case))
    if value.resolution is not None and value.resolution_event is not None:
        message.rationale = value.resolution.rationale
        message.resolved.CopyFrom(event_inclusion(value.resolution_event, proofs))
    for found, event in zip(value.reviews, value.review_events, strict=True):
        message.review_bindings.add(
            review_id=found.review_id,
            answer_opening=reviews.answer_opening(found),
            submitted=event_inclusion(event, proofs),
        )
    return message


def event_inclusion(event: AuditEvent, proofs: Mapping[int, list[bytes]]) -> pb.EventInclusion:
    """``event`` with its inclusion proof (``proofs``, by sequence)."""
    return pb.EventInclusion(
        event=audit_event(event),
        leaf_index=event.sequence - 1,
        inclusion_path=proofs[event.sequence],
    )


def exclusion(value: ExportExclusion) -> pb.ExportExclusion:
    return pb.ExportExclusion(
        case_id=value.case_id,
        revision=value.revision,
        reason=pb.ExportExclusionReason.Value("EXPORT_EXCLUSION_REASON_" + value.reason),
    )


def manifest(
    tally: ExportTally, head: ChainHead, started: datetime, tenant: str
) -> pb.ExportManifest:
    return pb.ExportManifest(
        record_count=tally.record_count,
        human_adjudicated_count=tally.human_adjudicated_count,
        synthetic_count=tally.synthetic_count,
        contains_synthetic_labels=tally.contains_synthetic_labels,
        exclusions=[exclusion(e) for e in tally.exclusions],
        audit_chain_head=chain_head(head),
        export_time=timestamp(started),
        tenant=tenant,
    )
