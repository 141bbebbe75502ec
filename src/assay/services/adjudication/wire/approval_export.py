"""An exported approval as its ``ExportedApproval`` message, every event with its proof.

The approval's stored fields are given as ``Approval`` gives them (the candidate parsed
back from the JSON it was stored and digested as), beside the text its content digest
hashes (``approval_digested``), so a verifier recomputes the digest from the fields with
the domain's rule and, when an edit breaks it, names the field.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.services.adjudication.domain import approvals
from assay.services.adjudication.domain.approvals import ExportedApproval, Step
from assay.services.adjudication.wire import approvals as approvals_wire
from assay.services.adjudication.wire.convert import event_inclusion
from assay.services.adjudication.wire.scalars import timestamp
from assay.v1 import adjudication_service_pb2 as pb

Proofs = Mapping[int, list[bytes]]


def sequences(value: ExportedApproval) -> list[int]:
    """The sequences of every event the approval carries (their proofs are needed)."""
    found = [value.requested, *value.step_events]
    if value.decided is not None:
        found.append(value.decided)
    return [event.sequence for event in found]


def _step(value: Step, event: pb.EventInclusion) -> pb.ExportedApprovalStep:
    return pb.ExportedApprovalStep(
        step=value.seq,
        kind=value.kind.value,
        actor=approvals_wire.actor_message(value.actor),
        reason=value.reason,
        occur_time=timestamp(value.occur_time),
        candidate_digest=value.candidate_digest,
        event=event,
    )


def exported(value: ExportedApproval, proofs: Proofs) -> pb.ExportedApproval:
    """The message, each event with its inclusion proof (``proofs``, by sequence)."""
    approval = value.approval
    request = approvals_wire.request_part(approval).SerializeToString(deterministic=True)
    message = pb.ExportedApproval.FromString(request)  # fields 1-12 are Approval's
    message.requested.CopyFrom(event_inclusion(value.requested, proofs))
    message.approval_digested = approvals.approval_digested(approval)
    message.steps.extend(
        _step(s, event_inclusion(e, proofs))
        for s, e in zip(value.steps, value.step_events, strict=True)
    )
    if value.decided is not None:
        message.decided.CopyFrom(event_inclusion(value.decided, proofs))
    return message
