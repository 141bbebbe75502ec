"""Each approval of an export proven against the export's signed checkpoint, offline.

An exported approval carries its APPROVAL_REQUESTED event, each step's event and the
APPROVAL_GRANTED or APPROVAL_DENIED event the deciding step caused, each with its RFC 6962
inclusion proof in the tree the manifest's checkpoint signs. Each event is proven first
(``export_events.proven_payload``); then the approval's fields against the request's event:
its content digest is recomputed from the exported fields with the server's own rules (the
candidate or table change read as ``wire.approvals`` reads it, ``approvals.approval_digest``,
``records.requested_payload``), the requester is the event's actor; then each step against
its event (``records.step_commitment``); then the outcome ``standing`` derives from the
steps against the GRANTED or DENIED event. An edit of any field fails, naming the approval
and the field (``approvalDigested``, the text the content digest hashes, names which
digested field changed). Reported: who requested (which table, for a table change), who
decided, who used it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from assay.cli.export_bindings import camel
from assay.cli.export_events import BadRecord, proven_payload
from assay.services.adjudication.domain import approvals, records
from assay.services.adjudication.domain.approvals import (
    Approval,
    ApprovalState,
    Step,
    StepKind,
)
from assay.services.adjudication.domain.digests import text_digest
from assay.services.adjudication.domain.model import Actor
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.wire.approvals import stored_action
from assay.tlog.checkpoint import Checkpoint
from assay.v1 import adjudication_service_pb2 as pb

__all__ = ["BadRecord", "Proven", "check_approval", "summary"]

# The event that records each kind of step.
STEP_EVENTS = {
    StepKind.APPROVED: pb.AUDIT_EVENT_TYPE_APPROVAL_DECIDED,
    StepKind.DENIED: pb.AUDIT_EVENT_TYPE_APPROVAL_DECIDED,
    StepKind.REVOKED: pb.AUDIT_EVENT_TYPE_APPROVAL_REVOKED,
    StepKind.CONSUMED: pb.AUDIT_EVENT_TYPE_APPROVAL_CONSUMED,
    StepKind.EXPIRED: pb.AUDIT_EVENT_TYPE_APPROVAL_EXPIRED,
}
OUTCOME_EVENTS = {
    ApprovalState.GRANTED: pb.AUDIT_EVENT_TYPE_APPROVAL_GRANTED,
    ApprovalState.DENIED: pb.AUDIT_EVENT_TYPE_APPROVAL_DENIED,
}
# Where each APPROVAL_REQUESTED payload key and each digested field is in the file.
REQUESTED_FIELDS = {
    "approval_id": "approvalId",
    "tenant": "tenant",
    "candidate_digest": "candidate.candidateDigest",
    "quorum": "quorum",
    "expire_time": "expireTime",
}
DIGESTED_FIELDS = {"grant_lifetime_micros": "grantLifetime"}
# A step's payload keys, in the order a disagreement is named.
STEP_KEYS = ("kind", "actor", "reason", "occur_time", "candidate_digest", "step", "approval_id")


@dataclass(frozen=True)
class Proven:
    """What an approval's proven events show: who asked, each decision, the outcome."""

    approval_id: str
    tenant: str
    requester: str
    decisions: tuple[tuple[str, str], ...]  # (kind, actor), in order
    outcome: str  # GRANTED, DENIED or "" (undecided)
    consumed_by: str
    revoked_by: str
    expired: bool
    table_digest: str = ""  # a reliability table change: the table's digest

    def as_dict(self) -> dict[str, Any]:
        return {
            "approvalId": self.approval_id,
            "tenant": self.tenant,
            "tableDigest": self.table_digest,
            "requester": self.requester,
            "decisions": [{"kind": k, "actor": a} for k, a in self.decisions],
            "outcome": self.outcome,
            "consumedBy": self.consumed_by,
            "revokedBy": self.revoked_by,
            "expired": self.expired,
        }


def _type_name(event_type: pb.AuditEventType.ValueType) -> str:
    return str(pb.AuditEventType.Name(event_type)).removeprefix("AUDIT_EVENT_TYPE_")


def _who(actor: Actor | None) -> str:
    return "" if actor is None else f"{actor.issuer} {actor.subject}"


def _when(stamp: Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC)


def _actor(message: pb.ExportedApproval | pb.ExportedApprovalStep, name: str) -> Actor | None:
    if not message.HasField(name):  # type: ignore[arg-type]
        return None
    given: pb.AuditActor = getattr(message, name)
    return Actor(given.issuer, given.subject)


