"""ApprovalService messages to approval domain values and back.

A request's candidate becomes an ``ApprovalCandidate``: the fields the rules read (enum
names without their prefix, as the domain spells them) and the whole candidate as
deterministic JSON (``detail``), which is stored, digested and given back as the
``AcquisitionCandidate`` it was. The digest the candidate claims is checked against the
one ``assay.candidate_digest`` derives from it, the same rule the planner wrote it with.
A ``ReliabilityTableChange`` becomes a ``TableChange`` (stored as a candidate by
``table_changes``) and is given back as the message it was.
"""

from __future__ import annotations

from datetime import timedelta

from google.protobuf import json_format

from assay.candidate_digest import candidate_digest
from assay.errors import FieldViolation, InvalidArgument, Reason
from assay.prototime import duration_problem
from assay.services.adjudication.domain.approvals import (
    Approval,
    ApprovalAsk,
    ApprovalCandidate,
    ApprovalChange,
    ApprovalState,
    ApprovalView,
    ChangeKind,
    Decision,
    Step,
)
from assay.services.adjudication.domain.model import Actor
from assay.services.adjudication.domain.table_changes import (
    TableChange,
    as_candidate,
    stored_change,
)
from assay.services.adjudication.wire.scalars import (
    enum_name,
    from_proto_enum,
    from_timestamp,
    timestamp,
    to_proto_enum,
)
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2


def _names(enum_type: object, numbers: object, prefix: str) -> tuple[str, ...]:
    return tuple(enum_name(enum_type, n).removeprefix(prefix) for n in numbers)  # type: ignore[attr-defined]


def candidate(message: plan_pb2.AcquisitionCandidate) -> ApprovalCandidate:
    detail = json_format.MessageToJson(message, indent=None, sort_keys=True)
    return ApprovalCandidate(
        candidate_id=message.candidate_id,
        probe=enum_name(plan_pb2.ProbeKind, message.probe).removeprefix("PROBE_KIND_"),
        target_signal_class=enum_name(
            plan_pb2.SignalClass, message.target_signal_class
        ).removeprefix("SIGNAL_CLASS_"),
        availability=enum_name(plan_pb2.Availability, message.availability).removeprefix(
            "AVAILABILITY_"
        ),
        required_side_effects=_names(
            plan_pb2.SideEffectClass, message.required_side_effects, "SIDE_EFFECT_CLASS_"
        ),
        missing_grants=_names(
            plan_pb2.SideEffectClass, message.missing_grants, "SIDE_EFFECT_CLASS_"
        ),
        blocking_reasons=_names(
            plan_pb2.AvailabilityReason, message.blocking_reasons, "AVAILABILITY_REASON_"
        ),
        candidate_digest=message.candidate_digest,
        detail=detail,
    )


def table_change(message: adj.ReliabilityTableChange) -> TableChange:
    return TableChange.of(message.table_digest, dict(message.sources), message.tree_size)


def table_change_message(change: TableChange) -> adj.ReliabilityTableChange:
    return adj.ReliabilityTableChange(
        table_digest=change.table_digest, sources=dict(change.sources), tree_size=change.tree_size
    )


def stored_action(message: pb.Approval | adj.ExportedApproval) -> ApprovalCandidate:
    """The candidate an approval message stores: its table change as ``table_changes``
    stores it, else its candidate (the export's verifier reads it back so)."""
    if message.HasField("table_change"):
        return as_candidate(table_change(message.table_change))
    return candidate(message.candidate)


