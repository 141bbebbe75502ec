"""The adjudication store on PostgreSQL: one pool, one group-committing writer per replica.

The same methods and results as ``storage.sqlite.store.Store``. Opening creates the
pool, applies pending migrations (refusing a database newer than the code)
and starts the writer. Reads take a pooled connection; a read of more than
one statement runs in one read-only REPEATABLE READ transaction, so it sees
one snapshot. Several replicas may open the same database (see ``writer``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import asyncpg

from assay.runtime.database_url import parse_database_url
from assay.services.adjudication.domain.model import (
    ChainHead,
    ChainVerdict,
    TenantScope,
)
from assay.services.adjudication.storage import faults
from assay.services.adjudication.storage.interface import ApprovalBatch, ExportBatch
from assay.services.adjudication.storage.page_steps import PageReads, Steps
from assay.services.adjudication.storage.postgres import (
    approvals,
    pages,
    primitives,
    queries,
    schema,
    verify,
)
from assay.services.adjudication.storage.postgres.faults import lost, quiet_pool_log
from assay.services.adjudication.storage.postgres.tx import PostgresWriteTx
from assay.services.adjudication.storage.postgres.writer import PostgresWriter
from assay.services.adjudication.storage.store_reads import SnapshotReads, StoreReads

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


class PostgresStore(PageReads, StoreReads[queries.Db]):
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

    async def _in_snapshot(
        self, read: Callable[[SnapshotReads[queries.Db]], Coroutine[Any, Any, T]]
    ) -> T:
        """``read`` (``store_reads``) in one read-only snapshot."""
        return await self._read(lambda db: read(SnapshotReads(primitives, db)))

    # --- whole-database walks ------------------------------------------------

    # The other reads come from ``StoreReads``, stated once for both engines: those that
    # return records check them against their ledger events in the same snapshot,
    # DATA_LOSS naming the first that disagrees.

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

    def listen_approvals(self, changed: Callable[[str], None]) -> None:
        """Hear other replicas' approval changes (LISTEN on a pooled connection), from now
        until ``close``."""
        self._listener = approvals.Listener(self.pool, changed)
        self._listening = asyncio.get_running_loop().create_task(self._listener.start())

    async def verify_chain(self) -> ChainVerdict:
        """Walk every event, then cross-check every record row against the ledger."""
        return await self._read(verify.verify_chain)
