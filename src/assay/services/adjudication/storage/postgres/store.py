"""The adjudication store on PostgreSQL: one pool, one group-committing writer per replica.

The same methods and results as ``storage.store.Store``. Opening creates the
pool, applies pending migrations (refusing a database newer than the code)
and starts the writer. Reads take a pooled connection; a read of more than
one statement runs in one read-only REPEATABLE READ transaction, so it sees
one snapshot. Several replicas may open the same database (see ``writer``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import TypeVar

import asyncpg

from assay.services.adjudication.agreement import RatedPair
from assay.services.adjudication.model import (
    AuditEvent,
    Case,
    CaseSnapshot,
    ChainHead,
    ChainVerdict,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
    TenantScope,
)
from assay.services.adjudication.storage.postgres import queries, schema, verify
from assay.services.adjudication.storage.postgres.tx import PostgresWriteTx
from assay.services.adjudication.storage.postgres.writer import PostgresWriter
from assay.services.adjudication.storage.store import ExportBatch

T = TypeVar("T")
POOL_MIN = 2
POOL_MAX = 10


def is_postgres_url(target: str) -> bool:
    """Whether ``--db`` names a PostgreSQL database rather than a SQLite file."""
    return target.startswith(("postgresql://", "postgres://"))


class PostgresStore:
    """Everything the service keeps, in PostgreSQL, behind domain-valued methods."""

    def __init__(self, pool: asyncpg.Pool, writer: PostgresWriter) -> None:
        self.pool = pool
        self.writer = writer

    @classmethod
    async def open(cls, dsn: str, pool_max: int = POOL_MAX) -> PostgresStore:
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
        """Finish queued writes, then close the pool."""
        await self.writer.stop()
        await self.pool.close()

    async def write(self, job: Callable[[PostgresWriteTx], T], small: bool = False) -> T:
        """Run ``job`` in the writer's next group-committed transaction."""
        return await self.writer.submit(job, small)

    async def _read(self, work: Callable[[queries.Db], Awaitable[T]]) -> T:
        """Run ``work`` in one read-only snapshot on a pooled connection."""
        async with (
            self.pool.acquire() as db,
            db.transaction(isolation="repeatable_read", readonly=True),
        ):
            return await work(db)

    # --- reads -------------------------------------------------------------

    async def reviewer(self, reviewer_id: str) -> Reviewer | None:
        return await self._read(lambda db: queries.reviewer(db, reviewer_id))

    async def reviewers(self, after: str, limit: int) -> list[Reviewer]:
        return await self._read(lambda db: queries.list_reviewers(db, after, limit))

    async def snapshot(self, case_id: str) -> CaseSnapshot | None:
        return await self._read(lambda db: queries.snapshot(db, case_id))

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
            return snap, reviews, resolutions

        return await self._read(work)

    async def queue(
        self, reviewer_id: str, scope: TenantScope, after: str, limit: int, at: datetime
    ) -> list[tuple[Case, int]]:
        return await self._read(lambda db: queries.queue(db, reviewer_id, scope, after, limit, at))

    async def gold_labels(
        self, case_id: str, after: tuple[str, int] | None, limit: int, scope: TenantScope
    ) -> list[GoldLabelRevision]:
        return await self._read(lambda db: queries.gold_labels(db, case_id, after, limit, scope))

    async def audit_events(self, after: int, limit: int, scope: TenantScope) -> list[AuditEvent]:
        return await self._read(lambda db: queries.audit_events(db, after, limit, scope))

    async def chain_hashes(self, after: int) -> list[tuple[int, str]]:
        """(sequence, hash) of every committed audit event after ``after``, in order."""
        return await self._read(lambda db: queries.chain_hashes(db, after))

    async def rated_pairs(self, scope: TenantScope) -> list[RatedPair]:
        return await self._read(lambda db: queries.rated_pairs(db, scope))

    async def export(
        self, scope: TenantScope, batch_size: int
    ) -> AsyncIterator[ChainHead | ExportBatch]:
        """The chain head first, then batches: one consistent snapshot on its own connection."""
        async with contextlib.AsyncExitStack() as stack:
            db = await stack.enter_async_context(self.pool.acquire())
            await stack.enter_async_context(
                db.transaction(isolation="repeatable_read", readonly=True)
            )
            async for item in verify.export(db, scope, batch_size):
                yield item

    async def verify_chain(self) -> ChainVerdict:
        """Walk every event, then cross-check every record row against the ledger."""
        return await self._read(verify.verify_chain)
