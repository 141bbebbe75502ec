"""The rules for accepting a review.

One review per reviewer per case per round (a UNIQUE index in SQL on first submissions), and
as many per round as the case requires: a full round refuses more (ROUND_COMPLETE), so no
late review can turn an agreed round into a disagreed one. Until the round is resolved a
reviewer may amend or withdraw their latest review: each revision is a new record that
supersedes the one before (never an edit), and only the latest counts. The rule runs in the
writer's job against the case as stored (on PostgreSQL under every replica's chain lock), so
two racing reviews cannot both pass it. A FROZEN case leaves its round only when the reviewer
names the new round explicitly, so a late submission against the old round's view can never
silently reopen it. Unresolved and not-evaluable are outcomes of their own, never a label.

The ledger commits to each answer without revealing it (``answer_commitment``): a digest over
a per-review random salt (in the review row, never served) and the answer, so hashing candidate
values cannot recover a label and equal answers give unequal commitments; the rows recompute it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from assay.errors import AlreadyExists, FailedPrecondition, NotFound, Reason, Violations
from assay.services.adjudication.domain import cases
from assay.services.adjudication.domain.digests import canonical_json, digest
from assay.services.adjudication.domain.fields import bounded_text, note_text, require_id
from assay.services.adjudication.domain.model import (
    CaseSnapshot,
    CaseState,
    JsonValue,
    Outcome,
    Review,
)
from assay.services.adjudication.domain.reviewers import check_reviewer_id
from assay.services.adjudication.domain.state import derive_state, round_complete

MAX_REASON = 1024
MAX_RATIONALE = 2000
SALT_BYTES = 16
_ANSWERS = (Outcome.LABEL, Outcome.UNRESOLVED, Outcome.NOT_EVALUABLE)


@dataclass(frozen=True)
class ReviewSubmission:
    case_id: str
    reviewer_id: str
    round: int  # 0: the current round
    outcome: Outcome | None
    label: JsonValue
    reason: str
    rationale: str = ""


@dataclass(frozen=True)
class Revision:
    """An amendment (a new answer) or, with ``withdraw``, a withdrawal of ``review_id``."""

    review_id: str
    outcome: Outcome | None
    label: JsonValue
    reason: str
    rationale: str = ""
    withdraw: bool = False


def validate_submission(sub: ReviewSubmission, found: Violations | None = None) -> None:
    """Field rules that need no stored data: every violation recorded in ``found``, or,
    without one, raised together."""
    into = Violations() if found is None else found
    into.check(require_id, sub.case_id, "case_id")
    into.check(check_reviewer_id, sub.reviewer_id, "reviewer_id")
    if sub.round < 0:
        into.add("round", "must be 0 (the current round) or a round number >= 1")
    _validate_answer(sub.outcome, sub.label, sub.reason, sub.rationale, into)
    if found is None:
        into.raise_if_any()


def validate_revision(rev: Revision, found: Violations | None = None) -> None:
    """An amendment's or a withdrawal's field rules, as ``validate_submission``'s."""
    into = Violations() if found is None else found
    into.check(require_id, rev.review_id, "review_id")
    if rev.withdraw:
        into.check(bounded_text, rev.reason, "reason", MAX_REASON)
    else:
        _validate_answer(rev.outcome, rev.label, rev.reason, rev.rationale, into)
    if found is None:
        into.raise_if_any()


def _validate_answer(
    outcome: Outcome | None, label: JsonValue, reason: str, rationale: str, into: Violations
) -> None:
    into.check(note_text, rationale, "rationale", MAX_RATIONALE)
    if outcome not in _ANSWERS:
        into.add("outcome", "must be LABEL, UNRESOLVED or NOT_EVALUABLE")
    elif outcome is Outcome.LABEL:
        if label is None:
            into.add("label", "is required when the outcome is LABEL")
        if reason:
            into.add("reason", "must be empty when the outcome is LABEL")
    else:
        if label is not None:
            into.add("label", f"must be unset when the outcome is {outcome.value}")
        if not reason.strip():
            into.add("reason", f"is required when the outcome is {outcome.value}")
        else:
            into.check(bounded_text, reason, "reason", MAX_REASON)


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
            f"round {current} of case {case.case_id} has its {case.required_reviews} reviews "
            "and waits for a resolution",
            metadata={"current_round": str(current)},
        )
    return _label_key(snapshot, sub.outcome, sub.label)


