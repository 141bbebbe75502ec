"""The one storage interface of the adjudication service, which both engines implement.

``operations`` and ``lookups`` are written against these protocols only, so
the service runs unchanged on SQLite (``storage.sqlite.store.Store``, the embedded
default) and on PostgreSQL (``storage.postgres.PostgresStore``, for replicas).
Two parts:

- ``Store``: the reads (each in one consistent snapshot, each record checked
  against its ledger event), whole-database walks (export, chain verification,
  the transparency log's leaves), ``write`` and ``close``;
- ``WriteTx``: what a write job may do inside the writer's transaction. Jobs
  are plain synchronous functions of a ``WriteTx``; the engine decides where
  they run and group-commits them, and answers no caller before the commit.

Every query is a named method: no SQL crosses this boundary, so neither engine
has to understand the other's dialect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, TypeVar

from assay.services.adjudication.domain import audit_filters, case_listing, model
from assay.services.adjudication.domain.agreement import RatedRound
from assay.services.adjudication.domain.approvals import Approval, ExportedApproval, Step
from assay.services.adjudication.domain.assignment import AssignmentChange, QueueTier
from assay.services.adjudication.domain.blinding import blind
from assay.services.adjudication.domain.gold_agreement import GoldAnswer
from assay.services.adjudication.domain.records import gold_id, resolution_id

T = TypeVar("T")
# An approval and its steps, in ``seq`` order.
ApprovalRecord = tuple[Approval, list[Step]]


@dataclass(frozen=True)
class StoredResponse:
    """A retried request's first answer: the method, the request's digest, the response."""

    method: str
    request_digest: str
    response: bytes


def exported_record(case: model.Case, revision: model.GoldLabelRevision) -> model.ExportRecord:
    """A label's record: its case as reviewers saw it, with the claims and spot-check rate
    the export carries for auditors (checked with the case against CASE_ENQUEUED)."""
    return model.ExportRecord(
        blind(case, revision.round),
        revision,
        claims=case.claims,
        spot_check_rate=case.spot_check_rate,
    )


@dataclass
class ExportBatch:
    """One chunk of an export: records and the labels excluded from it."""

    records: list[model.ExportRecord]
    exclusions: list[model.ExportExclusion]

    def attach_reviews(
        self, found: Iterable[model.Review], events: Mapping[str, model.AuditEvent]
    ) -> None:
        """Give each record the reviews of its case, in the order ``found`` has them, with
        their REVIEW_SUBMITTED ``events`` (by review id)."""
        by_case: dict[str, list[model.Review]] = {}
        for review in found:
            by_case.setdefault(review.case_id, []).append(review)
        if not by_case:
            return
        attached = []
        for record in self.records:
            mine = by_case.get(record.revision.case_id, [])
            attached.append(
                replace(
                    record,
                    reviews=tuple(mine),
                    review_events=tuple(events[v.review_id] for v in mine),
                )
            )
        self.records = attached

    def frozen_rounds(self) -> list[tuple[str, int]]:
        """The (case id, round) each record's revision froze."""
        return [(r.revision.case_id, r.revision.round) for r in self.records]

    def attach_resolutions(
        self, found: Iterable[model.Resolution], events: Mapping[str, model.AuditEvent]
    ) -> None:
        """Give each record the resolution its revision froze (its rationale is exported) with
        its CASE_RESOLVED event (``events``, by ``records.resolution_id``)."""
        by_round = {(r.case_id, r.round): r for r in found}
        attached = []
        for record in self.records:
            decided = by_round.get((record.revision.case_id, record.revision.round))
            if decided is not None:
                event = events[resolution_id(decided)]
                record = replace(record, resolution=decided, resolution_event=event)
            attached.append(record)
        self.records = attached

    def attach_events(
        self,
        frozen: Mapping[str, model.AuditEvent],
        enqueued: Mapping[str, model.AuditEvent],
    ) -> None:
        """Give each record its label's GOLD_LABEL_FROZEN event (``frozen``, by
        ``records.gold_id``) and its case's CASE_ENQUEUED event (``enqueued``, by case id)."""
        self.records = [
            replace(r, event=frozen[gold_id(r.revision)], case_event=enqueued[r.revision.case_id])
            for r in self.records
        ]


@dataclass
class ApprovalBatch:
    """One chunk of an export's approvals, newest request first; after every ``ExportBatch``."""

    approvals: list[ExportedApproval]


