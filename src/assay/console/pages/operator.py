"""The operator's pages: a case's full view (every review record, superseded ones
marked, rationales, agreement within each round, its assigned reviewers) and its freeze,
the case list and assignment (``case_work``), reviewers and their registration, cases
enqueued from an uploaded file, and a tenant's agreement.

Everything is asked of the services as the signed-in operator, so a tenant outside their
grant is refused there, not here. Freezing and registering carry one request id per
rendered form. An upload is bounded (``uploads.MAX_BYTES``, checked on the request's
length before the body is read, and ``uploads.MAX_ROWS``) and stored all or nothing:
every row the file or the service rejects is named with its line. The agreement page
draws its charts as SVG on the server (``charts``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from assay.client.errors import InvalidArgumentError
from assay.console import app
from assay.console.pages import case_work, uploads
from assay.console.pages.charts import agreement_view
from assay.console.pages.common import bounded, new_attempt, request_id, value_text, when, words
from assay.console.sessions import Session
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

PAGE = 200
_FREEZABLE = {adj.CASE_STATE_RESOLVED, adj.CASE_STATE_UNRESOLVED, adj.CASE_STATE_NOT_EVALUABLE}
_KINDS = {
    "human": gold_pb2.REVIEWER_KIND_HUMAN,
    "fixture": gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE,
}


def _case_view(reply: adj.GetCaseResponse, revisions: list[gold_pb2.GoldLabelRevision]) -> Any:
    case = reply.case
    return {
        "case": case,
        "state": words(adj.CaseState.DESCRIPTOR, reply.state, "CASE_STATE_"),
        "frozen": reply.state == adj.CASE_STATE_FROZEN,
        "freezable": reply.state in _FREEZABLE,
        "round": reply.round,
        "required": case.required_reviews,
        "values": [value_text(v) for v in case.candidate_values],
        "verdict": value_text(case.local_verdict),
        "reviews": [
            {
                "id": r.review_id,
                "round": r.round,
                "reviewer": r.reviewer_id,
                "outcome": words(adj.ReviewOutcome.DESCRIPTOR, r.outcome, "REVIEW_OUTCOME_"),
                "label": value_text(r.label) if r.HasField("label") else "",
                "reason": r.reason,
                "rationale": r.rationale,
                "supersedes": r.supersedes_review_id,
                "superseded": r.superseded,
                "at": when(r.submit_time),
            }
            for r in reply.reviews
        ],
        "agreements": [
            {
                "round": a.round,
                "reviews": a.review_count,
                "agreeing": a.agreeing_count,
                "share": f"{a.agreeing_share:.0%}",
                "pairwise": f"{a.pairwise_agreement:.0%}",
            }
            for a in reply.round_agreements
        ],
        "assigned": list(reply.assigned_reviewer_ids),
        "resolutions": [
            {
                "round": r.round,
                "basis": words(gold_pb2.ResolutionBasis.DESCRIPTOR, r.basis, "RESOLUTION_BASIS_"),
                "label": value_text(r.label) if r.HasField("label") else "",
                "adjudicator": r.adjudicator_reviewer_id,
                "rationale": r.rationale,
            }
            for r in reply.resolutions
        ],
        "revisions": [
            {
                "revision": r.revision,
                "round": r.round,
                "basis": words(gold_pb2.ResolutionBasis.DESCRIPTOR, r.basis, "RESOLUTION_BASIS_"),
                "label": value_text(r.label) if r.HasField("label") else "",
                "at": when(r.freeze_time),
            }
            for r in revisions
        ],
    }


def routes(console: app.Console) -> list[Route]:
    async def home(request: Request, session: Session, **extra: Any) -> Response:
        listed = await console.adjudication(session).list_reviewers(
            adj.ListReviewersRequest(page_size=PAGE)
        )
        return console.render(
            request,
            "operate.html",
            extra.pop("status", 200),
            session=session,
            reviewers=[
                {
                    "id": r.reviewer_id,
                    "kind": words(gold_pb2.ReviewerKind.DESCRIPTOR, r.kind, "REVIEWER_KIND_"),
                    "attested_by": r.attested_by,
                    "at": when(r.register_time),
                }
                for r in listed.reviewers
            ],
            attempt=new_attempt(),
            max_rows=uploads.MAX_ROWS,
            max_bytes=uploads.MAX_BYTES,
            columns=", ".join(uploads.CSV_COLUMNS),
            registered=request.query_params.get("registered", ""),
            **extra,
        )

    async def operate(request: Request, session: Session) -> Response:
        return await home(request, session)

    async def find_case(request: Request, session: Session) -> Response:
        case_id = request.query_params.get("case_id", "").strip()
        if not case_id:
            return RedirectResponse("/operate", status_code=303)
        return RedirectResponse(f"/operate/cases/{quote(case_id, safe='')}", status_code=303)

    async def case(request: Request, session: Session, **extra: Any) -> Response:
        case_id = request.path_params["case_id"]
        client = console.adjudication(session)
        reply = await client.get_case(adj.GetCaseRequest(case_id=case_id))
        revisions = await client.list_gold_label_revisions(
            adj.ListGoldLabelRevisionsRequest(case_id=case_id, page_size=PAGE)
        )
        said = request.query_params
        return console.render(
            request,
            "operate_case.html",
            extra.pop("status", 200),
            session=session,
            attempt=new_attempt(),
            done=said.get("frozen") == "1",
            assigned_now=said.get("assigned") == "1",
            unassigned=said.get("unassigned", ""),
            rules=case_work.RULES,
            assigning=extra.pop("problems", {}),
            typed=extra.pop("typed", {"rule": "each"}),
            **_case_view(reply, list(revisions.revisions)),
        )

    async def freeze(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        form = await request.form()
        await console.adjudication(session).freeze_gold_label(
            adj.FreezeGoldLabelRequest(request_id=request_id(form), case_id=case_id)
        )
        return RedirectResponse(f"/operate/cases/{quote(case_id, safe='')}?frozen=1", 303)

    async def register(request: Request, session: Session) -> Response:
        form = await request.form()
        reviewer_id = str(form.get("reviewer_id", "")).strip()
        kind = _KINDS.get(str(form.get("kind", "")))
        vouched = form.get("attest") == "yes"
        unvouched = kind == gold_pb2.REVIEWER_KIND_HUMAN and not vouched
        if not reviewer_id or kind is None or unvouched:
            return await home(
                request,
                session,
                status=400,
                problem="Give the reviewer's id and kind; for a person, vouch that they are one.",
            )
        await console.adjudication(session).register_reviewer(
            adj.RegisterReviewerRequest(
                request_id=request_id(form),
                reviewer=adj.Reviewer(
                    reviewer_id=reviewer_id,
                    kind=kind,
                    # The attestation is the operator's own subject (the service checks it).
                    attested_by=session.subject if vouched else "",
                ),
            )
        )
        return RedirectResponse(f"/operate?registered={quote(reviewer_id)}", status_code=303)

    async def enqueue(request: Request, session: Session) -> Response:
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            return await home(request, session, status=400, problem="Choose a file to upload.")
        data = await upload.read(uploads.MAX_BYTES + 1)
        found = uploads.read_upload(upload.filename or "", data)
        name = upload.filename or "the file"
        if found.problems:
            return await home(
                request, session, status=400, rejected=found.problems, file=name, stored=[]
            )
        try:
            reply = await console.adjudication(session).enqueue_cases(
                adj.EnqueueCasesRequest(request_id=request_id(form), cases=found.cases)
            )
        except InvalidArgumentError as error:
            # The service lists a bounded number of violations and its message says how
            # many more there are, so the message is shown beside the rows.
            problems = uploads.named(found, error.violations)
            return await home(
                request,
                session,
                status=400,
                rejected=problems,
                said=error.message,
                file=name,
                stored=[],
            )
        return await home(request, session, stored=list(reply.cases), file=name, rejected=[])

    async def agreement(request: Request, session: Session) -> Response:
        tenant = request.query_params.get("tenant", "").strip()
        reply = await console.adjudication(session).compute_agreement(
            adj.ComputeAgreementRequest(tenant=tenant)
        )
        return console.render(
            request, "agreement.html", session=session, tenant=tenant, **agreement_view(reply)
        )

    # The form's other fields and the multipart framing get room beside the file.
    enqueue_page = bounded(app.signed_in(console, enqueue), uploads.MAX_BYTES + 64 * 1024)
    return [
        Route("/operate", app.signed_in(console, operate)),
        Route("/operate/case", app.signed_in(console, find_case)),
        *case_work.routes(console, case),
        Route("/operate/cases/{case_id}", app.signed_in(console, case)),
        Route("/operate/cases/{case_id}/freeze", app.signed_in(console, freeze), methods=["POST"]),
        Route("/operate/reviewers", app.signed_in(console, register), methods=["POST"]),
        Route("/operate/enqueue", enqueue_page, methods=["POST"]),
        Route("/operate/agreement", app.signed_in(console, agreement)),
    ]
