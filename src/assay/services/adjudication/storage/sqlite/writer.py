"""SQLite's single writer: how a group-committed batch runs, and where each part runs.

The loop shared with PostgreSQL (``storage.group_commit``) takes every job
waiting and hands them here; they run, in order, inside one ``BEGIN IMMEDIATE``
transaction, which commits once: with ``synchronous=FULL`` the fsync — the
price of durability — is shared by the whole batch (group commit). No caller is
answered before that commit has returned, so an acknowledged write is on disk.

Where each step runs is chosen by what it waits for. ``BEGIN IMMEDIATE`` (may
wait for the write lock) and ``COMMIT`` (the fsync) run on the connection's own
thread (``sqlite_thread``). The jobs between them run on the event loop's thread when every job of
the batch is *small* (one case, a few rows: reviews, cases, resolutions, gold
labels): with the write lock held in WAL mode their statements only touch the
page cache, and on the connection's thread a job had to win the GIL back from
the loop after every statement — under the server's load about 160 us of CPU
per review plus the waiting, against about 100 us on the loop (a batch of 20
holds the loop ~2 ms). A batch holding a job that may touch many rows (tenant
deletion, sweeps, bulk imports) runs whole on the connection's thread, so the
loop never stalls on it.

A job that raises vanishes while the jobs before and after it in the batch
commit normally. Jobs rarely fail, and most that do fail before they write
(a rule refuses the request), so a batch runs first inside one SAVEPOINT for
all its jobs: a job that raises before its first write is just answered with
its error, nothing being there to undo. One that raises after writing rolls the
batch back to that savepoint (the in-memory chain head is put back and the
remembered rows forgotten), and the batch runs again with each job inside its
own SAVEPOINT, so the failing job's writes and audit event vanish alone. Jobs are
functions of their transaction, so nothing of the first run remains. A
savepoint per job cost every review two statements more (~7 us of CPU, against
~20-25 us for each of its three INSERTs) and had SQLite copy each page a job
touched into the statement journal again, though a batch's jobs touch the same pages.

Being the only writer, it remembers what it has read or written (``case_cache``):
reviewers and case rows (never updated), and each case's current round, which
every write of a review, resolution or gold label drops and the job that wrote
it puts back as it left it. Any rollback, failed commit or deletion forgets
them all, so what a job sees is what the file holds; a property test drives
random batches against it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

from assay.services.adjudication.domain.model import ChainHead
from assay.services.adjudication.storage import faults
from assay.services.adjudication.storage.group_commit import GroupCommitWriter, Outcomes
from assay.services.adjudication.storage.sqlite import queries
from assay.services.adjudication.storage.sqlite.case_cache import Remembered
from assay.services.adjudication.storage.sqlite.sqlite_thread import SqliteConnection
from assay.services.adjudication.storage.sqlite.tx import WriterState, WriteTx

Job = Callable[[WriteTx], Any]


class Writer(GroupCommitWriter[WriteTx]):
    """The single writer connection, its jobs group-committed (``group_commit``)."""

    def __init__(self, db: SqliteConnection, head: ChainHead) -> None:
        super().__init__()
        self.db = db
        # The chain head, and the reviewers, cases and current rounds seen by jobs (``case_cache``).
        self.state = WriterState(head)

    @property
    def head(self) -> ChainHead:
        return self.state.head

    @property
    def memory(self) -> Remembered:
        return self.state.memory

    async def _run_batch(self, jobs: list[Job], small: bool) -> Outcomes:
        try:
            if small:
                return await self._on_loop(jobs)
            return await self.db.run(lambda raw: self._in_thread(raw, jobs))
        except Exception as error:  # the commit itself failed: nothing of the batch is stored
            # Every caller must get an answer, even if the database is gone altogether.
            self.memory.forget_all()
            with contextlib.suppress(Exception):
                self.state.head = await self.db.run(queries.chain_head)
            # A file locked by another connection is busy, not broken: the caller may retry
            # (the batch was rolled back, so nothing of it is stored).
            failed = faults.unreachable(error) if faults.sqlite_unreachable(error) else error
            return [(False, failed)] * len(jobs)

    async def _on_loop(self, jobs: list[Job]) -> Outcomes:
        await self.db.run(_begin)
        try:
            outcomes = self._run_jobs(self.db.raw, jobs)
            await self.db.run(_commit)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.db.run(_rollback)
            raise
        return outcomes

    def _in_thread(self, raw: sqlite3.Connection, jobs: list[Job]) -> Outcomes:
        """The whole batch in one hop to the connection's thread."""
        _begin(raw)
        try:
            outcomes = self._run_jobs(raw, jobs)
            _commit(raw)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                _rollback(raw)
            raise
        return outcomes

    def _run_jobs(self, raw: sqlite3.Connection, jobs: list[Job]) -> Outcomes:
        """Inside the open transaction: the batch in one savepoint, or, when a job fails after
        writing, again with each job in its own (``_run_isolated``)."""
        head = self.state.head
        raw.execute("SAVEPOINT batch")
        outcomes: Outcomes = []
        for job in jobs:
            tx = WriteTx(self.state, raw)
            try:
                value = job(tx)
            except Exception as error:
                if not tx.wrote:  # refused before writing: nothing to undo
                    outcomes.append((False, error))
                    continue
                raw.execute("ROLLBACK TO batch")
                self.state.head = head
                # Earlier jobs' rows are undone too, and reviewers they read may be among them.
                self.memory.forget_all()
                outcomes = self._run_isolated(raw, jobs)
                break
            outcomes.append((True, value))
        raw.execute("RELEASE batch")
        return outcomes

    def _run_isolated(self, raw: sqlite3.Connection, jobs: list[Job]) -> Outcomes:
        """Each job in its own savepoint: one that raises is rolled back to it alone."""
        outcomes: Outcomes = []
        for job in jobs:
            head = self.state.head
            raw.execute("SAVEPOINT job")
            try:
                value = job(WriteTx(self.state, raw))
            except Exception as error:
                raw.execute("ROLLBACK TO job")
                raw.execute("RELEASE job")
                self.state.head = head
                self.memory.forget_cases()
                outcomes.append((False, error))
                continue
            raw.execute("RELEASE job")
            outcomes.append((True, value))
        return outcomes


def _begin(raw: sqlite3.Connection) -> None:
    raw.execute("BEGIN IMMEDIATE")


def _commit(raw: sqlite3.Connection) -> None:
    raw.execute("COMMIT")


def _rollback(raw: sqlite3.Connection) -> None:
    if raw.in_transaction:
        raw.execute("ROLLBACK")
