"""A reviewer's answer form and their own reviews: what the review form sends, the
service's refusals of it named field by field, and amending or withdrawing a review
given in this sign-in.

The answer (a candidate value, or "cannot decide" / "cannot be judged" with a reason) and
the optional rationale for the adjudicator are read from the form the same way for a
first review (SubmitReview, in ``app``) and an amendment (AmendReview); the service's
violations are shown beside the fields they name, the form filled as it was sent.

Amending and withdrawing are offered for the reviews the session kept
(``own_reviews``): the contract lists no reviewer's own reviews, and the blinded case
leaves their queue once answered. Whether the round is still undecided is asked of the
service (GetCaseState, blinded as it shows a reviewer). A withdrawal has a confirmation
page of its own, so it works without script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from assay.client.errors import AssayCallError, InvalidArgumentError
from assay.console import app
from assay.console.own_reviews import OwnReview
from assay.console.pages.common import (
    named_problems,
    new_attempt,
    note,
    request_id,
    value_text,
    words,
)
from assay.console.sessions import Session
from assay.v1 import adjudication_service_pb2 as adj

# The form's fields, by the request field the service names in a refusal.
_FIELDS = {
    "outcome": "answer",
    "label": "answer",
    "reason": "reason",
    "rationale": "rationale",
}
_DECIDED = {
    adj.CASE_STATE_RESOLVED,
    adj.CASE_STATE_UNRESOLVED,
    adj.CASE_STATE_NOT_EVALUABLE,
    adj.CASE_STATE_FROZEN,
}
_CHOICES = {
    adj.REVIEW_OUTCOME_UNRESOLVED: "unresolved",
    adj.REVIEW_OUTCOME_NOT_EVALUABLE: "not-evaluable",
}


@dataclass
class Answer:
    """What the review form holds: the choice as posted (a value's index, ``unresolved``
    or ``not-evaluable``), the reason and the rationale, and the problems found, by field
    (``answer``, ``reason``, ``rationale``, or ``""`` for the form as a whole)."""

    choice: str = ""
    reason: str = ""
    rationale: str = ""
    problems: dict[str, str] = field(default_factory=dict)

    @classmethod
    def posted(cls, form: FormData) -> Answer:
        return cls(
            str(form.get("answer", "")),
            note(str(form.get("reason", ""))),
            note(str(form.get("rationale", ""))),
        )

    @classmethod
    def of(cls, review: adj.Review, case: adj.BlindedCase) -> Answer:
        """The form prefilled with ``review`` (to amend it)."""
        choice = _CHOICES.get(review.outcome, "")
        if review.outcome == adj.REVIEW_OUTCOME_LABEL:
            for index, value in enumerate(case.candidate_values):
                if value == review.label:
                    choice = str(index)
        return cls(choice, review.reason, review.rationale)

    def fill(self, request: Any, candidates: Any) -> bool:
        """Set ``request``'s outcome, label, reason and rationale (a SubmitReviewRequest or
        an AmendReviewRequest); False, with a problem noted, when nothing is chosen."""
        request.rationale = self.rationale
        # ASCII digits only: "²".isdigit() holds, and int() refuses it.
        if self.choice.isascii() and self.choice.isdigit() and int(self.choice) < len(candidates):
            request.outcome = adj.REVIEW_OUTCOME_LABEL
            request.label.CopyFrom(candidates[int(self.choice)])
        elif self.choice == "unresolved":
            request.outcome, request.reason = adj.REVIEW_OUTCOME_UNRESOLVED, self.reason
        elif self.choice == "not-evaluable":
            request.outcome, request.reason = adj.REVIEW_OUTCOME_NOT_EVALUABLE, self.reason
        else:
            self.problems["answer"] = "Choose a label, or say why you cannot."
            return False
        return True

    def refused(self, error: InvalidArgumentError) -> None:
        """The service's violations, each beside the field it names (others above)."""
        self.problems.update(named_problems(error, _FIELDS))


def shown_answer(review: adj.Review) -> dict[str, str]:
    """A review as its reviewer reads it back."""
    return {
        "outcome": words(adj.ReviewOutcome.DESCRIPTOR, review.outcome, "REVIEW_OUTCOME_"),
        "label": value_text(review.label) if review.HasField("label") else "",
        "reason": review.reason,
        "rationale": review.rationale,
        "review_id": review.review_id,
    }


