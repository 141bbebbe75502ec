"""The operator's case work: the case list (ListCases with its filters, oldest or newest
first, a page at a time) and who a case is assigned to (AssignCases, UnassignCase).

The filters are the query string, so a filtered list is a link; the next page's link
carries the filters with the service's page token (bound to them). A time is read as
UTC. Assigning names the reviewers and the rule (each, round robin, least loaded); a
reviewer the service refuses is named beside the form with the service's words.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from assay.client.errors import InvalidArgumentError
from assay.client.listing_builders import list_cases_request
from assay.console import app
from assay.console.pages.common import named_problems, request_id, when, words
from assay.console.sessions import Session
from assay.v1 import adjudication_service_pb2 as adj

PAGE = 50
# The states a list may be filtered by, as an operator sees them, in a case's order.
STATES = [
    (
        words(adj.CaseState.DESCRIPTOR, number, "CASE_STATE_"),
        adj.CaseState.Name(number).removeprefix("CASE_STATE_"),
    )
    for number in (
        adj.CASE_STATE_AWAITING_REVIEW,
        adj.CASE_STATE_AWAITING_SECOND_REVIEW,
        adj.CASE_STATE_AWAITING_MORE_REVIEWS,
        adj.CASE_STATE_AGREED,
        adj.CASE_STATE_DISAGREED,
        adj.CASE_STATE_RESOLVED,
        adj.CASE_STATE_UNRESOLVED,
        adj.CASE_STATE_NOT_EVALUABLE,
        adj.CASE_STATE_FROZEN,
    )
]
_FILTERS = ("tenant", "predicate", "assigned", "since", "order")
RULES = {
    "each": adj.ASSIGNMENT_RULE_EACH,
    "round-robin": adj.ASSIGNMENT_RULE_ROUND_ROBIN,
    "least-loaded": adj.ASSIGNMENT_RULE_LEAST_LOADED,
}
# ListCases' request fields, by the filter that set them.
_LIST_FIELDS = {
    "states": "states",
    "predicate": "predicate",
    "assigned_reviewer_id": "assigned",
    "create_after": "since",
    "tenant": "tenant",
    "order": "order",
    "page_token": "",
}
_ASSIGN_FIELDS = {"reviewer_ids": "reviewer_ids", "rule": "rule", "reviewers_per_case": "per_case"}
_INDEXED = re.compile(r"^(\w+)\[(\d+)\]")


def since(text: str) -> datetime | None:
    """A time typed or picked (``2026-12-03T16:00``, RFC 3339), UTC unless it says."""
    moment = datetime.fromisoformat(text.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def filters(query: QueryParams) -> tuple[dict[str, Any], dict[str, str]]:
    """The list's filters as the form shows them, and the problems found reading them."""
    chosen: dict[str, Any] = {name: query.get(name, "").strip() for name in _FILTERS}
    known = {name for _, name in STATES}
    chosen["states"] = [s for s in query.getlist("state") if s in known]
    problems: dict[str, str] = {}
    if chosen["since"]:
        try:
            since(chosen["since"])
        except ValueError:
            problems["since"] = "Give a date and time, such as 2026-12-03T16:00 (UTC)."
    return chosen, problems


def list_request(chosen: dict[str, Any], page_token: str) -> adj.ListCasesRequest:
    request = list_cases_request(
        tenant=chosen["tenant"],
        states=chosen["states"],
        predicate=chosen["predicate"],
        assigned_reviewer_id=chosen["assigned"],
        create_after=since(chosen["since"]) if chosen["since"] else None,
        newest_first=chosen["order"] == "newest",
        page_size=PAGE,
    )
    request.page_token = page_token
    return request


def list_link(chosen: dict[str, Any], token: str = "") -> str:
    """The list's address with these filters and, for a next page, the service's token."""
    pairs = [(name, chosen[name]) for name in _FILTERS if chosen[name]]
    pairs += [("state", s) for s in chosen["states"]]
    pairs += [("page", token)] if token else []
    return "/operate/cases" + (f"?{urlencode(pairs)}" if pairs else "")


def summary(case: adj.CaseSummary) -> dict[str, Any]:
    return {
        "id": case.case_id,
        "tenant": case.tenant,
        "subject": case.subject,
        "predicate": case.predicate,
        "state": words(adj.CaseState.DESCRIPTOR, case.state, "CASE_STATE_"),
        "round": case.round,
        "reviews": case.review_count,
        "required": case.required_reviews,
        "assigned": list(case.assigned_reviewer_ids),
        "created": when(case.create_time),
    }


