"""Approval requests built from plain values, shared by both approval clients and the CLI.

The same translation as ``assay.client.builders``, for ``assay.v1.ApprovalService``:
a state given as ``"pending"``, ``"PENDING"``, ``"APPROVAL_STATE_PENDING"`` or its
number; a decision as a bool; lifetimes as ``datetime``/``timedelta``. Written once here
so ``ApprovalClient.ask`` and ``AsyncApprovalClient.ask`` cannot drift apart, and so
``assay approval`` names the final states the way the client does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from google.protobuf import json_format

from assay.client.builders import enum_number
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

# The states after which an approval never changes again (WatchApproval ends on them).
FINAL_STATES = frozenset(
    {
        pb.APPROVAL_STATE_DENIED,
        pb.APPROVAL_STATE_EXPIRED,
        pb.APPROVAL_STATE_REVOKED,
        pb.APPROVAL_STATE_CONSUMED,
    }
)

CandidateLike = plan_pb2.AcquisitionCandidate | Mapping[str, Any]


def approval_state(value: int | str) -> pb.ApprovalState.ValueType:
    """An ``ApprovalState`` from a number or a (short, any-case) name."""
    return pb.ApprovalState.ValueType(enum_number(pb.ApprovalState, value, "APPROVAL_STATE_"))


def is_final(approval: pb.Approval) -> bool:
    """Whether ``approval`` is in a final state (DENIED, EXPIRED, REVOKED, CONSUMED)."""
    return approval.state in FINAL_STATES


def as_candidate(candidate: CandidateLike) -> plan_pb2.AcquisitionCandidate:
    """The candidate as a message: one already, or proto JSON (as a plan prints it)."""
    if isinstance(candidate, plan_pb2.AcquisitionCandidate):
        return candidate
    return json_format.ParseDict(dict(candidate), plan_pb2.AcquisitionCandidate())


def request_approval_request(
    tenant: str,
    subject: str,
    predicate: str,
    candidate: CandidateLike,
    reason: str,
    *,
    expire_time: datetime | None = None,
    grant_lifetime: timedelta | None = None,
    request_id: str | None = None,
) -> pb.RequestApprovalRequest:
    """A ``RequestApprovalRequest`` for one plan candidate, exactly as the plan gave it (its
    ``candidate_digest`` included: the server recomputes and compares it). Unset lifetimes
    are the server policy's defaults; a ``request_id`` of None is filled in when sent."""
    request = pb.RequestApprovalRequest(
        tenant=tenant,
        subject=subject,
        predicate=predicate,
        candidate=as_candidate(candidate),
        reason=reason,
        request_id=request_id or "",
    )
    if expire_time is not None:
        request.expire_time.FromDatetime(expire_time)
    if grant_lifetime is not None:
        request.grant_lifetime.FromTimedelta(grant_lifetime)
    return request


def decide_approval_request(
    approval_id: str, approve: bool, reason: str, request_id: str | None = None
) -> pb.DecideApprovalRequest:
    """One approver's decision: APPROVE when ``approve``, else DENY, with a reason."""
    decision = pb.APPROVAL_DECISION_APPROVE if approve else pb.APPROVAL_DECISION_DENY
    return pb.DecideApprovalRequest(
        approval_id=approval_id, decision=decision, reason=reason, request_id=request_id or ""
    )


def list_approvals_request(
    tenant: str = "", state: int | str | None = None, page_size: int = 0
) -> pb.ListApprovalsRequest:
    """The first page's request: one tenant (or every one the caller may see), one state
    (or all)."""
    chosen = pb.APPROVAL_STATE_UNSPECIFIED if state is None else approval_state(state)
    return pb.ListApprovalsRequest(tenant=tenant, state=chosen, page_size=page_size)
