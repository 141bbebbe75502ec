"""The PostgreSQL writer: group commit, with the chain serialized across replicas.

The loop shared with SQLite (``storage.group_commit``) hands over every waiting job; they run
in order in one transaction that commits once, sharing its WAL flush, and no caller is
answered before it returns. A failing job is undone alone (the batch runs again with a
SAVEPOINT per job, ``_run_jobs``). A batch reads ahead the request ids and cases its jobs
will read (``prefetch``) and sends its rows in one pipelined statement per table, so it costs
a fixed handful of round trips whatever its size. Jobs run in a greenlet on the loop's
thread (``greenlet_bridge``), on one pooled connection the writer keeps for itself.

Replicas share one database: each batch first takes a transaction-scoped advisory lock
(``CHAIN_LOCK``), then reads the chain head, so appends are one gap-free total order; a
commit is visible before its locks are released, so the next batch on any replica sees this
one's rows. A lost server fails the batch with UNAVAILABLE (``storage.faults``: a request id
makes a lost COMMIT safe to retry); the next batch takes a fresh connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from assay.services.adjudication.domain.model import Reviewer
from assay.services.adjudication.storage import faults
from assay.services.adjudication.storage.group_commit import GroupCommitWriter, Outcomes
from assay.services.adjudication.storage.postgres import prefetch, queries
from assay.services.adjudication.storage.postgres.faults import is_unreachable, lost, usable
from assay.services.adjudication.storage.postgres.greenlet_bridge import Bridge, run_sync
from assay.services.adjudication.storage.postgres.tx import BatchState, PostgresWriteTx

Job = Callable[[PostgresWriteTx], Any]
# The key of the transaction-scoped advisory lock every batch holds ("ASSAY" + 2).
CHAIN_LOCK = 0x4153534159000002
# One simple-protocol query, so one round trip (the key is our constant, not input).
BEGIN_LOCKED = f"BEGIN; SELECT pg_advisory_xact_lock({CHAIN_LOCK})"
# Committed reviewers kept in memory; past this many the memory starts again.
KNOWN_REVIEWERS = 100_000


class PostgresWriter(GroupCommitWriter[PostgresWriteTx]):
    """Jobs group-committed (``group_commit``) on a connection from ``pool``. Every job runs
    on the loop, yielding it while its SQL runs, so ``small`` changes nothing here."""

    task_name = "adjudication-pg-writer"

    def __init__(self, pool: asyncpg.Pool) -> None:
        super().__init__()
        self._pool = pool
        self._db: PoolConnectionProxy[asyncpg.Record] | None = None
        self._known: dict[str, Reviewer] = {}

    async def stop(self) -> None:
        """Finish every queued job, then stop and give the connection back."""
        await super().stop()
        await self._release()

    async def _connection(self) -> PoolConnectionProxy[asyncpg.Record]:
        if self._db is not None and not usable(self._db):  # the server closed it meanwhile
            with contextlib.suppress(Exception):
                await self._release()
        if self._db is None:
            self._db = await self._pool.acquire()
        return self._db

    async def _release(self) -> None:
        """Give the connection back: the pool rolls back or closes what a failure left."""
        db, self._db = self._db, None
        if db is not None:
            await self._pool.release(db)

    async def _run_batch(self, jobs: list[Job], small: bool) -> Outcomes:
        db = None
        try:
            db = await self._connection()
            try:
                return await self._attempt(db, jobs, isolated=False)
            except _JobFailed as job_failed:  # rolled back: again, each job in its savepoint
                if not usable(db) and job_failed.__cause__ is not None:
                    raise job_failed.__cause__ from None  # the connection failed, not a job
                return await self._attempt(db, jobs, isolated=True)
        except _CommitUnknown as unknown:  # the connection died during COMMIT
            cause = unknown.__cause__ or unknown
            with contextlib.suppress(Exception):
                await self._release()
            return [(False, faults.commit_unknown(cause, job)) for job in jobs]
        except Exception as error:  # the transaction failed: nothing of the batch is stored
            failed = faults.unreachable(error) if await lost(error, db) else error
            with contextlib.suppress(Exception):
                await self._release()
            return [(False, failed)] * len(jobs)

    async def _attempt(self, db: queries.Db, jobs: list[Job], isolated: bool) -> Outcomes:
        """The batch in one transaction under the chain lock, committed (rolled back if it
        raises, e.g. ``_JobFailed`` when a job failed and jobs were not ``isolated``)."""
        await db.execute(BEGIN_LOCKED)
        try:
            state = BatchState(await queries.chain_head(db), self._known, carry=not isolated)
            outcomes = await run_sync(self._run_jobs, Bridge(), db, state, jobs, isolated)
        except BaseException:
            if usable(db) and db.is_in_transaction():
                await db.execute("ROLLBACK")
            raise
        try:
            ended = await db.execute("COMMIT")
        except BaseException as error:
            if isinstance(error, Exception) and is_unreachable(error):
                raise _CommitUnknown from error  # sent, perhaps applied: nobody can say
            if usable(db) and db.is_in_transaction():
                await db.execute("ROLLBACK")
            raise
        # PostgreSQL answers COMMIT of a failed transaction with ROLLBACK, not an error.
        if ended != "COMMIT":
            raise RuntimeError(f"the writer's transaction ended with {ended}, not COMMIT")
        if len(self._known) + len(state.seen) > KNOWN_REVIEWERS:
            self._known.clear()
        self._known.update(state.seen)
        return outcomes

    @staticmethod
    def _run_jobs(
        bridge: Bridge, db: queries.Db, state: BatchState, jobs: list[Job], isolated: bool
    ) -> Outcomes:
        """In the batch's greenlet, inside the open transaction. Not ``isolated``: the first
        job that fails fails the attempt (``_JobFailed``); ``isolated``: each job runs in a
        savepoint, and one that fails is rolled back to it alone. Jobs rarely fail, so the
        first attempt saves two round trips per job; a failure costs running the batch again
        (the jobs are functions of the transaction: nothing of the first attempt remains)."""
        if not isolated and len(jobs) > 1:
            state.fetched = {}
            for _ in range(prefetch.ROUNDS):
                wanted = prefetch.probe(jobs, state.fetched, state.known)
                if not wanted:
                    break
                state.fetched.update(bridge.run(prefetch.fetch(db, wanted)))
        outcomes: Outcomes = []
        for position, job in enumerate(jobs):
            head, seen = state.head, dict(state.seen) if isolated else state.seen
            if isolated:
                mark = "RELEASE SAVEPOINT job; SAVEPOINT job" if position else "SAVEPOINT job"
                bridge.run(db.execute(mark))
            tx = PostgresWriteTx(bridge, db, state)
            try:
                value = job(tx)
                if not state.carry:
                    tx.flush()
                if state.failed is not None:  # the job caught a database error
                    raise state.failed
            except Exception as error:
                if not isolated:
                    raise _JobFailed from error
                # If this fails too, the whole batch fails with it: committing a transaction
                # PostgreSQL has marked failed would silently roll back the jobs before.
                bridge.run(db.execute("ROLLBACK TO SAVEPOINT job"))
                state.head, state.seen, state.pending, state.failed = head, seen, [], None
                outcomes.append((False, error))
                continue
            outcomes.append((True, value))
        if state.pending:  # the last job's rows (carried): a refusal fails the attempt
            try:
                PostgresWriteTx(bridge, db, state).flush()
            except Exception as error:
                raise _JobFailed from error
        return outcomes


class _CommitUnknown(Exception):
    """The connection was lost while COMMIT was under way: the batch may be stored or not."""


class _JobFailed(Exception):
    """A job failed in a batch run without savepoints: roll back, run it again isolated."""
