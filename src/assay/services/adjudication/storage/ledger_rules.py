"""What each kind of record must match in the ledger: the read checks' rules, for both engines.

``ledger_checks`` (SQLite) and ``postgres.ledger_checks`` differ only in how
they fetch a record's events and the stored hashes an event links to; which
event records a kind, which payload key names it, what is compared and the
DATA_LOSS a disagreement raises are here, once, so the two engines cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from assay.services.adjudication.domain import ledger, records
from assay.services.adjudication.domain.approvals import Approval, Step
from assay.services.adjudication.domain.model import (
    AuditEvent,
    AuditEventType,
    Case,
    ChainHead,
    GoldLabelRevision,
    RecordKind,
    Resolution,
    Review,
    Reviewer,
)
from assay.services.adjudication.storage import rows

T = TypeVar("T")


def seeded_events(
    head: ChainHead, cases: Sequence[Case], gold_labels: Sequence[GoldLabelRevision], at: datetime
) -> tuple[list[tuple[Any, ...]], ChainHead]:
    """The audit-event rows (``rows.audit_params``) that extend the chain after ``head`` for
    rows seeded in bulk, and the head after them: each case's CASE_ENQUEUED and each gold
    label's GOLD_LABEL_FROZEN, with the payloads their operations write, so reads and exports
    (which check records against their events) accept seeded rows on either engine."""
    events: list[tuple[AuditEventType, records.Commitment, str]] = [
        (AuditEventType.CASE_ENQUEUED, records.enqueued_payload(c), c.tenant) for c in cases
    ]
    events += [
        (AuditEventType.GOLD_LABEL_FROZEN, records.gold_commitment(g), g.tenant)
        for g in gold_labels
    ]
    params = []
    for event_type, payload, tenant in events:
        event, payload_json = ledger.extend(head, event_type, payload, at)
        params.append(rows.audit_params(event, payload_json, tenant))
        head = ChainHead(event.sequence, event.hash)
    return params, head


@dataclass(frozen=True)
class Rule(Generic[T]):
    """A kind of record and the event that recorded it: ``event_type`` events whose payload
    ``key`` is the record's ``lookup``, matched by ``record_id`` and compared on the
    ``commitment`` recomputed from the record. The key is the first of the event's record
    keys (``records.EVENT_KEYS``); a record named by that key alone is matched by it."""

    event_type: AuditEventType
    lookup: Callable[[T], str]
    commitment: Callable[[T], records.Commitment | None]
    # How a record named by more than its key is matched (a resolution by case and round).
    named_by: Callable[[T], str] | None = None
    # More event types recording the same kind (an approval step is recorded by one of four).
    also: tuple[AuditEventType, ...] = ()

    @property
    def event_types(self) -> tuple[AuditEventType, ...]:
        return (self.event_type, *self.also)

    @property
    def key(self) -> str:
        """The payload key the events are fetched by."""
        return records.EVENT_KEYS[self.event_type.value][1][0]

    def record_id(self, value: T) -> str:
        """The id its event's ``records.record_key`` names ``value`` by."""
        return (self.named_by or self.lookup)(value)

    def ids(self, values: Iterable[T]) -> list[str]:
        """The payload values to fetch the events of ``values`` by, each once, sorted."""
        return sorted({self.lookup(v) for v in values})

    def match(self, values: Sequence[T], events: Iterable[AuditEvent]) -> dict[str, AuditEvent]:
        """DATA_LOSS at the first of ``values`` that disagrees with its event (or has none)
        among ``events``; else the events, by record id."""
        found: dict[str, AuditEvent] = {}
        for event in events:
            named = records.record_key(event.event_type.value, event.payload)
            held = found.get(named[1]) if named is not None else None
            # The first event recording a record is its record: a later one cannot replace it.
            if named is not None and (held is None or event.sequence < held.sequence):
                found[named[1]] = event
        kind, _ = records.EVENT_KEYS[self.event_type.value]
        for value in values:
            name = self.record_id(value)
            recorded = found.get(name)
            committed = (
                records.committed(recorded.event_type.value, recorded.payload) if recorded else None
            )
            why = records.mismatch(self.commitment(value), committed)
            if why:
                raise records.record_loss(kind, name, why)
        return found