class BatchSource(Protocol):
    """What the server's metrics read of a group-committing writer."""

    on_batch: Callable[[int, float], None]

    def queue_depth(self) -> int: ...


class WriteTx(Protocol):
    """What a job may do inside the writer's transaction."""

    def recall(self, owner: tuple[str, str], request_id: str) -> StoredResponse | None:
        """The response stored for ``owner``'s (issuer, subject) ``request_id``."""
        ...

    def remember(
        self,
        owner: tuple[str, str],
        request_id: str,
        stored: StoredResponse,
        tenant: str,
        case_id: str,
    ) -> None: ...

    def reviewer(self, reviewer_id: str) -> model.Reviewer | None: ...

    def reviewers(self, reviewer_ids: Iterable[str]) -> dict[str, model.Reviewer]: ...

    def recorded(
        self, event_type: model.AuditEventType, key: str, values: Iterable[str], tenant: str
    ) -> list[dict[str, str]]:
        """The payloads of ``tenant``'s ``event_type`` events whose ``key`` is in ``values``."""
        ...

    def snapshot(self, case_id: str) -> model.CaseSnapshot | None: ...

    def review(self, review_id: str) -> model.Review | None:
        """One review record by id (any round, superseded or not)."""
        ...

    def remember_snapshot(self, value: model.CaseSnapshot) -> None:
        """The case's round as the job leaves it (an engine may keep it between jobs)."""
        ...

    def insert_reviewer(self, value: model.Reviewer) -> None: ...

    def insert_case(self, value: model.Case) -> None: ...

    def insert_review(self, value: model.Review) -> None: ...

    def insert_resolution(self, value: model.Resolution) -> None: ...

    def insert_gold_label(self, value: model.GoldLabelRevision) -> None: ...

    def bulk_insert(
        self, cases: Iterable[model.Case], gold_labels: Iterable[model.GoldLabelRevision]
    ) -> None: ...

    def delete_tenant_cases(self, tenant: str) -> model.DeletedCounts:
        """Delete ``tenant``'s cases with their reviews, resolutions and stored responses."""
        ...

    def delete_expired(self, at: datetime, scope: model.TenantScope) -> model.DeletedCounts:
        """Delete the cases of ``scope``'s tenants that expired by ``at``, likewise."""
        ...

    def delete_tenant_responses(self, tenant: str) -> None: ...

    def append_event(
        self,
        event_type: model.AuditEventType,
        payload: dict[str, str],
        tenant: str = "",
        actor: model.Actor | None = None,
    ) -> model.AuditEvent: ...

    def approval(self, approval_id: str) -> ApprovalRecord | None:
        """The approval with its steps (in ``seq`` order), locked until the transaction ends
        (so concurrent changes to one approval, on any replica, run one after the other),
        each row checked against its ledger event (DATA_LOSS when one disagrees)."""
        ...

    def insert_approval(self, value: Approval) -> None: ...

    def insert_step(self, value: Step) -> None: ...

    def notify_approval(self, approval_id: str) -> None:
        """Tell the other replicas, once this transaction commits, that the approval changed
        (``Store.listen_approvals``); nothing to do where there is one process."""
        ...

    def assignments(self, case_ids: Sequence[str]) -> dict[str, list[AssignmentChange]]:
        """Each case's assignment changes in order (a case with none: absent), every one
        checked against its ledger event, and none recorded missing (DATA_LOSS)."""
        ...

    def insert_assignment(self, value: AssignmentChange) -> None: ...

    def open_assignments(self, reviewer_ids: Iterable[str], at: datetime) -> dict[str, int]:
        """Each reviewer's open assignments at ``at`` (assigned, case not expired, current
        round unresolved and not reviewed by them); a reviewer with none: absent."""
        ...


