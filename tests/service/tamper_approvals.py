"""The tamper matrix's approvals: written into the pristine database, read back on a copy.

ApprovalService refuses a dev-mode caller (approvals need an identity), and the matrix's
server is dev mode for everything else. So the approvals are written, and read, through
the running server's own ``ApprovalServicer`` (the object its ApprovalService RPCs call:
request translated, ``Approvals`` use case, store, response rendered) inside a task bound
to an authenticated principal, as the runtime binds one for an RPC after its gate admits
the caller. A read's error becomes a status code through the runtime's own error table
(``tamper_support.status_of``), the code the runtime would send a client.

The approvals (roles in ``Ids.approvals``): ``consumed`` (quorum 2: approved by dave and
erin, then used by its requester), ``pending`` (quorum 2, approved by erin only), both of
tenant-a, and ``denied`` (quorum 1, denied by dave, which ends it) of tenant-b, whose
records the tenant-deletion control deletes (approvals are kept: never deleted); and
``table``, a reliability table change of tenant-a (the default quorum of 2: granted by dave
and erin, not yet used).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from assay.candidate_digest import candidate_digest
from assay.reliability_table import table_digest
from assay.runtime.auth.principal import ALL_TENANTS, Principal, Role, bind_principal
from assay.services.adjudication.adapters.approval_servicer import ApprovalServicer
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

T = TypeVar("T")

ISSUER = "tamper-matrix"
REQUESTER = "operator"
SUBJECT, PREDICATE = "payments-api", "idempotency.mode"
# Spawning a process needs two distinct approvers, a network call one; one denial ends it.
POLICY: dict[str, Any] = {"deny_ends": True, "quorum": {"PROCESS_SPAWN": 2, "NETWORK_CALL": 1}}
SPAWN, NETWORK = plan_pb2.SIDE_EFFECT_CLASS_PROCESS_SPAWN, plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL
# The table change: ci_status lowered to 0.7 (no other entry holds 0.7 but static_analysis).
TABLE = {**DEFAULT_RELIABILITY, "ci_status": 0.7}
TABLE_DIGEST = table_digest(TABLE)


def principal(name: str) -> Principal:
    roles = frozenset({Role.OPERATOR, Role.APPROVER, Role.AUDITOR})
    return Principal(ISSUER, name, roles, frozenset({ALL_TENANTS}))


async def as_(name: str, method: Callable[[Any, Any], Awaitable[T]], request: Any) -> T:
    """The servicer's ``method`` called on ``request`` in a task of its own bound to principal
    ``name`` (the binding ends with the task; the servicer reads no call context)."""

    async def bound() -> T:
        bind_principal(principal(name))
        return await method(request, None)

    return await asyncio.create_task(bound())


def candidate(effect: plan_pb2.SideEffectClass.ValueType) -> plan_pb2.AcquisitionCandidate:
    """A candidate as the planner writes it (REQUIRES_APPROVAL for ``effect``), its digest
    included."""
    message = plan_pb2.AcquisitionCandidate(
        candidate_id="query_ci_status/process_result",
        probe=plan_pb2.PROBE_KIND_QUERY_CI_STATUS,
        target_signal_class=plan_pb2.SIGNAL_CLASS_PROCESS_RESULT,
        availability=plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
        required_side_effects=[effect],
        missing_grants=[effect],
        blocking_reasons=[plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED],
    )
    message.candidate_digest = candidate_digest(SUBJECT, PREDICATE, message)
    return message


async def _decide(servicer: ApprovalServicer, approval_id: str, who: str, approve: bool) -> None:
    decision = pb.APPROVAL_DECISION_APPROVE if approve else pb.APPROVAL_DECISION_DENY
    request = pb.DecideApprovalRequest(
        approval_id=approval_id,
        decision=decision,
        reason=f"{who} read the plan",
        request_id=f"{approval_id}-{who}",
    )
    await as_(who, servicer.DecideApproval, request)


async def populate(servicer: ApprovalServicer) -> dict[str, str]:
    """The three approvals, through the servicer; their ids by role."""
    ids: dict[str, str] = {}
    roles = (("consumed", SPAWN, "tenant-a"), ("pending", SPAWN, "tenant-a"))
    for role, effect, tenant in (*roles, ("denied", NETWORK, "tenant-b")):
        request = pb.RequestApprovalRequest(
            tenant=tenant,
            subject=SUBJECT,
            predicate=PREDICATE,
            candidate=candidate(effect),
            reason=f"CI status would settle the conflict ({role})",
            request_id=f"request-{role}",
        )
        raw = await as_(REQUESTER, servicer.RequestApproval, request)
        ids[role] = pb.RequestApprovalResponse.FromString(raw).approval.approval_id
    await _decide(servicer, ids["consumed"], "dave", approve=True)
    await _decide(servicer, ids["consumed"], "erin", approve=True)
    use = pb.ConsumeApprovalRequest(
        approval_id=ids["consumed"],
        candidate_digest=candidate(SPAWN).candidate_digest,
        request_id="consume",
    )
    await as_(REQUESTER, servicer.ConsumeApproval, use)
    await _decide(servicer, ids["pending"], "erin", approve=True)
    await _decide(servicer, ids["denied"], "dave", approve=False)
    change = adj.ReliabilityTableChange(table_digest=TABLE_DIGEST, sources=TABLE, tree_size=1)
    request = pb.RequestApprovalRequest(
        tenant="tenant-a", table_change=change, reason="calibrated", request_id="request-table"
    )
    raw = await as_(REQUESTER, servicer.RequestApproval, request)
    ids["table"] = pb.RequestApprovalResponse.FromString(raw).approval.approval_id
    await _decide(servicer, ids["table"], "dave", approve=True)
    await _decide(servicer, ids["table"], "erin", approve=True)
    return ids


def read(servicer: ApprovalServicer, rpc: str, approval_id: str) -> Awaitable[object]:
    """GetApproval(``approval_id``) or ListApprovals (every tenant, one page), as an
    auditor."""
    if rpc == "GetApproval":
        return as_("auditor", servicer.GetApproval, pb.GetApprovalRequest(approval_id=approval_id))
    return as_("auditor", servicer.ListApprovals, pb.ListApprovalsRequest(page_size=100))


def write(servicer: ApprovalServicer, rpc: str, role: str, approval_id: str) -> Awaitable[object]:
    """A change a tampered approval must not take: ConsumeApproval by its requester (for its
    own candidate), or DecideApproval approving it by erin (who decided on ``denied`` only)."""
    if rpc == "ConsumeApproval":
        digest = candidate(NETWORK if role == "denied" else SPAWN).candidate_digest
        if role == "table":
            digest = TABLE_DIGEST
        use = pb.ConsumeApprovalRequest(
            approval_id=approval_id, candidate_digest=digest, request_id=f"again-{role}"
        )
        return as_(REQUESTER, servicer.ConsumeApproval, use)
    decide = pb.DecideApprovalRequest(
        approval_id=approval_id,
        decision=pb.APPROVAL_DECISION_APPROVE,
        reason="erin read the plan",
        request_id=f"late-{role}",
    )
    return as_("erin", servicer.DecideApproval, decide)