def reviewer_ids(text: str) -> list[str]:
    """Reviewer ids separated by commas, spaces or line breaks, each once, in order."""
    return list(dict.fromkeys(part for part in re.split(r"[\s,]+", text) if part))


def assign_problems(error: InvalidArgumentError, asked: list[str]) -> dict[str, str]:
    """AssignCases' violations beside the form's fields; ``reviewer_ids[i]`` is named by
    the id asked for, so the person sees which reviewer was refused."""
    problems: dict[str, str] = {}
    for violation in error.violations:
        found = _INDEXED.match(violation.field)
        name, said = violation.field, violation.description
        if found:
            name, index = found.group(1), int(found.group(2))
            if name == "reviewer_ids" and index < len(asked):
                said = f"{asked[index]}: {said}"
        where = _ASSIGN_FIELDS.get(name, "")
        problems[where] = f"{problems.get(where, '')} {said}".strip()
    return problems or {"": error.message}


def routes(console: app.Console, case_page: Callable[..., Awaitable[Response]]) -> list[Route]:
    """``case_page(request, session, **extra)`` renders a case's operator page."""

    async def case_list(request: Request, session: Session) -> Response:
        chosen, problems = filters(request.query_params)
        cases: list[dict[str, Any]] = []
        more = ""
        if not problems:
            try:
                reply = await console.adjudication(session).list_cases(
                    list_request(chosen, request.query_params.get("page", ""))
                )
            except InvalidArgumentError as error:
                problems = named_problems(error, _LIST_FIELDS)
            else:
                cases = [summary(c) for c in reply.cases]
                more = list_link(chosen, reply.next_page_token) if reply.next_page_token else ""
        return console.render(
            request,
            "operate_cases.html",
            400 if problems else 200,
            session=session,
            chosen=chosen,
            states=STATES,
            problems=problems,
            cases=cases,
            more=more,
            paged=bool(request.query_params.get("page")),
            first=list_link(chosen),
        )

    async def assign(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        form = await request.form()
        asked = reviewer_ids(str(form.get("reviewer_ids", "")))
        rule = RULES.get(str(form.get("rule", "")))
        per_case = str(form.get("per_case", "")).strip() or "0"
        typed = {"reviewer_ids": " ".join(asked), "rule": str(form.get("rule", ""))}
        typed["per_case"] = per_case if per_case != "0" else ""
        problems: dict[str, str] = {}
        if not asked:
            problems["reviewer_ids"] = "Name at least one reviewer."
        if rule is None:
            problems["rule"] = "Choose how the case is assigned."
        if not per_case.isdigit():
            problems["per_case"] = "Give a whole number (or leave it empty)."
        if problems:
            return await case_page(request, session, status=400, problems=problems, typed=typed)
        assert rule is not None
        try:
            await console.adjudication(session).assign_cases(
                adj.AssignCasesRequest(
                    request_id=request_id(form),
                    case_ids=[case_id],
                    reviewer_ids=asked,
                    rule=rule,
                    reviewers_per_case=int(per_case),
                )
            )
        except InvalidArgumentError as error:
            problems = assign_problems(error, asked)
            return await case_page(request, session, status=400, problems=problems, typed=typed)
        return RedirectResponse(f"/operate/cases/{quote(case_id, safe='')}?assigned=1", 303)

    async def unassign(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        form = await request.form()
        reviewer = str(form.get("reviewer_id", ""))
        await console.adjudication(session).unassign_case(
            adj.UnassignCaseRequest(
                request_id=request_id(form), case_id=case_id, reviewer_ids=[reviewer]
            )
        )
        back = f"/operate/cases/{quote(case_id, safe='')}?unassigned={quote(reviewer, safe='')}"
        return RedirectResponse(back, status_code=303)

    return [
        Route("/operate/cases", app.signed_in(console, case_list)),
        Route("/operate/cases/{case_id}/assign", app.signed_in(console, assign), methods=["POST"]),
        Route(
            "/operate/cases/{case_id}/unassign",
            app.signed_in(console, unassign),
            methods=["POST"],
        ),
    ]
