"""The operator's case work: the case list (ListCases with its filters, oldest or newest
first, a page at a time) and who a case is assigned to (AssignCases, UnassignCase).

The filters are the query string, so a filtered list is a link; the next page's link
carries the filters with the service's page token (bound to them). A time is read as
UTC. Assigning names the reviewers and the rule (each, round robin, least loaded), for
one case from its page or for the cases ticked on a list page; a reviewer or case the
service refuses is named beside the form with the service's words.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from starlette.datastructures import FormData, QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from assay.client.errors import InvalidArgumentError
from assay.client.listing_builders import list_cases_request
from assay.console import app
from assay.console.pages.common import named_problems, new_attempt, request_id, when, words
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


def assign_problems(
    error: InvalidArgumentError, asked: Sequence[str], case_ids: Sequence[str] = ()
) -> dict[str, str]:
    """AssignCases' violations beside the form's fields; ``reviewer_ids[i]`` and
    ``case_ids[i]`` are named by the id sent, so the person sees which was refused."""
    sent = {"reviewer_ids": list(asked), "case_ids": list(case_ids)}
    problems: dict[str, str] = {}
    for violation in error.violations:
        found = _INDEXED.match(violation.field)
        name, said = violation.field, violation.description
        if found:
            name, index = found.group(1), int(found.group(2))
            if index < len(sent.get(name, [])):
                said = f"{sent[name][index]}: {said}"
        where = _ASSIGN_FIELDS.get(name, "")
        problems[where] = f"{problems.get(where, '')} {said}".strip()
    return problems or {"": error.message}


def routes(console: app.Console, case_page: Callable[..., Awaitable[Response]]) -> list[Route]:
    """``case_page(request, session, **extra)`` renders a case's operator page."""

    async def listed(
        request: Request, session: Session, query: QueryParams, status: int = 200, **extra: Any
    ) -> Response:
        """The list page for the filters in ``query``; ``extra``: the assign form's state."""
        chosen, problems = filters(query)
        cases: list[dict[str, Any]] = []
        more = ""
        if not problems:
            try:
                reply = await console.adjudication(session).list_cases(
                    list_request(chosen, query.get("page", ""))
                )
            except InvalidArgumentError as error:
                problems = named_problems(error, _LIST_FIELDS)
            else:
                cases = [summary(c) for c in reply.cases]
                more = list_link(chosen, reply.next_page_token) if reply.next_page_token else ""
        here = list_link(chosen, query.get("page", ""))
        return console.render(
            request,
            "operate_cases.html",
            400 if problems else status,
            session=session,
            chosen=chosen,
            states=STATES,
            problems=problems,
            cases=cases,
            more=more,
            paged=bool(query.get("page")),
            first=list_link(chosen),
            back=here,
            attempt=new_attempt(),
            done=query.get("done", ""),
            assigning=extra.get("assigning", {}),
            typed=extra.get("typed", {"rule": "round-robin"}),
            ticked=extra.get("ticked", []),
        )

    async def case_list(request: Request, session: Session) -> Response:
        return await listed(request, session, request.query_params)

    async def assigned(
        session: Session, form: FormData, case_ids: list[str]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """AssignCases for ``case_ids`` as the form asks: the problems (none: assigned) and
        the form's fields as sent."""
        asked = reviewer_ids(str(form.get("reviewer_ids", "")))
        rule = RULES.get(str(form.get("rule", "")))
        per_case = str(form.get("per_case", "")).strip() or "0"
        typed = {"reviewer_ids": " ".join(asked), "rule": str(form.get("rule", ""))}
        typed["per_case"] = per_case if per_case != "0" else ""
        problems: dict[str, str] = {}
        if not case_ids:
            problems[""] = "Tick the cases to assign."
        if not asked:
            problems["reviewer_ids"] = "Name at least one reviewer."
        if rule is None:
            problems["rule"] = "Choose how the cases are assigned."
        if not per_case.isdigit():
            problems["per_case"] = "Give a whole number (or leave it empty)."
        if problems or rule is None:
            return problems, typed
        try:
            await console.adjudication(session).assign_cases(
                adj.AssignCasesRequest(
                    request_id=request_id(form),
                    case_ids=case_ids,
                    reviewer_ids=asked,
                    rule=rule,
                    reviewers_per_case=int(per_case),
                )
            )
        except InvalidArgumentError as error:
            return assign_problems(error, asked, case_ids), typed
        return {}, typed

    async def assign(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        form = await request.form()
        problems, typed = await assigned(session, form, [case_id])
        if problems:
            return await case_page(request, session, status=400, problems=problems, typed=typed)
        return RedirectResponse(f"/operate/cases/{quote(case_id, safe='')}?assigned=1", 303)

    async def assign_listed(request: Request, session: Session) -> Response:
        """The cases ticked on a list page, assigned; back to that page, saying how many."""
        form = await request.form()
        back = str(form.get("back", ""))
        if not back.startswith("/operate/cases") or "//" in back:
            back = "/operate/cases"
        case_ids = list(dict.fromkeys(str(c) for c in form.getlist("case_id")))
        problems, typed = await assigned(session, form, case_ids)
        if problems:
            query = QueryParams(urlsplit(back).query)
            return await listed(
                request, session, query, 400, assigning=problems, typed=typed, ticked=case_ids
            )
        joiner = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{joiner}done={len(case_ids)}", status_code=303)

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
        Route("/operate/cases/assign", app.signed_in(console, assign_listed), methods=["POST"]),
        Route("/operate/cases/{case_id}/assign", app.signed_in(console, assign), methods=["POST"]),
        Route(
            "/operate/cases/{case_id}/unassign",
            app.signed_in(console, unassign),
            methods=["POST"],
        ),
    ]