def ask(request: pb.RequestApprovalRequest) -> ApprovalAsk:
    """The request as the use case takes it; INVALID_ARGUMENT for times no value holds."""
    problems: list[FieldViolation] = []
    expire_time = None
    if request.HasField("expire_time"):
        try:
            expire_time = from_timestamp(request.expire_time)
        except ValueError as error:
            problems.append(FieldViolation("expire_time", str(error)))
    grant_lifetime = None
    if request.HasField("grant_lifetime"):
        given = request.grant_lifetime
        problem = duration_problem(given.seconds, given.nanos)
        if problem is not None:
            problems.append(FieldViolation("grant_lifetime", problem))
        else:
            grant_lifetime = timedelta(seconds=given.seconds, microseconds=given.nanos // 1000)
    change = table_change(request.table_change) if request.HasField("table_change") else None
    if change is not None and request.HasField("candidate"):
        problems.append(
            FieldViolation("table_change", "give a candidate or a table change, not both")
        )
    if change is None and not request.HasField("candidate"):
        problems.append(
            FieldViolation(
                "candidate", "required: the candidate as the plan gave it (or a table_change)"
            )
        )
    if problems:
        first = problems[0]
        raise InvalidArgument(Reason.INVALID_FIELD, f"{first.field}: {first.description}", problems)
    if change is not None:
        return ApprovalAsk(
            tenant=request.tenant,
            subject=request.subject,
            predicate=request.predicate,
            candidate=None,
            reason=request.reason,
            expire_time=expire_time,
            grant_lifetime=grant_lifetime,
            expected_digest="",
            table_change=change,
        )
    return ApprovalAsk(
        tenant=request.tenant,
        subject=request.subject,
        predicate=request.predicate,
        candidate=candidate(request.candidate),
        reason=request.reason,
        expire_time=expire_time,
        grant_lifetime=grant_lifetime,
        expected_digest=candidate_digest(request.subject, request.predicate, request.candidate),
    )


def decision(number: int) -> Decision | None:
    return from_proto_enum(Decision, enum_name(pb.ApprovalDecision, number), "APPROVAL_DECISION_")


ChangeRequest = pb.DecideApprovalRequest | pb.RevokeApprovalRequest | pb.ConsumeApprovalRequest


def change(request: ChangeRequest) -> ApprovalChange:
    """A decision, revocation or consumption request as the change it asks for."""
    if isinstance(request, pb.DecideApprovalRequest):
        return ApprovalChange(
            request.approval_id, ChangeKind.DECIDE, decision(request.decision), request.reason
        )
    if isinstance(request, pb.RevokeApprovalRequest):
        return ApprovalChange(request.approval_id, ChangeKind.REVOKE, reason=request.reason)
    return ApprovalChange(
        request.approval_id, ChangeKind.CONSUME, candidate_digest=request.candidate_digest
    )


def state(number: int) -> ApprovalState | None:
    """The state a listing filters on (None: every state); INVALID_FIELD for an unknown one."""
    if number == pb.APPROVAL_STATE_UNSPECIFIED:
        return None
    found: ApprovalState | None = from_proto_enum(
        ApprovalState, enum_name(pb.ApprovalState, number), "APPROVAL_STATE_"
    )
    if found is None:
        raise InvalidArgument(
            Reason.INVALID_FIELD,
            f"state: unknown ApprovalState value {number}",
            [FieldViolation("state", f"unknown ApprovalState value {number}")],
        )
    return found


def actor_message(actor: Actor | None) -> adj.AuditActor | None:
    return None if actor is None else adj.AuditActor(issuer=actor.issuer, subject=actor.subject)


def _step(value: Step) -> pb.ApprovalStep:
    return pb.ApprovalStep(
        kind=to_proto_enum(pb.ApprovalStepKind, "APPROVAL_STEP_KIND_", value.kind),
        actor=actor_message(value.actor),
        reason=value.reason,
        occur_time=timestamp(value.occur_time),
    )


def request_part(value: Approval) -> pb.Approval:
    """The fields the request stored (1–12 and 17 of ``Approval``; ``ExportedApproval``
    numbers and types them the same, so the export reads them from these bytes)."""
    change = stored_change(value.candidate)
    shown = None
    if change is None:
        shown = plan_pb2.AcquisitionCandidate()
        json_format.Parse(value.candidate.detail, shown, ignore_unknown_fields=True)
    message = pb.Approval(
        approval_id=value.approval_id,
        tenant=value.tenant,
        subject=value.subject,
        predicate=value.predicate,
        candidate=shown,
        table_change=None if change is None else table_change_message(change),
        requester=actor_message(value.requester),
        reason=value.reason,
        request_time=timestamp(value.request_time),
        expire_time=timestamp(value.expire_time),
        quorum=value.quorum,
        deny_ends=value.deny_ends,
    )
    message.grant_lifetime.FromTimedelta(value.grant_lifetime)
    return message


def approval(view: ApprovalView) -> pb.Approval:
    message = request_part(view.approval)
    message.state = to_proto_enum(pb.ApprovalState, "APPROVAL_STATE_", view.standing.state)
    message.steps.extend(_step(s) for s in view.steps)
    if view.standing.grant_expire_time is not None:
        message.grant_expire_time.CopyFrom(timestamp(view.standing.grant_expire_time))
    return message
