"""The adjudicator's pages: the disagreements waiting for my decision, one case as the
service shows it to me while it waits, and my decision.

The worklist is ListAdjudicationQueue for the signed-in subject; a case is GetCase as
that person, which for an adjudicator is the redacted view (no system verdict, no earlier
rounds or resolutions) with the round's reviews. The decision is ResolveCase on an
explicit basis: one of the candidate values (adjudicator's decision), or the case
declared unresolved or not evaluable, with an optional reason for it (the resolution's
rationale); the adjudicator is always the signed-in subject, and one request id per
rendered form makes a resubmission one decision. Each review's rationale is shown beside
its answer, and how many reviews the round needed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from assay.client.errors import InvalidArgumentError
from assay.console import app
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
from assay.v1 import gold_pb2

PAGE = 50
# The form's fields, by the request field the service names in a refusal.
_FIELDS = {"basis": "decision", "label": "decision", "rationale": "rationale"}
_BASES = {
    "unresolved": gold_pb2.RESOLUTION_BASIS_UNRESOLVED,
    "not-evaluable": gold_pb2.RESOLUTION_BASIS_NOT_EVALUABLE,
}


def _review_view(review: adj.Review) -> dict[str, str]:
    return {
        "reviewer": review.reviewer_id,
        "outcome": words(adj.ReviewOutcome.DESCRIPTOR, review.outcome, "REVIEW_OUTCOME_"),
        "label": value_text(review.label) if review.HasField("label") else "",
        "reason": review.reason,
        "rationale": review.rationale,
    }


def _case_values(reply: adj.GetCaseResponse) -> dict[str, Any]:
    """What the case page shows of GetCase's answer: the current round's reviews only, and
    how many the round needed."""
    return {
        "case": reply.case,
        "required": reply.case.required_reviews,
        "round": reply.round,
        "state": words(adj.CaseState.DESCRIPTOR, reply.state, "CASE_STATE_"),
        "waiting": reply.state == adj.CASE_STATE_DISAGREED,
        "values": [value_text(v) for v in reply.case.candidate_values],
        "reviews": [_review_view(r) for r in reply.reviews if r.round == reply.round],
    }


def routes(console: app.Console) -> list[Route]:
    async def worklist(request: Request, session: Session) -> Response:
        reply = await console.adjudication(session).list_adjudication_queue(
            adj.ListAdjudicationQueueRequest(adjudicator_id=session.subject, page_size=PAGE)
        )
        return console.render(
            request,
            "adjudicate.html",
            session=session,
            items=list(reply.items),
            more=bool(reply.next_page_token),
            done=request.query_params.get("done") == "1",
        )

    async def case(request: Request, session: Session) -> Response:
        reply = await console.adjudication(session).get_case(
            adj.GetCaseRequest(case_id=request.path_params["case_id"])
        )
        return console.render(
            request,
            "adjudicate_case.html",
            session=session,
            attempt=new_attempt(),
            rationale="",
            problems={},
            **_case_values(reply),
        )

    async def resolve(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        form = await request.form()
        client = console.adjudication(session)
        shown = await client.get_case(adj.GetCaseRequest(case_id=case_id))
        choice = str(form.get("decision", ""))
        rationale = note(str(form.get("rationale", "")))
        decision = adj.ResolveCaseRequest(
            request_id=request_id(form),
            case_id=case_id,
            adjudicator_reviewer_id=session.subject,
            rationale=rationale,
        )

        def again(problems: dict[str, str], attempt: str) -> Response:
            """The page once more, the decision as chosen, each problem beside its field (a
            fresh request id once the service refused the last one)."""
            return console.render(
                request,
                "adjudicate_case.html",
                400,
                session=session,
                attempt=attempt,
                chosen=choice,
                rationale=rationale,
                problems=problems,
                **_case_values(shown),
            )

        candidates = shown.case.candidate_values
        if choice.isascii() and choice.isdigit() and int(choice) < len(candidates):
            decision.basis = gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
            decision.label.CopyFrom(candidates[int(choice)])
        elif choice in _BASES:
            decision.basis = _BASES[choice]
        else:
            chosen_none = "Choose a value, or say that it cannot be decided or judged."
            return again({"decision": chosen_none}, str(form.get("attempt", "")))
        try:
            await client.resolve_case(decision)
        except InvalidArgumentError as error:
            return again(named_problems(error, _FIELDS), new_attempt())
        following = await client.list_adjudication_queue(
            adj.ListAdjudicationQueueRequest(adjudicator_id=session.subject, page_size=1)
        )
        if following.items:
            return RedirectResponse(f"/adjudicate/{quote(following.items[0].case.case_id)}", 303)
        return RedirectResponse("/adjudicate?done=1", status_code=303)

    return [
        Route("/adjudicate", app.signed_in(console, worklist)),
        Route("/adjudicate/{case_id}", app.signed_in(console, case)),
        Route("/adjudicate/{case_id}", app.signed_in(console, resolve), methods=["POST"]),
    ]