def _event_actor(event: pb.AuditEvent) -> Actor | None:
    return Actor(event.actor.issuer, event.actor.subject) if event.HasField("actor") else None


def _approval(message: pb.ExportedApproval) -> Approval:
    """The approval as the server stored it, read from the exported fields by its rules."""
    try:
        return Approval(
            approval_id=message.approval_id,
            tenant=message.tenant,
            subject=message.subject,
            predicate=message.predicate,
            candidate=stored_action(message),
            requester=_actor(message, "requester") or Actor("", ""),
            reason=message.reason,
            request_time=_when(message.request_time),
            expire_time=_when(message.expire_time),
            grant_lifetime=message.grant_lifetime.ToTimedelta(),
            quorum=message.quorum,
            deny_ends=message.deny_ends,
        )
    except (ValueError, OverflowError) as error:
        raise BadRecord("approval", f"is unreadable: {error}") from None


def _digested_edit(approval: Approval, text: str) -> str:
    """The file's name of the first digested field of ``approval`` that differs from the
    digested ``text``."""
    try:
        recorded = json.loads(text)
    except ValueError:
        return "approvalDigested"
    given = approvals.digested_fields(approval)
    for key in sorted(given):
        if given[key] == recorded.get(key):
            continue
        if key == "candidate" and approval.candidate.probe == "":
            return "tableChange"  # a table change is stored as the candidate's detail
        if key == "candidate" and isinstance(recorded.get(key), dict):
            inner = [k for k in sorted(given[key]) if given[key][k] != recorded[key].get(k)]
            named = [k for k in inner if k != "detail"]
            return f"candidate.{camel(named[0])}" if named else "candidate"
        return DIGESTED_FIELDS.get(key, camel(key))
    return "approvalDigested"


def _check_requested(message: pb.ExportedApproval, approval: Approval, signed: Checkpoint) -> None:
    if not message.HasField("requested"):
        raise BadRecord("requested", "is missing: nothing binds the approval to the ledger")
    found = message.requested
    content = approvals.approval_digest(approval)
    claims = records.requested_payload(replace(approval, content_digest=content))
    payload = proven_payload(
        "requested",
        found.event,
        found.leaf_index,
        found.inclusion_path,
        signed,
        pb.AUDIT_EVENT_TYPE_APPROVAL_REQUESTED,
        claims,
    )
    asked = _event_actor(found.event)
    if asked != approval.requester:
        raise BadRecord(
            "requester",
            f"is {_who(approval.requester)!r}, but the APPROVAL_REQUESTED event's actor (who "
            f"asked) is {_who(asked)!r}",
        )
    for key, name in REQUESTED_FIELDS.items():
        if key == "candidate_digest" and message.HasField("table_change"):
            name = "tableChange.tableDigest"
        if payload.get(key) != claims[key]:
            raise BadRecord(
                name, f"is not what its APPROVAL_REQUESTED event recorded ({payload.get(key)!r})"
            )
    digested = message.approval_digested
    if digested and text_digest(digested) != payload.get("content"):
        raise BadRecord(
            "approvalDigested",
            "does not hash to the content digest its APPROVAL_REQUESTED event recorded",
        )
    if content != payload.get("content"):
        if not digested:
            raise BadRecord(
                "approval",
                "its fields do not hash to the content digest its APPROVAL_REQUESTED event "
                "recorded (no approvalDigested to name which was altered)",
            )
        raise BadRecord(
            _digested_edit(approval, digested),
            "is not what the APPROVAL_REQUESTED event's content digest covers",
        )