class Store(Protocol):
    """Everything the service keeps, behind domain-valued methods."""

    @property
    def writer(self) -> BatchSource: ...

    async def close(self) -> None:
        """Finish queued writes, then release every connection (and lock)."""
        ...

    async def write(self, job: Callable[[WriteTx], T], small: bool = False) -> T:
        """Run ``job`` in the writer's next group-committed transaction. ``small``: it touches
        a few rows of one case (an engine may run it on the event loop)."""
        ...

    async def reviewer(self, reviewer_id: str) -> model.Reviewer | None: ...

    async def reviewers(self, after: str, limit: int) -> list[model.Reviewer]: ...

    async def snapshot(self, case_id: str) -> model.CaseSnapshot | None: ...

    async def case_state(self, case_id: str) -> model.CaseSnapshot | None: ...

    async def case_detail(
        self, case_id: str
    ) -> tuple[model.CaseSnapshot, list[model.Review], list[model.Resolution]] | None: ...

    async def queue(
        self, reviewer_id: str, scope: model.TenantScope, after: str, limit: int, at: datetime
    ) -> list[tuple[model.Case, int]]: ...

    async def queue_tier(
        self, tier: QueueTier, after: str, limit: int
    ) -> list[tuple[model.Case, int]]:
        """``queue`` of the cases assigned to the reviewer, or of those assigned to nobody
        outside ``tier.closed``; the assignment rows that decided it checked too."""
        ...

    async def worklist(
        self, adjudicator_id: str, scope: model.TenantScope, after: str, limit: int, at: datetime
    ) -> list[model.CaseSnapshot]:
        """Up to ``limit`` cases after ``after`` that may wait for ``adjudicator_id``'s
        decision (a superset: ``permissions.awaits_decision_by`` decides), each with its
        current round's reviews; every row that decided it checked against the ledger."""
        ...

    async def gold_labels(
        self, case_id: str, after: tuple[str, int] | None, limit: int, scope: model.TenantScope
    ) -> list[model.GoldLabelRevision]: ...

    async def audit_events(
        self, after: int, limit: int, scope: model.TenantScope
    ) -> list[model.AuditEvent]: ...

    async def chain_hashes(self, after: int) -> list[tuple[int, str]]:
        """(sequence, hash) of every committed audit event after ``after``, in order."""
        ...

    async def case_page(
        self,
        scope: model.TenantScope,
        where: case_listing.CaseWhere,
        after: tuple[str, int] | None,
        limit: int,
    ) -> list[case_listing.ListedCase]:
        """Up to ``limit`` cases of ``scope`` that ``where`` keeps, in its order, after
        ``after`` (case id, creation time in microseconds), each with the snapshot
        GetCaseState derives its state from, every row it rests on checked (ListCases)."""
        ...

    async def audit_page(
        self,
        scope: model.TenantScope,
        where: audit_filters.AuditWhere,
        after: int,
        scan: int,
        limit: int,
    ) -> audit_filters.AuditScan:
        """Up to ``limit`` events that ``where`` keeps among the next ``scan`` events of
        ``scope`` after sequence ``after`` (before it, newest first; 0: from the start),
        each re-hashed and linked like ``audit_events`` (filtered ListAuditEvents)."""
        ...

    async def rated_rounds(self, scope: model.TenantScope) -> list[RatedRound]: ...

    async def gold_answers(self, scope: model.TenantScope) -> list[GoldAnswer]:
        """Each final review of the round each case's latest gold label was frozen from,
        beside that label (the gold labels of ``scope``'s tenants)."""
        ...

    def export(
        self,
        scope: model.TenantScope,
        batch_size: int,
        include_reviews: bool = False,
        include_approvals: bool = False,
    ) -> AsyncIterator[model.ChainHead | ExportBatch | ApprovalBatch]:
        """The chain head, then batches, all from one snapshot; with ``include_reviews``,
        each record with every review of its case, checked against the ledger; with
        ``include_approvals``, then the approvals of ``scope``'s tenants with their events."""
        ...

    async def approval(self, approval_id: str) -> ApprovalRecord | None:
        """The approval with its steps, each row checked against its ledger event."""
        ...

    async def approvals(
        self, scope: model.TenantScope, after: tuple[str, int] | None, limit: int
    ) -> list[ApprovalRecord]:
        """Up to ``limit`` approvals of ``scope``'s tenants, newest request first (request
        time, then id, both descending), after ``after`` (approval id, request time in
        microseconds), each with its steps, checked like ``approval``."""
        ...

    async def open_approvals(self, limit: int) -> list[ApprovalRecord]:
        """Up to ``limit`` approvals (any tenant) with no CONSUMED, REVOKED or EXPIRED step,
        earliest deadline first, with their steps: what the expiry task looks at."""
        ...

    def listen_approvals(self, changed: Callable[[str], None]) -> None:
        """Call ``changed(approval_id)`` when another replica commits a change to an
        approval (PostgreSQL: LISTEN/NOTIFY); nothing where there is one process."""
        ...

    async def assignments(self, case_ids: Sequence[str]) -> dict[str, list[AssignmentChange]]:
        """As ``WriteTx.assignments``, in one read snapshot."""
        ...

    async def verify_chain(self) -> model.ChainVerdict:
        """Walk every event, then cross-check every record row against the ledger."""
        ...
