"""Each record of an exported corpus proven against the export's signed checkpoint, offline.

Beside every field a consumer reads, a record carries what binds it to the ledger: its
label's GOLD_LABEL_FROZEN, its case's CASE_ENQUEUED and (``--reviews``) each review's
REVIEW_SUBMITTED event, each with its RFC 6962 inclusion proof under the manifest's
checkpoint, and the openings of the digests those events hold. An auditor holding only the
ledger's public key proves each event (``export_events``), each opening against its event's
digest, and each field against its opening (``export_bindings``): an edited field fails,
naming the record and the field.

What cannot be proven is said (``Unproven``). Binding material this export lacks (exported
before records were bound, or stripped) is refused unless the auditor accepts it; a field the
ledger never committed to (an event older than ``shown`` or ``submit_time``) is reported, not
refused. A revision without ``revisionDigested`` is still proven whole, only the edited field
goes unnamed. The rules are the pure domain modules': the server's algorithm, not a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from google.protobuf.timestamp_pb2 import Timestamp

from assay.cli.export_bindings import (
    CASE_NAMES,
    camel,
    check_answer,
    check_case,
    check_label,
    check_revision,
    evidence_digests,
    gold_fields,
    shown_digests,
)
from assay.cli.export_events import BadRecord, proven_payload
from assay.errors import DataLoss
from assay.services.adjudication.domain import gold, openings
from assay.services.adjudication.domain.digests import text_digest
from assay.services.adjudication.domain.times import to_micros
from assay.tlog.checkpoint import Checkpoint
from assay.v1 import adjudication_service_pb2 as pb

__all__ = ["BadRecord", "Unproven", "check_record"]

# What a case binding proves beyond ``case.caseId``, which the label's event proves anyway.
SHOWN_PATHS = tuple(f"case.{CASE_NAMES[name]}" for name in openings.SHOWN_FIELDS[1:])


@dataclass(frozen=True)
class Unproven:
    """Fields of a record that could not be proven, and why. ``missing``: the record lacks
    binding material an export carries (refused unless accepted); otherwise the ledger holds
    no commitment to them (reported)."""

    fields: tuple[str, ...]
    why: str
    missing: bool


def check_record(record: pb.CorpusRecord, signed: Checkpoint) -> list[Unproven]:
    """What of ``record`` could not be proven; ``BadRecord`` naming the field at the first
    check that fails."""
    _check_label(record, signed)
    gaps: list[Unproven] = []
    _check_case(record, signed, gaps)
    _check_reviews(record, signed, gaps)
    _check_rationale(record, signed)
    check_contributors(record)
    return gaps


def _check_rationale(record: pb.CorpusRecord, signed: Checkpoint) -> None:
    """The rationale against the CASE_RESOLVED event of the round the label froze, which
    commits to its digest (a record without the event may carry no rationale)."""
    if not record.HasField("resolved"):
        if record.rationale:
            raise BadRecord("rationale", "is set, but no CASE_RESOLVED event proves it")
        return
    revision = record.revision
    expected = text_digest(record.rationale) if record.rationale else ""
    claims = {"case_id": revision.case_id, "round": str(revision.round), "rationale": expected}
    resolved = record.resolved
    payload = proven_payload(
        "resolved",
        resolved.event,
        resolved.leaf_index,
        resolved.inclusion_path,
        signed,
        pb.AUDIT_EVENT_TYPE_CASE_RESOLVED,
        claims,
    )
    for key in ("case_id", "round"):
        if payload.get(key) != claims[key]:
            raise BadRecord(f"resolved.event.payload.{key}", "resolves another round")
    if payload.get("rationale", "") != expected:
        raise BadRecord("rationale", "is not what the ledger recorded")


def _check_label(record: pb.CorpusRecord, signed: Checkpoint) -> None:
    revision = record.revision
    if not record.HasField("inclusion"):
        raise BadRecord("inclusion", "is missing: nothing binds the label to the ledger")
    inclusion = record.inclusion
    claims = {
        "case_id": revision.case_id,
        "revision": str(revision.revision),
        "digest": revision.digest,
        "provenance": gold_fields(revision)["provenance"],
    }
    payload = proven_payload(
        "inclusion",
        inclusion.event,
        inclusion.leaf_index,
        inclusion.inclusion_path,
        signed,
        pb.AUDIT_EVENT_TYPE_GOLD_LABEL_FROZEN,
        claims,
    )
    for key, value in claims.items():
        if payload.get(key) != value:
            raise BadRecord(
                f"revision.{camel(key)}",
                f"is not what its GOLD_LABEL_FROZEN event recorded ({payload.get(key)!r})",
            )
    if record.revision_digested:
        check_revision(record)
        return
    # An export made before revisions carried their digested text: the digest still proves
    # every field, but cannot say which one an edit changed.
    try:
        gold.checked_revision(gold_fields(revision), revision.digest)
    except DataLoss:
        raise BadRecord(
            "revision",
            "one of its digested fields was altered (this export carries no revisionDigested "
            "to name which)",
        ) from None
    except ValueError as error:
        raise BadRecord("revision", f"is unreadable: {error}") from None
    check_label("revision", revision.HasField("label"), revision.label, revision.label_key)


def _check_case(record: pb.CorpusRecord, signed: Checkpoint, gaps: list[Unproven]) -> None:
    case, revision = record.case, record.revision
    if case.case_id != revision.case_id:
        raise BadRecord("case.caseId", f"is {case.case_id!r}, its label's {revision.case_id!r}")
    if case.round != revision.round:
        raise BadRecord("case.round", f"is {case.round}; its label closes round {revision.round}")
    if not record.HasField("case_binding"):
        why = "the record carries no caseBinding (exported before cases were bound, or removed)"
        gaps.append(Unproven(SHOWN_PATHS, why, missing=True))
        return
    enqueued = record.case_binding.enqueued
    where = "caseBinding.enqueued"
    recorded = {"case_id": revision.case_id, "tenant": revision.tenant}
    evidence = evidence_digests(record)
    claims = {**recorded, "shown": openings.shown_digest(shown_digests(case)), **evidence}
    payload = proven_payload(
        where,
        enqueued.event,
        enqueued.leaf_index,
        enqueued.inclusion_path,
        signed,
        pb.AUDIT_EVENT_TYPE_CASE_ENQUEUED,
        claims,
    )
    if any(payload.get(key) != value for key, value in recorded.items()):
        raise BadRecord(
            f"{where}.event",
            f"is the CASE_ENQUEUED event of case {payload.get('case_id')!r} of tenant "
            f"{payload.get('tenant')!r}, not of this record's",
        )
    for key, path in (("claims", "claims"), ("spot_check_rate", "spotCheckRate")):
        if payload.get(key, "") != evidence.get(key, ""):
            raise BadRecord(path, "is not what the case's CASE_ENQUEUED event recorded")
    shown = payload.get("shown")
    if shown is None:
        why = "its case was enqueued before the ledger recorded what a case shows"
        gaps.append(Unproven(SHOWN_PATHS, why, missing=False))
        return
    check_case(case, record.case_binding, shown)


def _micros(stamp: Timestamp) -> str:
    """A Timestamp as the ledger spells it (microseconds); "" when finer than that."""
    if stamp.nanos % 1000:
        return ""
    return str(to_micros(stamp.ToDatetime(tzinfo=UTC)))


def _check_reviews(record: pb.CorpusRecord, signed: Checkpoint, gaps: list[Unproven]) -> None:
    reviews, bindings = record.reviews, record.review_bindings
    seen: set[str] = set()
    for i, found in enumerate(reviews):
        if found.review_id in seen:
            raise BadRecord(f"reviews[{i}].reviewId", f"repeats review {found.review_id}")
        seen.add(found.review_id)
    if not bindings:
        if reviews:
            why = (
                "the record carries no reviewBindings (exported before reviews were bound, "
                "or removed)"
            )
            gaps.append(Unproven(("reviews",), why, missing=True))
        return
    if len(bindings) != len(reviews):
        raise BadRecord(
            "reviewBindings", f"binds {len(bindings)} review(s); the record has {len(reviews)}"
        )
    for i, (review, binding) in enumerate(zip(reviews, bindings, strict=True)):
        _check_review(record, i, review, binding, signed, gaps)


def _check_review(
    record: pb.CorpusRecord,
    i: int,
    review: pb.Review,
    binding: pb.ReviewBinding,
    signed: Checkpoint,
    gaps: list[Unproven],
) -> None:
    where, at = f"reviews[{i}]", f"reviewBindings[{i}]"
    claims = {
        "review_id": review.review_id,
        "case_id": review.case_id,
        "reviewer_id": review.reviewer_id,
        "round": str(review.round),
        "submit_time": _micros(review.submit_time),
        "answer": text_digest(binding.answer_opening),
        "supersedes": review.supersedes_review_id,
    }
    submitted = binding.submitted
    payload = proven_payload(
        f"{at}.submitted",
        submitted.event,
        submitted.leaf_index,
        submitted.inclusion_path,
        signed,
        pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED,
        claims,
    )
    if payload.get("case_id") != record.revision.case_id:
        raise BadRecord(
            f"{at}.submitted.event",
            f"is a review of case {payload.get('case_id')!r}, not of this record's",
        )
    for key in ("review_id", "case_id", "reviewer_id", "round"):
        if payload.get(key) != claims[key]:
            raise BadRecord(
                f"{where}.{camel(key)}", f"is not what the ledger recorded ({payload.get(key)!r})"
            )
    if payload.get("supersedes", "") != review.supersedes_review_id:
        raise BadRecord(f"{where}.supersedesReviewId", "is not what the ledger recorded")
    if binding.review_id != review.review_id:
        raise BadRecord(f"{at}.reviewId", f"is {binding.review_id!r}, not {where}'s review")
    if "submit_time" not in payload:
        why = "its REVIEW_SUBMITTED event was written before submit times were recorded"
        gaps.append(Unproven((f"{where}.submitTime",), why, missing=False))
    elif payload["submit_time"] != claims["submit_time"]:
        raise BadRecord(f"{where}.submitTime", "is not what the ledger recorded")
    check_answer(
        where, review, f"{at}.answerOpening", binding.answer_opening, payload.get("answer", "")
    )


def check_contributors(record: pb.CorpusRecord) -> None:
    """``BadRecord`` unless the record's reviews (if any) fit its (proven) label: of its
    case, in round order, holding every review the label names as contributing, in the
    label's round, by a reviewer it names."""
    if not record.reviews:
        return
    revision = record.revision
    superseded = {r.supersedes_review_id for r in record.reviews if r.supersedes_review_id}
    for i, review in enumerate(record.reviews):
        if review.case_id != revision.case_id:
            raise BadRecord(f"reviews[{i}].caseId", "is another case's")
        if review.superseded != (review.review_id in superseded):
            raise BadRecord(
                f"reviews[{i}].superseded", "disagrees with the reviews that supersede it"
            )
    rounds = [r.round for r in record.reviews]
    if rounds != sorted(rounds):
        raise BadRecord("reviews", "are not in round order")
    given = {r.review_id: r for r in record.reviews}
    for review_id in revision.contributing_review_ids:
        found = given.get(review_id)
        if found is None:
            raise BadRecord("reviews", f"its label names review {review_id}, not among them")
        if found.round != revision.round or found.reviewer_id not in set(
            revision.contributing_reviewer_ids
        ):
            raise BadRecord(
                "reviews",
                f"hold review {review_id}, not of round {revision.round} by a reviewer its label "
                "names",
            )
