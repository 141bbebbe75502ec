"""The adjudication store on PostgreSQL: one pool, one group-committing writer per replica.

The same methods and results as ``storage.sqlite.store.Store``. Opening creates the
pool, applies pending migrations (refusing a database newer than the code)
and starts the writer. Reads take a pooled connection; a read of more than
one statement runs in one read-only REPEATABLE READ transaction, so it sees
one snapshot. Several replicas may open the same database (see ``writer``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import asyncpg

from assay.runtime.database_url import parse_database_url
from assay.services.adjudication.domain.agreement import RatedRound
from assay.services.adjudication.domain.assignment import AssignmentChange
from assay.services.adjudication.domain.audit_filters import AuditScan, AuditWhere
from assay.services.adjudication.domain.case_listing import CaseWhere, ListedCase
from assay.services.adjudication.domain.gold_agreement import GoldAnswer
from assay.services.adjudication.domain.model import (
    AuditEvent,
    CaseSnapshot,
    ChainHead,
    ChainVerdict,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
    TenantScope,
)
from assay.services.adjudication.storage import faults
from assay.services.adjudication.storage.interface import ApprovalBatch, ApprovalRecord, ExportBatch
from assay.services.adjudication.storage.page_steps import PageReads, Steps
from assay.services.adjudication.storage.postgres import (
    approvals,
    assignments,
    listings,
    pages,
    queries,
    schema,
    verify,
)
from assay.services.adjudication.storage.postgres import ledger_checks as checks
from assay.services.adjudication.storage.postgres.faults import lost, quiet_pool_log
from assay.services.adjudication.storage.postgres.tx import PostgresWriteTx
from assay.services.adjudication.storage.postgres.writer import PostgresWriter

T = TypeVar("T")
POOL_MIN = 2
POOL_MAX = 10
# Every multi-statement read: one read-only snapshot.
_SNAPSHOT: dict[str, Any] = {"isolation": "repeatable_read", "readonly": True}


def is_postgres_url(target: str) -> bool:
    """Whether ``--db`` names a PostgreSQL database rather than a SQLite file (a URL in any
    case, or a libpq connection string; see ``assay.runtime.database_url``)."""
    try:
        return parse_database_url(target).is_postgres
    except ValueError:
        return False


class PostgresStore(PageReads):
    """Everything the service keeps, in PostgreSQL, behind domain-valued methods."""

    def __init__(self, pool: asyncpg.Pool, writer: PostgresWriter) -> None:
        self.pool = pool
        self.writer = writer
        self._listener: approvals.Listener | None = None
        self._listening: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, dsn: str, pool_max: int = POOL_MAX) -> PostgresStore:
        quiet_pool_log()
        pool = await asyncpg.create_pool(dsn, min_size=min(POOL_MIN, pool_max), max_size=pool_max)
        try:
            async with pool.acquire() as db:
                # Where the database is, never the URL itself: it may hold a password.
                name = await db.fetchval("SELECT current_database()")
                await schema.migrate(db, f"PostgreSQL database {name}")
        except BaseException:
            await pool.close()
            raise
        writer = PostgresWriter(pool)
        writer.start()
        return cls(pool, writer)

    async def close(self) -> None:
        """Finish queued writes, stop listening, then close the pool."""
        await self.writer.stop()
        if self._listening is not None:
            await self._listening
        if self._listener is not None:
            await self._listener.close()
        await self.pool.close()

    async def write(self, job: Callable[[PostgresWriteTx], T], small: bool = False) -> T:
        """Run ``job`` in the writer's next group-committed transaction."""
        return await self.writer.submit(job, small)

    async def _read(self, work: Callable[[queries.Db], Awaitable[T]]) -> T:
        """Run ``work`` in one read-only snapshot on a pooled connection (UNAVAILABLE when the
        server cannot be reached: ``faults``)."""
        db = None
        try:
            async with self.pool.acquire() as db, db.transaction(**_SNAPSHOT):
                return await work(db)
        except Exception as error:
            if await lost(error, db):
                raise faults.unreachable(error) from None
            raise

    async def _page(self, steps: Steps[T]) -> T:
        """The page ``steps`` return, run in one read snapshot."""
        return await self._read(lambda db: pages.run(db, steps))

    # --- reads -------------------------------------------------------------

    # Each read that returns records checks them against their ledger events in the same
    # snapshot (``ledger_checks``), as on SQLite: DATA_LOSS names the first that disagrees.

    async def reviewer(self, reviewer_id: str) -> Reviewer | None:
        async def work(db: queries.Db) -> Reviewer | None:
            found = await queries.reviewer(db, reviewer_id)
            await checks.check_reviewers(db, [found] if found else [])
            return found

        return await self._read(work)

    async def reviewers(self, after: str, limit: int) -> list[Reviewer]:
        async def work(db: queries.Db) -> list[Reviewer]:
            found = await queries.list_reviewers(db, after, limit)
            await checks.check_reviewers(db, found)
            return found

        return await self._read(work)

    async def snapshot(self, case_id: str) -> CaseSnapshot | None:
        async def work(db: queries.Db) -> CaseSnapshot | None:
            snap = await queries.snapshot(db, case_id)
            await checks.check_snapshot(db, snap)
            return snap

        return await self._read(work)

    async def case_state(self, case_id: str) -> CaseSnapshot | None:
        """The snapshot GetCaseState derives the state from (``_state_snapshot``)."""
        return await self._read(lambda db: _state_snapshot(db, case_id))

    async def case_page(
        self, scope: TenantScope, where: CaseWhere, after: tuple[str, int] | None, limit: int
    ) -> list[ListedCase]:
        """Up to ``limit`` cases of ``scope`` after ``after`` that ``where`` keeps, each read
        and checked as GetCaseState reads it, in one snapshot."""
        return await self._read(
            lambda db: listings.case_page(db, scope, where, after, limit, _state_snapshots)
        )

    async def audit_page(
        self, scope: TenantScope, where: AuditWhere, after: int, scan: int, limit: int
    ) -> AuditScan:
        return await self._read(
            lambda db: listings.audit_page(db, scope, where, after, scan, limit)
        )

    async def case_detail(
        self, case_id: str
    ) -> tuple[CaseSnapshot, list[Review], list[Resolution]] | None:
        async def work(
            db: queries.Db,
        ) -> tuple[CaseSnapshot, list[Review], list[Resolution]] | None:
            snap = await queries.snapshot(db, case_id)
            if snap is None:
                return None
            reviews, resolutions = await queries.case_history(db, case_id)
            await checks.check_cases(db, [snap.case])
            await checks.check_reviews(db, reviews)
            await checks.check_resolutions(db, resolutions)
            return snap, reviews, resolutions

        return await self._read(work)

    async def gold_labels(
        self, case_id: str, after: tuple[str, int] | None, limit: int, scope: TenantScope
    ) -> list[GoldLabelRevision]:
        async def work(db: queries.Db) -> list[GoldLabelRevision]:
            found = await queries.gold_labels(db, case_id, after, limit, scope)
            await checks.check_gold_labels(db, found)
            return found

        return await self._read(work)

    async def audit_events(self, after: int, limit: int, scope: TenantScope) -> list[AuditEvent]:
        """Events after ``after``, each re-hashed and linked to its predecessor's stored hash."""

        async def work(db: queries.Db) -> list[AuditEvent]:
            found = await queries.audit_events(db, after, limit, scope)
            await checks.check_events(db, found)
            return found

        return await self._read(work)

    async def chain_hashes(self, after: int) -> list[tuple[int, str]]:
        """(sequence, hash) of every committed audit event after ``after``, in order."""
        return await self._read(lambda db: queries.chain_hashes(db, after))

    async def rated_rounds(self, scope: TenantScope) -> list[RatedRound]:
        return await self._read(lambda db: queries.rated_rounds(db, scope))

    async def gold_answers(self, scope: TenantScope) -> list[GoldAnswer]:
        return await self._read(lambda db: queries.gold_answers(db, scope))

    async def export(
        self,
        scope: TenantScope,
        batch_size: int,
        include_reviews: bool = False,
        include_approvals: bool = False,
    ) -> AsyncIterator[ChainHead | ExportBatch | ApprovalBatch]:
        """The chain head first, then batches: one consistent snapshot on its own connection."""
        db = None
        try:
            async with self.pool.acquire() as db, db.transaction(**_SNAPSHOT):
                exported = verify.export(db, scope, batch_size, include_reviews, include_approvals)
                async for item in exported:
                    yield item
        except Exception as error:
            if await lost(error, db):
                raise faults.unreachable(error) from None
            raise

    # --- approvals -----------------------------------------------------------

    async def approval(self, approval_id: str) -> ApprovalRecord | None:
        return await self._read(lambda db: approvals.one(db, approval_id))

    async def approvals(
        self, scope: TenantScope, after: tuple[str, int] | None, limit: int
    ) -> list[ApprovalRecord]:
        return await self._read(lambda db: approvals.page(db, scope, after, limit))

    async def open_approvals(self, limit: int) -> list[ApprovalRecord]:
        return await self._read(lambda db: approvals.still_open(db, limit))

    def listen_approvals(self, changed: Callable[[str], None]) -> None:
        """Hear other replicas' approval changes (LISTEN on a pooled connection), from now
        until ``close``."""
        self._listener = approvals.Listener(self.pool, changed)
        self._listening = asyncio.get_running_loop().create_task(self._listener.start())

    async def assignments(self, case_ids: Sequence[str]) -> dict[str, list[AssignmentChange]]:
        return await self._read(lambda db: assignments.of_cases(db, case_ids))

    async def verify_chain(self) -> ChainVerdict:
        """Walk every event, then cross-check every record row against the ledger."""
        return await self._read(verify.verify_chain)


async def _state_snapshot(db: queries.Db, case_id: str) -> CaseSnapshot | None:
    """The snapshot GetCaseState derives the state from (``_state_snapshots`` of one case)."""
    return (await _state_snapshots(db, [case_id])).get(case_id)


async def _state_snapshots(db: queries.Db, case_ids: Sequence[str]) -> dict[str, CaseSnapshot]:
    """The snapshots states are derived from, by case id (a case not found: absent), with
    every row they rest on checked: each case, all its reviews, resolutions and gold labels.
    The same statements for one case or a page of them, so a listing costs the round trips
    of one case, not of each."""
    found = await db.fetch(queries.SNAPSHOTS, list(case_ids))
    snaps = {s.case.case_id: s for s in map(queries.snapshot_of, found) if s is not None}
    if not snaps:
        return {}
    ids = list(snaps)
    reviews, resolutions = await queries.histories(db, ids)
    labels = await queries.gold_labels_of_cases(db, ids)
    await checks.check_cases(db, [s.case for s in snaps.values()])
    await checks.check_reviews(db, reviews)
    await checks.check_resolutions(db, resolutions)
    await checks.check_gold_labels(db, labels)
    return snaps
