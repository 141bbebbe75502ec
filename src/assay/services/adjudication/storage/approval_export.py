"""An export's approvals with the events that recorded them, assembled alike on both engines.

Reading an approval checks its row and each step's row against their events
(``ledger_rules.APPROVALS`` and ``APPROVAL_STEPS``); an export keeps those events, so an
auditor can prove each against the export's checkpoint. The APPROVAL_GRANTED or
APPROVAL_DENIED event a decision caused is not keyed by a row of its own: the use case
appends it right after the deciding step's event, in the same job, so it is the event
whose sequence follows that step's. An engine fetches the events after each decision's
(``following``, by primary key) and ``assemble`` keeps the one that names the approval and
the step; a verifier then checks, with the domain's rule, that the outcome it shows is the
one the steps give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assay.services.adjudication.domain.approvals import ExportedApproval
from assay.services.adjudication.domain.model import AuditEvent, AuditEventType
from assay.services.adjudication.domain.records import step_id
from assay.services.adjudication.storage.interface import ApprovalRecord

OUTCOMES = (AuditEventType.APPROVAL_GRANTED, AuditEventType.APPROVAL_DENIED)


def following(step_events: Iterable[AuditEvent]) -> list[int]:
    """The sequences right after each decision's event: where its outcome's event is."""
    return sorted(
        {e.sequence + 1 for e in step_events if e.event_type is AuditEventType.APPROVAL_DECIDED}
    )


def assemble(
    records: Iterable[ApprovalRecord],
    requested: Mapping[str, AuditEvent],
    stepped: Mapping[str, AuditEvent],
    after: Iterable[AuditEvent],
) -> list[ExportedApproval]:
    """Each approval with its APPROVAL_REQUESTED event (``requested``, by approval id), its
    steps' events (``stepped``, by ``records.step_id``) and the outcome event among
    ``after`` that names it and one of its steps."""
    outcomes = {
        (e.payload.get("approval_id", ""), e.payload.get("step", "")): e
        for e in after
        if e.event_type in OUTCOMES
    }
    found = []
    for approval, steps in records:
        decided = None
        for step in steps:
            decided = outcomes.get((approval.approval_id, str(step.seq)), decided)
        found.append(
            ExportedApproval(
                approval,
                tuple(steps),
                requested[approval.approval_id],
                tuple(stepped[step_id(s)] for s in steps),
                decided,
            )
        )
    return found