def values_of(case: adj.BlindedCase) -> list[str]:
    return [value_text(v) for v in case.candidate_values]


def forget_if_stale(session: Session, case_id: str, error: AssayCallError) -> None:
    """A kept review revised elsewhere since (the CLI, another sign-in) is no longer the
    person's latest: the console stops offering it (the refusal says why)."""
    if error.reason in ("ERROR_REASON_REVIEW_SUPERSEDED", "ERROR_REASON_REVIEW_NOT_FOUND"):
        session.own_reviews.forget(case_id)


def routes(console: app.Console) -> list[Route]:
    def kept(session: Session, case_id: str) -> OwnReview | None:
        return session.own_reviews.get(case_id)

    def not_kept(request: Request, session: Session) -> Response:
        return console.render(
            request,
            "error.html",
            404,
            session=session,
            headline="You have no review of this case from this sign-in.",
            hint=(
                "The console offers to amend or withdraw the reviews you gave since you "
                "signed in; for others, use assay amend or assay withdraw."
            ),
            detail="",
            request_id="",
        )

    async def mine_page(
        request: Request, session: Session, own: OwnReview, answer: Answer | None, status: int
    ) -> Response:
        found = await console.adjudication(session).get_case_state(
            adj.GetCaseStateRequest(case_id=own.case.case_id)
        )
        open_round = found.state not in _DECIDED and found.round == own.review.round
        return console.render(
            request,
            "review_mine.html",
            status,
            session=session,
            case=own.case,
            values=values_of(own.case),
            mine=shown_answer(own.review),
            answer=answer or Answer.of(own.review, own.case),
            open_round=open_round,
            state=words(adj.CaseState.DESCRIPTOR, found.state, "CASE_STATE_"),
            attempt=new_attempt(),
            amended=request.query_params.get("amended") == "1",
        )

    async def mine(request: Request, session: Session) -> Response:
        own = kept(session, request.path_params["case_id"])
        if own is None:
            return not_kept(request, session)
        return await mine_page(request, session, own, None, 200)

    async def amend(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        own = kept(session, case_id)
        if own is None:
            return not_kept(request, session)
        form = await request.form()
        answer = Answer.posted(form)
        amendment = adj.AmendReviewRequest(
            request_id=request_id(form), review_id=own.review.review_id
        )
        if not answer.fill(amendment, own.case.candidate_values):
            return await mine_page(request, session, own, answer, 400)
        try:
            reply = await console.adjudication(session).amend_review(amendment)
        except InvalidArgumentError as error:
            answer.refused(error)
            return await mine_page(request, session, own, answer, 400)
        except AssayCallError as error:
            forget_if_stale(session, case_id, error)
            raise
        session.own_reviews.keep(own.case, reply.review)
        return RedirectResponse(f"/review/{quote(case_id, safe='')}/mine?amended=1", 303)

    async def confirm_withdrawal(request: Request, session: Session) -> Response:
        own = kept(session, request.path_params["case_id"])
        if own is None:
            return not_kept(request, session)
        return console.render(
            request,
            "review_withdraw.html",
            session=session,
            case=own.case,
            mine=shown_answer(own.review),
            attempt=new_attempt(),
        )

    async def withdraw(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        own = kept(session, case_id)
        if own is None:
            return not_kept(request, session)
        form = await request.form()
        try:
            await console.adjudication(session).withdraw_review(
                adj.WithdrawReviewRequest(
                    request_id=request_id(form),
                    review_id=own.review.review_id,
                    reason=note(str(form.get("reason", ""))),
                )
            )
        except AssayCallError as error:
            forget_if_stale(session, case_id, error)
            raise
        session.own_reviews.forget(case_id)
        return RedirectResponse("/review?withdrawn=1", status_code=303)

    return [
        Route("/review/{case_id}/mine", app.signed_in(console, mine)),
        Route("/review/{case_id}/amend", app.signed_in(console, amend), methods=["POST"]),
        Route("/review/{case_id}/withdraw", app.signed_in(console, confirm_withdrawal)),
        Route("/review/{case_id}/withdraw", app.signed_in(console, withdraw), methods=["POST"]),
    ]
