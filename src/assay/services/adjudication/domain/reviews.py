"""The rules for accepting a review.

One review per reviewer per case per round (also a UNIQUE constraint in SQL),
and two per round: a round with both refuses a third (ROUND_COMPLETE), so no
late review can turn an agreed round into a disagreed one. The rule runs in
the writer's job against the case as stored (on PostgreSQL under the chain
lock every replica's writes take), so two racing reviews cannot both pass it.
A review belongs to the case's current round, which a FROZEN case only leaves
when the reviewer names the new round explicitly — so a late submission made
against a view of the old round can never silently reopen a frozen case.
Unresolved and not-evaluable are outcomes of their own, never a label.

The audit ledger commits to each answer without revealing it: the commitment
is a digest over a per-review random salt (kept in the review row, never
served) and the answer, so hashing each candidate value cannot recover a label
from the ledger, and two equal answers give unequal commitments. Anyone with
the review rows can still recompute it (``answer_commitment``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from assay.errors import AlreadyExists, FailedPrecondition, Reason, Violations
from assay.services.adjudication.domain import cases
from assay.services.adjudication.domain.digests import canonical_json, digest
from assay.services.adjudication.domain.fields import bounded_text, require_id
from assay.services.adjudication.domain.model import (
    CaseSnapshot,
    CaseState,
    JsonValue,
    Outcome,
    Review,
)
from assay.services.adjudication.domain.reviewers import check_reviewer_id
from assay.services.adjudication.domain.state import REVIEWS_PER_ROUND, derive_state, round_complete

MAX_REASON = 1024
SALT_BYTES = 16


@dataclass(frozen=True)
class ReviewSubmission:
    case_id: str
    reviewer_id: str
    round: int  # 0: the current round
    outcome: Outcome | None
    label: JsonValue
    reason: str


def validate_submission(sub: ReviewSubmission, found: Violations | None = None) -> None:
    """Field rules that need no stored data: every violation recorded in ``found``, or,
    without one, raised together."""
    into = Violations() if found is None else found
    into.check(require_id, sub.case_id, "case_id")
    into.check(check_reviewer_id, sub.reviewer_id, "reviewer_id")
    if sub.round < 0:
        into.add("round", "must be 0 (the current round) or a round number >= 1")
    if sub.outcome is None:
        into.add("outcome", "must be LABEL, UNRESOLVED or NOT_EVALUABLE")
    elif sub.outcome is Outcome.LABEL:
        if sub.label is None:
            into.add("label", "is required when the outcome is LABEL")
        if sub.reason:
            into.add("reason", "must be empty when the outcome is LABEL")
    else:
        if sub.label is not None:
            into.add("label", f"must be unset when the outcome is {sub.outcome.value}")
        if not sub.reason.strip():
            into.add("reason", f"is required when the outcome is {sub.outcome.value}")
        else:
            into.check(bounded_text, sub.reason, "reason", MAX_REASON)
    if found is None:
        into.raise_if_any()


def check_submission(snapshot: CaseSnapshot, sub: ReviewSubmission, now: datetime) -> str:
    """Rules against the stored case; returns the label key ("" without a label)."""
    case = snapshot.case
    if cases.is_expired(case, now):
        raise FailedPrecondition(Reason.CASE_EXPIRED, f"case {case.case_id} has expired")
    state = derive_state(snapshot)
    current = snapshot.round
    if state is CaseState.FROZEN and sub.round == 0:
        raise FailedPrecondition(
            Reason.CASE_FROZEN,
            f"case {case.case_id} is frozen; to review it again, set round to {current}",
            metadata={"current_round": str(current)},
        )
    if sub.round and sub.round != current:
        raise FailedPrecondition(
            Reason.ROUND_MISMATCH,
            f"round {sub.round} is not case {case.case_id}'s current round {current}",
            metadata={"current_round": str(current)},
        )
    if snapshot.round_resolution is not None:
        raise FailedPrecondition(
            Reason.ROUND_ALREADY_RESOLVED,
            f"round {current} of case {case.case_id} is resolved; freeze it first",
        )
    if any(r.reviewer_id == sub.reviewer_id for r in snapshot.round_reviews):
        raise AlreadyExists(
            Reason.REVIEW_ALREADY_SUBMITTED,
            f"{sub.reviewer_id} already reviewed case {case.case_id} in round {current}",
        )
    if round_complete(snapshot):
        raise FailedPrecondition(
            Reason.ROUND_COMPLETE,
            f"round {current} of case {case.case_id} has its {REVIEWS_PER_ROUND} reviews "
            "and waits for a resolution",
            metadata={"current_round": str(current)},
        )
    if sub.outcome is not Outcome.LABEL:
        return ""
    key = cases.candidate_key(case, sub.label)
    if key is None:
        raise cases.not_a_candidate(case)
    return key


def new_salt() -> str:
    return secrets.token_bytes(SALT_BYTES).hex()


def answer_commitment(review: Review) -> str:
    """The REVIEW_SUBMITTED event's ``answer``: digest of [salt, outcome, label key, reason].
    A review stored before salting (empty salt) was committed to without one."""
    return digest(_answer(review))


def answer_opening(review: Review) -> str:
    """The text ``answer_commitment`` is the SHA-256 of (what an export carries, beside the
    answer it reveals anyway, so the answer can be checked offline)."""
    return canonical_json(_answer(review))


def _answer(review: Review) -> list[str]:
    answer = [review.outcome.value, review.label_key, review.reason]
    return [review.salt, *answer] if review.salt else answer


def new_review(
    review_id: str,
    snapshot: CaseSnapshot,
    sub: ReviewSubmission,
    label_key: str,
    now: datetime,
    salt: str | None = None,
) -> Review:
    """The review to store; ``salt``: a fresh random one unless given."""
    assert sub.outcome is not None
    return Review(
        review_id=review_id,
        case_id=snapshot.case.case_id,
        reviewer_id=sub.reviewer_id,
        round=snapshot.round,
        outcome=sub.outcome,
        label=sub.label if sub.outcome is Outcome.LABEL else None,
        label_key=label_key,
        reason=sub.reason if sub.outcome is not Outcome.LABEL else "",
        submit_time=now,
        salt=new_salt() if salt is None else salt,
    )
