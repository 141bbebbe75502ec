"""The approver's pages: the approvals waiting for a decision, and the decision.

Pending approvals are ListApprovals in state PENDING as the signed-in person, so an
approver sees their own tenants' requests only. Each shows what is asked for (the
candidate: its probe, the side effects it needs and the reasons the planner blocked it;
or a reliability table change: its digest and every entry), who asked and why, and until
when. Approve or deny takes a reason; one request id per
rendered form makes a double click or a resubmission one decision. What the service
refuses (deciding one's own request, deciding twice, a request no longer pending) is
shown in plain words by the shared refusal page.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from assay.console import app
from assay.console.pages.common import new_attempt, request_id, when, words
from assay.console.sessions import Session
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

PAGE = 50
REASON_MAX = 2000
_DECISIONS = {"approve": pb.APPROVAL_DECISION_APPROVE, "deny": pb.APPROVAL_DECISION_DENY}


def _effects(numbers: Any) -> list[str]:
    return [words(plan_pb2.SideEffectClass.DESCRIPTOR, n, "SIDE_EFFECT_CLASS_") for n in numbers]


def _table(approval: pb.Approval) -> dict[str, Any] | None:
    """A reliability table change's digest, checkpoint and entries (None for a candidate)."""
    if not approval.HasField("table_change"):
        return None
    change = approval.table_change
    return {
        "digest": change.table_digest,
        "tree_size": change.tree_size,
        "sources": [(kind, repr(value)) for kind, value in sorted(change.sources.items())],
    }


def view(approval: pb.Approval) -> dict[str, Any]:
    """What a page shows of one approval (text only; the template escapes it)."""
    candidate = approval.candidate
    return {
        "id": approval.approval_id,
        "tenant": approval.tenant,
        "subject": approval.subject,
        "predicate": approval.predicate,
        "state": words(pb.ApprovalState.DESCRIPTOR, approval.state, "APPROVAL_STATE_"),
        "pending": approval.state == pb.APPROVAL_STATE_PENDING,
        "candidate": candidate.candidate_id,
        "probe": words(plan_pb2.ProbeKind.DESCRIPTOR, candidate.probe, "PROBE_KIND_"),
        "signal": words(
            plan_pb2.SignalClass.DESCRIPTOR, candidate.target_signal_class, "SIGNAL_CLASS_"
        ),
        "risk": words(plan_pb2.ActionRisk.DESCRIPTOR, candidate.action_risk, "ACTION_RISK_"),
        "effects": _effects(candidate.required_side_effects),
        "missing": _effects(candidate.missing_grants),
        "blocking": [
            words(plan_pb2.AvailabilityReason.DESCRIPTOR, n, "AVAILABILITY_REASON_")
            for n in candidate.blocking_reasons
        ],
        "digest": candidate.candidate_digest,
        "requester": approval.requester.subject,
        "reason": approval.reason,
        "requested": when(approval.request_time),
        "expires": when(approval.expire_time),
        "grant_expires": when(approval.grant_expire_time),
        "quorum": approval.quorum,
        "table": _table(approval),
        "steps": [
            {
                "kind": words(pb.ApprovalStepKind.DESCRIPTOR, s.kind, "APPROVAL_STEP_KIND_"),
                "actor": s.actor.subject,
                "reason": s.reason,
                "at": when(s.occur_time),
            }
            for s in approval.steps
        ],
    }


def routes(console: app.Console) -> list[Route]:
    def approvals(session: Session) -> Any:
        assert console.backends is not None
        return console.backends.approvals_for(session.token)

    async def pending(request: Request, session: Session) -> Response:
        reply = await approvals(session).list_approvals(
            pb.ListApprovalsRequest(state=pb.APPROVAL_STATE_PENDING, page_size=PAGE)
        )
        return console.render(
            request,
            "approvals.html",
            session=session,
            approvals=[(view(a), new_attempt()) for a in reply.approvals],
            more=bool(reply.next_page_token),
        )

    async def one(request: Request, session: Session) -> Response:
        reply = await approvals(session).get_approval(
            pb.GetApprovalRequest(approval_id=request.path_params["approval_id"])
        )
        return console.render(
            request,
            "approval.html",
            session=session,
            approval=view(reply.approval),
            attempt=new_attempt(),
            decided=request.query_params.get("decided") == "1",
        )

    async def decide(request: Request, session: Session) -> Response:
        approval_id = request.path_params["approval_id"]
        form = await request.form()
        decision = _DECISIONS.get(str(form.get("decision", "")))
        reason = str(form.get("reason", "")).strip()
        client = approvals(session)
        if decision is None or not reason or len(reason) > REASON_MAX:
            shown = await client.get_approval(pb.GetApprovalRequest(approval_id=approval_id))
            return console.render(
                request,
                "approval.html",
                400,
                session=session,
                approval=view(shown.approval),
                attempt=str(form.get("attempt", "")),
                problem=f"Choose approve or deny, and give a reason (at most {REASON_MAX} "
                "characters).",
            )
        await client.decide_approval(
            pb.DecideApprovalRequest(
                approval_id=approval_id,
                decision=decision,
                reason=reason,
                request_id=request_id(form),
            )
        )
        return RedirectResponse(f"/approvals/{quote(approval_id)}?decided=1", status_code=303)

    return [
        Route("/approvals", app.signed_in(console, pending)),
        Route("/approvals/{approval_id}", app.signed_in(console, one)),
        Route("/approvals/{approval_id}", app.signed_in(console, decide), methods=["POST"]),
    ]
