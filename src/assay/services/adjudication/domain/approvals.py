"""Approvals: a person grants or refuses one planned acquisition, once, for that action.

An ``Approval`` is the stored request (insert-only); each ``Step`` after it (a decision,
a revocation, the use, the recorded expiry) is another insert-only row. The state is
derived from the steps and the clock on every read (``standing``), never stored, so no
write can overwrite a denial, and the rules below decide every change from that one
derivation: who may decide (never the requester, each approver once), when the quorum
grants, when one denial ends the request, and that a grant is used once, by its
requester, for the candidate digest it was granted for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

from assay.errors import AlreadyExists, FailedPrecondition, PermissionDenied, Reason
from assay.services.adjudication.domain.digests import canonical_json, digest
from assay.services.adjudication.domain.model import Actor, AuditEvent
from assay.services.adjudication.domain.times import rfc3339

if TYPE_CHECKING:  # table_changes builds on ApprovalCandidate, defined here
    from assay.services.adjudication.domain.table_changes import TableChange

MAX_REASON_CHARS = 2_000


class ApprovalState(Enum):
    PENDING = "PENDING"
    GRANTED = "GRANTED"
    DENIED = "DENIED"
    EXPIRED = "EXPIRED"
    REVOKED = "REVOKED"
    CONSUMED = "CONSUMED"

    @property
    def final(self) -> bool:
        return self not in (ApprovalState.PENDING, ApprovalState.GRANTED)


class StepKind(Enum):
    APPROVED = "APPROVED"
    DENIED = "DENIED"
    REVOKED = "REVOKED"
    CONSUMED = "CONSUMED"
    EXPIRED = "EXPIRED"


class Decision(Enum):
    APPROVE = "APPROVE"
    DENY = "DENY"


@dataclass(frozen=True)
class ApprovalCandidate:
    """The plan's candidate as far as the rules read it; ``detail`` is the whole candidate
    as the plan gave it (JSON, shown to approvers, opaque here)."""

    candidate_id: str
    probe: str
    target_signal_class: str
    availability: str
    required_side_effects: tuple[str, ...]
    missing_grants: tuple[str, ...]
    blocking_reasons: tuple[str, ...]
    candidate_digest: str
    detail: str


@dataclass(frozen=True)
class Approval:
    approval_id: str
    tenant: str
    subject: str
    predicate: str
    candidate: ApprovalCandidate
    requester: Actor
    reason: str
    request_time: datetime
    expire_time: datetime
    grant_lifetime: timedelta
    quorum: int
    deny_ends: bool
    content_digest: str = ""


@dataclass(frozen=True)
class Step:
    """One insert-only step; ``seq`` is 1, 2, ... within its approval."""

    approval_id: str
    seq: int
    kind: StepKind
    actor: Actor | None
    reason: str
    occur_time: datetime
    candidate_digest: str = ""


@dataclass(frozen=True)
class Standing:
    """An approval's derived state at one instant; ``granted_at`` once the quorum approved,
    ``decided_by`` the step that reached the quorum or ended the request."""

    state: ApprovalState
    grant_expire_time: datetime | None = None
    decided_by: Step | None = None


@dataclass(frozen=True)
class ApprovalAsk:
    """A RequestApproval as the wire read it: a ``candidate`` (with the digest its action
    has, ``expected_digest``) or a reliability table change (``table_change``), never
    both."""

    tenant: str
    subject: str
    predicate: str
    candidate: ApprovalCandidate | None
    reason: str
    expire_time: datetime | None
    grant_lifetime: timedelta | None
    expected_digest: str
    table_change: TableChange | None = None


@dataclass(frozen=True)
class ApprovalView:
    """An approval, its steps and its state at the moment it was read."""

    approval: Approval
    steps: tuple[Step, ...]
    standing: Standing


@dataclass(frozen=True)
class ExportedApproval:
    """One approval of an export with the events that recorded it (each checked against its
    row): its APPROVAL_REQUESTED event, each step's event (in ``seq`` order), and the
    APPROVAL_GRANTED or APPROVAL_DENIED event a step caused (None when none did)."""

    approval: Approval
    steps: tuple[Step, ...]
    requested: AuditEvent
    step_events: tuple[AuditEvent, ...]
    decided: AuditEvent | None


def approval_digest(approval: Approval) -> str:
    """The digest of everything the request stored (``content_digest`` aside): what its
    APPROVAL_REQUESTED event commits to, so an edited row disagrees with the ledger."""
    return digest(digested_fields(approval))


def approval_digested(approval: Approval) -> str:
    """The text ``approval_digest`` hashes: an export gives it so that a verifier can name
    the field an edit changed."""
    return canonical_json(digested_fields(approval))


def digested_fields(approval: Approval) -> dict[str, Any]:
    """The fields ``approval_digest`` covers, as it spells them."""
    candidate = approval.candidate
    return {
        "approval_id": approval.approval_id,
        "tenant": approval.tenant,
        "subject": approval.subject,
        "predicate": approval.predicate,
        "candidate": {
            "candidate_id": candidate.candidate_id,
            "probe": candidate.probe,
            "target_signal_class": candidate.target_signal_class,
            "availability": candidate.availability,
            "required_side_effects": list(candidate.required_side_effects),
            "missing_grants": list(candidate.missing_grants),
            "blocking_reasons": list(candidate.blocking_reasons),
            "candidate_digest": candidate.candidate_digest,
            "detail": candidate.detail,
        },
        "requester": [approval.requester.issuer, approval.requester.subject],
        "reason": approval.reason,
        "request_time": rfc3339(approval.request_time),
        "expire_time": rfc3339(approval.expire_time),
        "grant_lifetime_micros": str(approval.grant_lifetime // timedelta(microseconds=1)),
        "quorum": str(approval.quorum),
        "deny_ends": "true" if approval.deny_ends else "false",
    }


def standing(approval: Approval, steps: Sequence[Step], at: datetime) -> Standing:
    """The state ``steps`` (in ``seq`` order) and the clock give at ``at``."""
    approvers: set[Actor] = set()
    granted: Step | None = None
    for step in steps:
        if step.kind is StepKind.CONSUMED:
            return Standing(ApprovalState.CONSUMED, _grant_end(approval, granted), step)
        if step.kind is StepKind.REVOKED:
            return Standing(ApprovalState.REVOKED, _grant_end(approval, granted), step)
        if step.kind is StepKind.EXPIRED:
            return Standing(ApprovalState.EXPIRED, _grant_end(approval, granted), step)
        if step.kind is StepKind.DENIED and approval.deny_ends and granted is None:
            return Standing(ApprovalState.DENIED, None, step)
        if step.kind is StepKind.APPROVED and granted is None and step.actor is not None:
            approvers.add(step.actor)
            if len(approvers) >= approval.quorum:
                granted = step
    if granted is not None:
        end = _grant_end(approval, granted)
        assert end is not None
        state = ApprovalState.EXPIRED if at >= end else ApprovalState.GRANTED
        return Standing(state, end, granted)
    if at >= approval.expire_time:
        return Standing(ApprovalState.EXPIRED)
    return Standing(ApprovalState.PENDING)


def _grant_end(approval: Approval, granted: Step | None) -> datetime | None:
    return None if granted is None else granted.occur_time + approval.grant_lifetime


def expires_at(approval: Approval, steps: Sequence[Step], at: datetime) -> datetime | None:
    """When the approval will expire if nothing else happens first (None once final)."""
    now = standing(approval, steps, at)
    if now.state is ApprovalState.PENDING:
        return approval.expire_time
    if now.state is ApprovalState.GRANTED:
        return now.grant_expire_time
    return None


def _refuse_unless(
    state: ApprovalState, allowed: tuple[ApprovalState, ...], reason: Reason
) -> None:
    if state not in allowed:
        raise FailedPrecondition(
            reason,
            f"the approval is {state.value}",
            metadata={"state": f"APPROVAL_STATE_{state.value}"},
        )


def decide(
    approval: Approval,
    steps: Sequence[Step],
    actor: Actor,
    decision: Decision,
    reason: str,
    at: datetime,
) -> Step:
    """The step recording ``actor``'s decision, or the refusal: the requester never decides,
    each approver decides once, and only a PENDING approval takes decisions."""
    if actor == approval.requester:
        raise PermissionDenied(
            Reason.APPROVER_IS_REQUESTER,
            "the requester of an approval may not decide on it",
        )
    if any(s.actor == actor and s.kind in (StepKind.APPROVED, StepKind.DENIED) for s in steps):
        raise AlreadyExists(
            Reason.APPROVER_ALREADY_DECIDED,
            "this approver has decided on this approval already",
        )
    _refuse_unless(
        standing(approval, steps, at).state, (ApprovalState.PENDING,), Reason.APPROVAL_NOT_PENDING
    )
    kind = StepKind.APPROVED if decision is Decision.APPROVE else StepKind.DENIED
    return Step(approval.approval_id, len(steps) + 1, kind, actor, reason, at)


def revoke(
    approval: Approval, steps: Sequence[Step], actor: Actor, reason: str, at: datetime
) -> Step:
    """The step withdrawing a PENDING or GRANTED approval, or the refusal."""
    _refuse_unless(
        standing(approval, steps, at).state,
        (ApprovalState.PENDING, ApprovalState.GRANTED),
        Reason.APPROVAL_NOT_PENDING,
    )
    return Step(approval.approval_id, len(steps) + 1, StepKind.REVOKED, actor, reason, at)


def consume(
    approval: Approval,
    steps: Sequence[Step],
    actor: Actor,
    candidate_digest: str,
    at: datetime,
) -> Step:
    """The step using a grant, or the refusal: only the requester, only a GRANTED approval,
    only for the candidate digest it was granted for."""
    if actor != approval.requester:
        raise PermissionDenied(
            Reason.IDENTITY_MISMATCH, "only the requester of an approval may use it"
        )
    state = standing(approval, steps, at).state
    if state is ApprovalState.CONSUMED:
        raise FailedPrecondition(Reason.APPROVAL_ALREADY_CONSUMED, "the approval was used already")
    _refuse_unless(state, (ApprovalState.GRANTED,), Reason.APPROVAL_NOT_GRANTED)
    if candidate_digest != approval.candidate.candidate_digest:
        raise FailedPrecondition(
            Reason.APPROVAL_CANDIDATE_MISMATCH,
            "the approval was granted for another candidate",
        )
    return Step(
        approval.approval_id,
        len(steps) + 1,
        StepKind.CONSUMED,
        actor,
        "",
        at,
        candidate_digest,
    )


class ChangeKind(Enum):
    DECIDE = "DECIDE"
    REVOKE = "REVOKE"
    CONSUME = "CONSUME"


@dataclass(frozen=True)
class ApprovalChange:
    """What a caller asks of an approval: a decision (``decision`` None when the request
    named none), a revocation, or the use of its grant for ``candidate_digest``."""

    approval_id: str
    kind: ChangeKind
    decision: Decision | None = None
    reason: str = ""
    candidate_digest: str = ""


def changed(
    change: ApprovalChange, approval: Approval, steps: Sequence[Step], actor: Actor, at: datetime
) -> Step:
    """The step ``change`` records on ``approval``, or the refusal (``decide``, ``revoke``,
    ``consume``); a missing decision is refused as a field before this runs."""
    if change.kind is ChangeKind.DECIDE:
        chosen = change.decision or Decision.DENY
        return decide(approval, steps, actor, chosen, change.reason, at)
    if change.kind is ChangeKind.REVOKE:
        return revoke(approval, steps, actor, change.reason, at)
    return consume(approval, steps, actor, change.candidate_digest, at)


def expiry(approval: Approval, steps: Sequence[Step], at: datetime) -> Step | None:
    """The EXPIRED step to record, when the clock has expired the approval and no step says
    so yet (written once, by whichever process notices first)."""
    if standing(approval, steps, at).state is not ApprovalState.EXPIRED:
        return None
    if any(s.kind is StepKind.EXPIRED for s in steps):
        return None
    return Step(approval.approval_id, len(steps) + 1, StepKind.EXPIRED, None, "", at)