def _check_step(
    index: int, given: pb.ExportedApprovalStep, approval: Approval, signed: Checkpoint
) -> Step:
    where = f"steps[{index}]"
    try:
        kind = StepKind(given.kind)
    except ValueError:
        raise BadRecord(f"{where}.kind", f"{given.kind!r} is not a step kind") from None
    if given.step != index + 1:
        raise BadRecord(f"{where}.step", f"is {given.step}, but it is step {index + 1}")
    step = Step(
        approval.approval_id,
        index + 1,
        kind,
        _actor(given, "actor"),
        given.reason,
        _when(given.occur_time),
        given.candidate_digest,
    )
    claims = records.step_commitment(step)
    if not given.HasField("event"):
        raise BadRecord(f"{where}.event", "is missing: nothing binds the step to the ledger")
    event = given.event.event
    # The event's own type, when it records a step, so that an edited kind is named as such.
    expected = event.event_type if event.event_type in STEP_EVENTS.values() else STEP_EVENTS[kind]
    payload = proven_payload(
        f"{where}.event",
        event,
        given.event.leaf_index,
        given.event.inclusion_path,
        signed,
        expected,
        claims,
    )
    for key in STEP_KEYS:
        if payload.get(key, "") != claims[key]:
            name = "approvalId" if key == "approval_id" else f"{where}.{camel(key)}"
            raise BadRecord(
                name,
                f"is not what its {_type_name(event.event_type)} event recorded "
                f"({payload.get(key)!r})",
            )
    if _event_actor(event) != step.actor:
        raise BadRecord(f"{where}.actor", f"is not the actor of its event ({_who(step.actor)!r})")
    if event.event_type != STEP_EVENTS[kind]:
        raise BadRecord(
            f"{where}.event.event.eventType", f"does not record a step of kind {kind.value}"
        )
    if kind is StepKind.CONSUMED and step.candidate_digest != approval.candidate.candidate_digest:
        raise BadRecord(f"{where}.candidateDigest", "is not the candidate that was approved")
    return step


def _outcome(approval: Approval, steps: list[Step]) -> tuple[ApprovalState, Step, Any] | None:
    """The GRANTED or DENIED transition the steps caused, as the server records it: the
    step after which ``standing`` (at the step's time) first became one of them."""
    for i, step in enumerate(steps):
        before = approvals.standing(approval, steps[:i], step.occur_time).state
        after = approvals.standing(approval, steps[: i + 1], step.occur_time)
        if after.state is not before and after.state in OUTCOME_EVENTS:
            return after.state, step, after.grant_expire_time
    return None


def _check_outcome(
    message: pb.ExportedApproval, approval: Approval, steps: list[Step], signed: Checkpoint
) -> str:
    found = _outcome(approval, steps)
    if found is None:
        if message.HasField("decided"):
            raise BadRecord("decided", "is set, but no step granted or ended the approval")
        return ""
    state, step, grant_end = found
    if not message.HasField("decided"):
        raise BadRecord("decided", f"is missing: step {step.seq} made the approval {state.value}")
    claims = {"approval_id": approval.approval_id, "step": str(step.seq)}
    if grant_end is not None:
        claims["grant_expire_time"] = str(to_micros(grant_end))
    decided = message.decided
    payload = proven_payload(
        "decided",
        decided.event,
        decided.leaf_index,
        decided.inclusion_path,
        signed,
        OUTCOME_EVENTS[state],
        claims,
    )
    for key, value in claims.items():
        if payload.get(key) != value:
            raise BadRecord(
                f"decided.event.payload.{key}",
                f"is {payload.get(key)!r}, but the steps give {value!r}",
            )
    return state.value


def check_approval(message: pb.ExportedApproval, signed: Checkpoint) -> Proven:
    """What the approval's proven events show; ``BadRecord`` naming the field at the first
    check that fails."""
    approval = _approval(message)
    _check_requested(message, approval, signed)
    steps = [_check_step(i, s, approval, signed) for i, s in enumerate(message.steps)]
    outcome = _check_outcome(message, approval, steps, signed)
    decisions = tuple(
        (s.kind.value, _who(s.actor))
        for s in steps
        if s.kind in (StepKind.APPROVED, StepKind.DENIED)
    )
    by_kind = {s.kind: _who(s.actor) for s in steps}
    return Proven(
        approval.approval_id,
        approval.tenant,
        _who(approval.requester),
        decisions,
        outcome,
        by_kind.get(StepKind.CONSUMED, ""),
        by_kind.get(StepKind.REVOKED, ""),
        StepKind.EXPIRED in by_kind,
        message.table_change.table_digest if message.HasField("table_change") else "",
    )


def summary(found: Proven) -> str:
    """One line an auditor reads: who asked, who decided what, and how it ended."""
    decided = ", ".join(f"{kind.lower()} by {who}" for kind, who in found.decisions)
    what = f"table {found.table_digest} " if found.table_digest else ""
    parts = [f"approval {found.approval_id} ({found.tenant}): {what}requested by {found.requester}"]
    parts.append(decided or "no decision")
    if found.outcome:
        parts.append(found.outcome.lower())
    if found.consumed_by:
        parts.append(f"used by {found.consumed_by}")
    if found.revoked_by:
        parts.append(f"revoked by {found.revoked_by}")
    if found.expired:
        parts.append("expired")
    return "; ".join(parts)
