"""The PostgreSQL writer: group commit, with the chain serialized across replicas.

Like SQLite's writer (``storage.writer``), a writer task takes every job
waiting in the queue and runs them in order inside one transaction, each in
its own SAVEPOINT, and commits once, so the commit's WAL flush is shared by
the batch; no caller is answered before the commit returned.

Several replicas may write to one database. Each batch's transaction first
takes a transaction-scoped advisory lock (``CHAIN_LOCK``), then reads the
chain head: appends are serialized across every replica inside the same
transaction as the rows they record, so the audit ledger stays one gap-free
total order (the sequence primary key backs it). The lock is held to the end
of the transaction and PostgreSQL makes a commit visible before it releases
its locks, so under READ COMMITTED every statement of the next batch, on any
replica, sees this one's rows: a retried request id finds its first response,
a second review finds the first, and derived state is computed from committed
rows. Writes are thus serialized as SQLite's are; replicas add availability,
and reads scale with them.

The jobs are synchronous functions of a ``WriteTx``; they run on a worker
thread of this writer, and their SQL runs on the event loop (``bridge``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import asyncpg

from assay.services.adjudication.storage.postgres import queries
from assay.services.adjudication.storage.postgres.bridge import Bridge
from assay.services.adjudication.storage.postgres.tx import BatchState, PostgresWriteTx

T = TypeVar("T")
Job = Callable[[PostgresWriteTx], Any]
Outcomes = list[tuple[bool, Any]]
Queued = tuple[Job, "asyncio.Future[Any]"]
MAX_BATCH = 512
# The key of the transaction-scoped advisory lock every batch holds ("ASSAY" + 2).
CHAIN_LOCK = 0x4153534159000002


class PostgresWriter:
    """The task that group-commits jobs on connections from ``pool``."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._queue: asyncio.Queue[Queued | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._jobs = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adjudication-pg-jobs")

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name="adjudication-pg-writer"
        )

    async def submit(self, job: Callable[[PostgresWriteTx], T], small: bool = False) -> T:
        """Run ``job`` in the next batch (``small`` is accepted for the SQLite writer's sake:
        here every job runs on the job thread)."""
        if self._task is None or self._task.done():
            raise RuntimeError("the adjudication writer is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((job, future))
        # As on SQLite: a caller that gives up leaves its job queued, so a retry finds it.
        result: T = await future
        return result

    async def stop(self) -> None:
        """Finish every queued job, then stop."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
            self._task = None
        self._jobs.shutdown(wait=True)

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            batch = [item]
            stopping = False
            while len(batch) < MAX_BATCH and not self._queue.empty():
                more = self._queue.get_nowait()
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            await self._commit_batch(batch)
            if stopping:
                return

    async def _commit_batch(self, batch: list[Queued]) -> None:
        jobs = [job for job, _ in batch]
        loop = asyncio.get_running_loop()
        try:
            async with self._pool.acquire() as db, db.transaction():
                await db.execute("SELECT pg_advisory_xact_lock($1)", CHAIN_LOCK)
                state = BatchState(await queries.chain_head(db))
                bridge = Bridge(loop)
                outcomes = await loop.run_in_executor(
                    self._jobs, self._run_jobs, bridge, db, state, jobs
                )
        except Exception as error:  # the transaction failed: nothing of the batch is stored
            outcomes = [(False, error)] * len(batch)
        for (_, future), (ok, value) in zip(batch, outcomes, strict=True):
            if future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    @staticmethod
    def _run_jobs(bridge: Bridge, db: queries.Db, state: BatchState, jobs: list[Job]) -> Outcomes:
        """On the job thread, inside the open transaction: each job in its savepoint."""
        outcomes: Outcomes = []
        for job in jobs:
            head = state.head
            bridge.run(db.execute("SAVEPOINT job"))
            try:
                value = job(PostgresWriteTx(bridge, db, state))
            except Exception as error:
                # If this fails too, the whole batch fails with it: committing a transaction
                # PostgreSQL has marked failed would silently roll back the jobs before.
                bridge.run(db.execute("ROLLBACK TO SAVEPOINT job"))
                state.head = head
                outcomes.append((False, error))
                continue
            bridge.run(db.execute("RELEASE SAVEPOINT job"))
            outcomes.append((True, value))
        return outcomes