REVIEWERS: Rule[Reviewer] = Rule(
    AuditEventType.REVIEWER_REGISTERED, lambda r: r.reviewer_id, records.reviewer_commitment
)
CASES: Rule[Case] = Rule(AuditEventType.CASE_ENQUEUED, lambda c: c.case_id, records.case_commitment)
REVIEWS: Rule[Review] = Rule(
    AuditEventType.REVIEW_SUBMITTED, lambda r: r.review_id, records.review_commitment
)
RESOLUTIONS: Rule[Resolution] = Rule(
    AuditEventType.CASE_RESOLVED,
    lambda r: r.case_id,
    records.resolution_commitment,
    named_by=records.resolution_id,
)
# Their events come back by ``records.gold_id``: an export attaches each to its label.
GOLD_LABELS: Rule[GoldLabelRevision] = Rule(
    AuditEventType.GOLD_LABEL_FROZEN,
    lambda g: g.case_id,
    records.gold_commitment,
    named_by=records.gold_id,
)


def previous_sequences(values: Sequence[AuditEvent]) -> list[int]:
    """The sequences whose stored hashes ``check_links`` needs beyond ``values`` own."""
    have = {v.sequence for v in values}
    return sorted({v.sequence - 1 for v in values} - {0} - have)


def check_links(values: Sequence[AuditEvent], stored: dict[int, str]) -> None:
    """DATA_LOSS (metadata ``sequence``) at the first event of ``values`` whose hash is not
    the hash of its content, or whose ``previous_hash`` is not the stored hash of the event
    before it (``stored``: by sequence, each event before one of ``values``; a page of one
    tenant's events skips the others'): an edited, removed, inserted or reordered event is
    never served as if nothing happened."""
    stored = {**stored, **{v.sequence: v.hash for v in values}, 0: ledger.EMPTY_HEAD.hash}
    for event in values:
        why = ""
        if event.previous_hash != stored.get(event.sequence - 1):
            why = "its previous_hash is not the stored hash of the event before it"
        elif event.hash != ledger.rehash(event):
            why = "its content does not match its hash"
        if why:
            raise records.event_loss(event.sequence, why)


APPROVALS: Rule[Approval] = Rule(
    AuditEventType.APPROVAL_REQUESTED, lambda a: a.approval_id, records.approval_commitment
)
APPROVAL_STEPS: Rule[Step] = Rule(
    AuditEventType.APPROVAL_DECIDED,
    lambda s: s.approval_id,
    records.step_commitment,
    named_by=records.step_id,
    also=(
        AuditEventType.APPROVAL_REVOKED,
        AuditEventType.APPROVAL_CONSUMED,
        AuditEventType.APPROVAL_EXPIRED,
    ),
)


def check_recorded(
    recorded: Callable[[AuditEventType, str, Iterable[str], str], list[dict[str, str]]],
    approval: Approval,
    steps: Sequence[Step],
) -> None:
    """DATA_LOSS unless the approval and each step match the events that recorded them, read
    through a write transaction's ``recorded``: a job decides on nothing a row edited outside
    the service says."""
    _check_through(recorded, APPROVALS, [approval], approval)
    check_no_step_missing(_check_through(recorded, APPROVAL_STEPS, steps, approval), steps)


def check_no_step_missing(recorded_ids: Iterable[str], steps: Sequence[Step]) -> None:
    """DATA_LOSS naming the first step the ledger recorded (``recorded_ids``: its
    "<approval id>#<step>" ids) that has no row among ``steps``: steps are never deleted, so
    a missing one (deleted, or moved to another approval) is tampering, and an approval read
    without it could look granted again, or unused."""
    present = {records.step_id(step) for step in steps}
    missing = sorted(
        set(recorded_ids) - present,
        key=lambda name: (name.rpartition("#")[0], int(name.rpartition("#")[2] or 0)),
    )
    if missing:
        raise records.record_loss(
            RecordKind.APPROVAL_STEP,
            missing[0],
            "its row is missing (approval steps are never deleted)",
        )


def _check_through(
    recorded: Callable[[AuditEventType, str, Iterable[str], str], list[dict[str, str]]],
    rule: Rule[T],
    values: Sequence[T],
    approval: Approval,
) -> set[str]:
    """Check ``values`` against the events ``recorded`` gives for the approval; the record
    ids of every such event."""
    found: dict[str, dict[str, str]] = {}
    for event_type in rule.event_types:
        for payload in recorded(event_type, rule.key, [approval.approval_id], approval.tenant):
            named = records.record_key(event_type.value, payload)
            if named is not None:
                found.setdefault(named[1], payload)
    kind, _ = records.EVENT_KEYS[rule.event_type.value]
    for value in values:
        name = rule.record_id(value)
        why = records.mismatch(rule.commitment(value), found.get(name))
        if why:
            raise records.record_loss(kind, name, why)
    return set(found)