def _label_key(snapshot: CaseSnapshot, outcome: Outcome | None, label: JsonValue) -> str:
    if outcome is not Outcome.LABEL:
        return ""
    key = cases.candidate_key(snapshot.case, label)
    if key is None:
        raise cases.not_a_candidate(snapshot.case)
    return key


def check_revision(snapshot: CaseSnapshot, target: Review, rev: Revision, now: datetime) -> str:
    """Rules for amending or withdrawing ``target`` (a record of ``snapshot``'s case): its
    round must be the undecided current one and it the reviewer's latest record, not a
    withdrawal. Returns the new answer's label key ("" without a label)."""
    case = snapshot.case
    if cases.is_expired(case, now):
        raise FailedPrecondition(Reason.CASE_EXPIRED, f"case {case.case_id} has expired")
    if target.round != snapshot.round or snapshot.round_resolution is not None:
        raise FailedPrecondition(
            Reason.ROUND_ALREADY_RESOLVED,
            f"round {target.round} of case {case.case_id} is decided; its reviews no longer change",
        )
    latest = snapshot.latest_of(target.reviewer_id)
    if latest is None or latest.review_id != target.review_id:
        newer = latest.review_id if latest is not None else ""
        raise FailedPrecondition(
            Reason.REVIEW_SUPERSEDED,
            f"review {target.review_id} was revised since; revise {newer or 'the latest'}",
            metadata={"latest_review_id": newer},
        )
    if target.outcome is Outcome.WITHDRAWN:
        raise FailedPrecondition(
            Reason.REVIEW_WITHDRAWN,
            f"review {target.review_id} is a withdrawal; submit a new review instead",
        )
    if rev.withdraw:
        return ""
    return _label_key(snapshot, rev.outcome, rev.label)


def revised_review(
    review_id: str, target: Review, rev: Revision, label_key: str, now: datetime
) -> Review:
    """The record that supersedes ``target``: the new answer, or a withdrawal."""
    outcome = Outcome.WITHDRAWN if rev.withdraw else rev.outcome
    assert outcome is not None
    return Review(
        review_id=review_id,
        case_id=target.case_id,
        reviewer_id=target.reviewer_id,
        round=target.round,
        outcome=outcome,
        label=rev.label if outcome is Outcome.LABEL else None,
        label_key=label_key,
        reason="" if outcome is Outcome.LABEL else rev.reason,
        submit_time=now,
        salt=new_salt(),
        rationale="" if rev.withdraw else rev.rationale,
        supersedes=target.review_id,
    )


def new_salt() -> str:
    return secrets.token_bytes(SALT_BYTES).hex()


def answer_commitment(review: Review) -> str:
    """The REVIEW_SUBMITTED event's ``answer``: digest of [salt, outcome, label key, reason],
    with the rationale appended when there is one. A review stored before salting (empty
    salt) was committed to without one."""
    return digest(_answer(review))


def answer_opening(review: Review) -> str:
    """The text ``answer_commitment`` is the SHA-256 of (what an export carries, beside the
    answer it reveals anyway, so the answer can be checked offline)."""
    return canonical_json(_answer(review))


def _answer(review: Review) -> list[str]:
    answer = [review.outcome.value, review.label_key, review.reason]
    if review.rationale:
        answer.append(review.rationale)
    return [review.salt, *answer] if review.salt else answer


def new_review(
    review_id: str,
    snapshot: CaseSnapshot,
    sub: ReviewSubmission,
    label_key: str,
    now: datetime,
    salt: str | None = None,
) -> Review:
    """The review to store; ``salt``: a fresh random one unless given. After a withdrawal
    by the same reviewer in the round, it supersedes the withdrawal."""
    assert sub.outcome is not None
    before = snapshot.latest_of(sub.reviewer_id)
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
        rationale=sub.rationale,
        supersedes=before.review_id if before is not None else "",
    )


def review_not_found(review_id: str) -> NotFound:
    """The one answer for a review that does not exist and for one in a tenant not granted."""
    return NotFound(
        Reason.REVIEW_NOT_FOUND, f"no review {review_id}", metadata={"review_id": review_id}
    )
