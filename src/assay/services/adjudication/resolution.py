"""Closing a review round on an explicit basis — and never by majority vote.

The bases are: unanimous agreement of two or more reviewers; a decision by an
adjudicator who is not one of the round's (disagreeing) reviewers; or an
explicit UNRESOLVED / NOT_EVALUABLE, which carries no label and is never
collapsed into one. "Most reviewers said X" is not a basis: a split round
needs an adjudicator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assay.errors import FailedPrecondition, Reason, invalid_field
from assay.services.adjudication import cases
from assay.services.adjudication.canonical import same_label_key
from assay.services.adjudication.fields import bad, require_id
from assay.services.adjudication.model import (
    Basis,
    CaseSnapshot,
    JsonValue,
    Outcome,
    Resolution,
)
from assay.services.adjudication.reviewers import check_reviewer_id
from assay.services.adjudication.state import unanimous

_OUTCOME_FOR_BASIS = {
    Basis.UNRESOLVED: Outcome.UNRESOLVED,
    Basis.NOT_EVALUABLE: Outcome.NOT_EVALUABLE,
}


@dataclass(frozen=True)
class ResolveRequest:
    case_id: str
    basis: Basis | None
    label: JsonValue
    adjudicator_reviewer_id: str


def validate_resolve(req: ResolveRequest) -> None:
    """Field rules that need no stored data."""
    require_id(req.case_id, "case_id")
    if req.basis is None:
        raise bad(
            "basis",
            "must be UNANIMOUS_AGREEMENT, ADJUDICATOR_DECISION, UNRESOLVED or NOT_EVALUABLE",
        )
    if req.basis is Basis.ADJUDICATOR_DECISION:
        if req.label is None:
            raise bad("label", "is required for ADJUDICATOR_DECISION")
        check_reviewer_id(req.adjudicator_reviewer_id, "adjudicator_reviewer_id")
        return
    if req.label is not None:
        raise bad("label", f"must be unset for {req.basis.value}")
    if req.basis is Basis.UNANIMOUS_AGREEMENT:
        if req.adjudicator_reviewer_id:
            raise bad("adjudicator_reviewer_id", "must be empty for UNANIMOUS_AGREEMENT")
    elif req.adjudicator_reviewer_id:
        check_reviewer_id(req.adjudicator_reviewer_id, "adjudicator_reviewer_id")


def _fail(reason: Reason, message: str) -> FailedPrecondition:
    return FailedPrecondition(reason, message)


def decide(snapshot: CaseSnapshot, req: ResolveRequest, now: datetime) -> Resolution:
    """The resolution of the current round, or the rule it would break."""
    assert req.basis is not None
    case = snapshot.case
    reviews = snapshot.round_reviews
    where = f"round {snapshot.round} of case {case.case_id}"
    if cases.is_expired(case, now):
        raise _fail(Reason.CASE_EXPIRED, f"case {case.case_id} has expired")
    if snapshot.round_resolution is not None:
        raise _fail(Reason.ROUND_ALREADY_RESOLVED, f"{where} is resolved already")
    if len(reviews) < 2:
        raise _fail(
            Reason.NOT_ENOUGH_REVIEWS, f"{where} has {len(reviews)} review(s); 2 are needed"
        )
    agreed = unanimous(reviews)
    reviewer_ids = {r.reviewer_id for r in reviews}
    adjudicator = req.adjudicator_reviewer_id
    label: JsonValue = None
    label_key = ""
    if req.basis is Basis.UNANIMOUS_AGREEMENT:
        if not agreed or reviews[0].outcome is not Outcome.LABEL:
            raise _fail(
                Reason.REVIEWS_NOT_UNANIMOUS,
                f"the reviews of {where} do not all give the same label",
            )
        # In JCS form even when the reviews were stored before JCS (``1e-07``).
        label, label_key = reviews[0].label, same_label_key(reviews[0].label_key)
    else:
        wanted = _OUTCOME_FOR_BASIS.get(req.basis)
        if not adjudicator:
            # Only UNRESOLVED / NOT_EVALUABLE get here: every reviewer must have said so.
            if not agreed or reviews[0].outcome is not wanted:
                raise _fail(
                    Reason.REVIEWS_NOT_UNANIMOUS,
                    f"not every review of {where} is {req.basis.value}; an adjudicator must decide",
                )
        else:
            if agreed:
                raise _fail(
                    Reason.REVIEWS_NOT_DISAGREEING,
                    f"the reviews of {where} agree; an adjudicator may not overrule them",
                )
            if adjudicator in reviewer_ids:
                raise _fail(
                    Reason.ADJUDICATOR_IS_REVIEWER,
                    f"{adjudicator} reviewed {where} and cannot adjudicate it",
                )
            if req.basis is Basis.ADJUDICATOR_DECISION:
                key = cases.candidate_key(case, req.label)
                if key is None:
                    raise invalid_field(
                        Reason.LABEL_NOT_A_CANDIDATE,
                        "label",
                        "is not one of the case's candidate values",
                    )
                label, label_key = req.label, key
    return Resolution(
        case_id=case.case_id,
        round=snapshot.round,
        basis=req.basis,
        label=label,
        label_key=label_key,
        adjudicator_reviewer_id=adjudicator,
        review_ids=tuple(sorted(r.review_id for r in reviews)),
        resolve_time=now,
    )
