"""An exported approval as its ``ExportedApproval`` message, every event with its proof.

The approval's stored fields are given as ``Approval`` gives them (the candidate parsed
back from the JSON it was stored and digested as), beside the text its content digest
hashes (``approval_digested``), so a verifier recomputes the digest from the fields with
the domain's rule and, when an edit breaks it, names the field.
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf import json_format

from assay.services.adjudication.domain import approvals
from assay.services.adjudication.domain.approvals import ExportedApproval, Step
from assay.services.adjudication.domain.model import Actor
from assay.services.adjudication.wire.convert import event_inclusion
from assay.services.adjudication.wire.scalars import timestamp
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import plan_pb2

Proofs = Mapping[int, list[bytes]]


def _actor(actor: Actor | None) -> pb.AuditActor | None:
    return None if actor is None else pb.AuditActor(issuer=actor.issuer, subject=actor.subject)


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
        actor=_actor(value.actor),
        reason=value.reason,
        occur_time=timestamp(value.occur_time),
        candidate_digest=value.candidate_digest,
        event=event,
    )


def exported(value: ExportedApproval, proofs: Proofs) -> pb.ExportedApproval:
    """The message, each event with its inclusion proof (``proofs``, by sequence)."""
    approval = value.approval
    candidate = plan_pb2.AcquisitionCandidate()
    json_format.Parse(approval.candidate.detail, candidate, ignore_unknown_fields=True)
    message = pb.ExportedApproval(
        approval_id=approval.approval_id,
        tenant=approval.tenant,
        subject=approval.subject,
        predicate=approval.predicate,
        candidate=candidate,
        requester=_actor(approval.requester),
        reason=approval.reason,
        request_time=timestamp(approval.request_time),
        expire_time=timestamp(approval.expire_time),
        quorum=approval.quorum,
        deny_ends=approval.deny_ends,
        requested=event_inclusion(value.requested, proofs),
        approval_digested=approvals.approval_digested(approval),
        steps=[
            _step(s, event_inclusion(e, proofs))
            for s, e in zip(value.steps, value.step_events, strict=True)
        ],
    )
    message.grant_lifetime.FromTimedelta(approval.grant_lifetime)
    if value.decided is not None:
        message.decided.CopyFrom(event_inclusion(value.decided, proofs))
    return message
