"""Closing a review round on an explicit basis — and never by majority vote.

The bases are: unanimous agreement of all the reviewers the case requires; a decision by an
adjudicator who is not one of the round's (disagreeing) reviewers; or an
explicit UNRESOLVED / NOT_EVALUABLE, which carries no label and is never
collapsed into one. "Most reviewers said X" is not a basis: a split round
needs an adjudicator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assay.errors import FailedPrecondition, Reason, Violations
from assay.services.adjudication.domain import cases
from assay.services.adjudication.domain.digests import same_label_key
from assay.services.adjudication.domain.fields import note_text, require_id
from assay.services.adjudication.domain.model import (
    Basis,
    CaseSnapshot,
    JsonValue,
    Outcome,
    Resolution,
)
from assay.services.adjudication.domain.reviewers import check_reviewer_id
from assay.services.adjudication.domain.reviews import MAX_RATIONALE
from assay.services.adjudication.domain.state import unanimous

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
    rationale: str = ""


def validate_resolve(req: ResolveRequest, found: Violations | None = None) -> None:
    """Field rules that need no stored data: every violation recorded in ``found``, or,
    without one, raised together."""
    into = Violations() if found is None else found
    into.check(require_id, req.case_id, "case_id")
    into.check(note_text, req.rationale, "rationale", MAX_RATIONALE)
    adjudicator = req.adjudicator_reviewer_id
    if req.basis is None:
        into.add(
            "basis",
            "must be UNANIMOUS_AGREEMENT, ADJUDICATOR_DECISION, UNRESOLVED or NOT_EVALUABLE",
        )
    elif req.basis is Basis.ADJUDICATOR_DECISION:
        if req.label is None:
            into.add("label", "is required for ADJUDICATOR_DECISION")
        into.check(check_reviewer_id, adjudicator, "adjudicator_reviewer_id")
    else:
        if req.label is not None:
            into.add("label", f"must be unset for {req.basis.value}")
        if req.basis is Basis.UNANIMOUS_AGREEMENT:
            if adjudicator:
                into.add("adjudicator_reviewer_id", "must be empty for UNANIMOUS_AGREEMENT")
        elif adjudicator:
            into.check(check_reviewer_id, adjudicator, "adjudicator_reviewer_id")
    if found is None:
        into.raise_if_any()


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
    needed = case.required_reviews
    if len(reviews) < needed:
        raise _fail(
            Reason.NOT_ENOUGH_REVIEWS,
            f"{where} has {len(reviews)} review(s); {needed} are needed",
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
            # Before agreement is looked at: a reviewer of the round who also adjudicates
            # must not learn from the refusal whether the other reviewer agreed.
            if adjudicator in reviewer_ids:
                raise _fail(
                    Reason.ADJUDICATOR_IS_REVIEWER,
                    f"{adjudicator} reviewed {where} and cannot adjudicate it",
                )
            if agreed:
                raise _fail(
                    Reason.REVIEWS_NOT_DISAGREEING,
                    f"the reviews of {where} agree; an adjudicator may not overrule them",
                )
            if req.basis is Basis.ADJUDICATOR_DECISION:
                key = cases.candidate_key(case, req.label)
                if key is None:
                    raise cases.not_a_candidate(case)
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
        rationale=req.rationale,
    )
