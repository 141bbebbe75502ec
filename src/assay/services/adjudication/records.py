"""What the ledger committed to for each stored record, recomputed from the record.

Each function gives the payload fields the record's ledger event must hold (a
reviewer's REVIEWER_REGISTERED, a case's CASE_ENQUEUED, a review's
REVIEW_SUBMITTED, a resolution's CASE_RESOLVED), so a row edited in the file —
a review's label, a resolution's basis, a reviewer's kind — disagrees with the
event written when it was stored. A payload field missing from an event counts
as "" (a reviewer registered without an identity binding records none).
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.services.adjudication import cases, reviews
from assay.services.adjudication.canonical import digest
from assay.services.adjudication.model import Case, RecordKind, Resolution, Review, Reviewer

Commitment = dict[str, str]

EVENT_KEYS = {
    "REVIEWER_REGISTERED": (RecordKind.REVIEWER, ("reviewer_id",)),
    "CASE_ENQUEUED": (RecordKind.CASE, ("case_id",)),
    "REVIEW_SUBMITTED": (RecordKind.REVIEW, ("review_id",)),
    "CASE_RESOLVED": (RecordKind.RESOLUTION, ("case_id", "round")),
}


def record_key(event_type: str, payload: Mapping[str, str]) -> tuple[RecordKind, str] | None:
    """The record an event commits to, or None for events about no single record."""
    found = EVENT_KEYS.get(event_type)
    if found is None:
        return None
    kind, names = found
    return kind, "#".join(str(payload.get(name, "")) for name in names)


def reviewer_commitment(value: Reviewer) -> Commitment:
    return {
        "reviewer_id": value.reviewer_id,
        "kind": value.kind.value,
        "identity_issuer": value.identity_issuer,
        "identity_subject": value.identity_subject,
    }


def case_commitment(value: Case) -> Commitment | None:
    """None when the row's content no longer has its stored digest."""
    if cases.case_digest(value) != value.content_digest:
        return None
    return {"case_id": value.case_id, "tenant": value.tenant, "content": value.content_digest}


def review_commitment(value: Review) -> Commitment:
    return {
        "review_id": value.review_id,
        "case_id": value.case_id,
        "reviewer_id": value.reviewer_id,
        "round": str(value.round),
        "answer": reviews.answer_commitment(value),
    }


def resolution_commitment(value: Resolution) -> Commitment:
    return {
        "case_id": value.case_id,
        "round": str(value.round),
        "basis": value.basis.value,
        "label": digest(value.label_key) if value.label_key else "",
        "adjudicator_reviewer_id": value.adjudicator_reviewer_id,
        "review_ids": ",".join(value.review_ids),
    }


def resolution_id(value: Resolution) -> str:
    return f"{value.case_id}#{value.round}"


def disagreement(expected: Commitment | None, recorded: Mapping[str, str]) -> str:
    """ "" when ``recorded`` holds every field of ``expected``, else what differs."""
    if expected is None:
        return "its content does not match its stored digest"
    wrong = sorted(k for k, v in expected.items() if str(recorded.get(k, "")) != v)
    return f"{', '.join(wrong)} differ(s) from the ledger" if wrong else ""
