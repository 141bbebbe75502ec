"""The one storage interface of the adjudication service, which both engines implement.

``operations`` and ``lookups`` are written against these protocols only, so
the service runs unchanged on SQLite (``storage.store.Store``, the embedded
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

from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from assay.services.adjudication.agreement import RatedPair
from assay.services.adjudication.model import (
    Actor,
    AuditEvent,
    AuditEventType,
    Case,
    CaseSnapshot,
    ChainHead,
    ChainVerdict,
    DeletedCounts,
    ExportExclusion,
    ExportRecord,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
    TenantScope,
)

T = TypeVar("T")


@dataclass(frozen=True)
class StoredResponse:
    """A retried request's first answer: the method, the request's digest, the response."""

    method: str
    request_digest: str
    response: bytes


@dataclass
class ExportBatch:
    """One chunk of an export: records and the labels excluded from it."""

    records: list[ExportRecord]
    exclusions: list[ExportExclusion]


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

    def reviewer(self, reviewer_id: str) -> Reviewer | None: ...

    def reviewers(self, reviewer_ids: Iterable[str]) -> dict[str, Reviewer]: ...

    def recorded(
        self, event_type: AuditEventType, key: str, values: Iterable[str], tenant: str
    ) -> list[dict[str, str]]:
        """The payloads of ``tenant``'s ``event_type`` events whose ``key`` is in ``values``."""
        ...

    def snapshot(self, case_id: str) -> CaseSnapshot | None: ...

    def remember_snapshot(self, value: CaseSnapshot) -> None:
        """The case's round as the job leaves it (an engine may keep it between jobs)."""
        ...

    def insert_reviewer(self, value: Reviewer) -> None: ...

    def insert_case(self, value: Case) -> None: ...

    def insert_review(self, value: Review) -> None: ...

    def insert_resolution(self, value: Resolution) -> None: ...

    def insert_gold_label(self, value: GoldLabelRevision) -> None: ...

    def bulk_insert(
        self, cases: Iterable[Case], gold_labels: Iterable[GoldLabelRevision]
    ) -> None: ...

    def delete_tenant_cases(self, tenant: str) -> DeletedCounts:
        """Delete ``tenant``'s cases with their reviews, resolutions and stored responses."""
        ...

    def delete_expired(self, at: datetime, scope: TenantScope) -> DeletedCounts:
        """Delete the cases of ``scope``'s tenants that expired by ``at``, likewise."""
        ...

    def delete_tenant_responses(self, tenant: str) -> None: ...

    def append_event(
        self,
        event_type: AuditEventType,
        payload: dict[str, str],
        tenant: str = "",
        actor: Actor | None = None,
    ) -> AuditEvent: ...


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

    async def reviewer(self, reviewer_id: str) -> Reviewer | None: ...

    async def reviewers(self, after: str, limit: int) -> list[Reviewer]: ...

    async def snapshot(self, case_id: str) -> CaseSnapshot | None: ...

    async def case_state(self, case_id: str) -> CaseSnapshot | None: ...

    async def case_detail(
        self, case_id: str
    ) -> tuple[CaseSnapshot, list[Review], list[Resolution]] | None: ...

    async def queue(
        self, reviewer_id: str, scope: TenantScope, after: str, limit: int, at: datetime
    ) -> list[tuple[Case, int]]: ...

    async def gold_labels(
        self, case_id: str, after: tuple[str, int] | None, limit: int, scope: TenantScope
    ) -> list[GoldLabelRevision]: ...

    async def audit_events(
        self, after: int, limit: int, scope: TenantScope
    ) -> list[AuditEvent]: ...

    async def chain_hashes(self, after: int) -> list[tuple[int, str]]:
        """(sequence, hash) of every committed audit event after ``after``, in order."""
        ...

    async def rated_pairs(self, scope: TenantScope) -> list[RatedPair]: ...

    def export(self, scope: TenantScope, batch_size: int) -> AsyncIterator[ChainHead | ExportBatch]:
        """The chain head, then batches, all from one snapshot."""
        ...

    async def verify_chain(self) -> ChainVerdict:
        """Walk every event, then cross-check every record row against the ledger."""
        ...
