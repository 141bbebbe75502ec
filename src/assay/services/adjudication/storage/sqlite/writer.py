"""SQLite's single writer: how a group-committed batch runs, and where each part runs.

The loop shared with PostgreSQL (``storage.group_commit``) hands over every waiting job; they
run in order inside one ``BEGIN IMMEDIATE`` transaction that commits once, so with
``synchronous=FULL`` the batch shares one fsync, and no caller is answered before it returns.
``BEGIN`` and ``COMMIT`` run on the connection's thread (``sqlite_thread``); the jobs between
run on the loop's thread when all are small (their statements only touch the page cache under
the write lock, and on another thread each statement had to win the GIL back), else whole on
the connection's thread, so the loop never stalls on a tenant deletion or a sweep.

A job that raises vanishes alone. The batch runs first in one SAVEPOINT (most failures come
before any write, leaving nothing to undo); one that raises after writing rolls the batch
back and it runs again with a SAVEPOINT per job, which would cost every review more if done
always. Being the only writer, it remembers reviewers, case rows and each case's current
round (``case_cache``); any rollback, failed commit or deletion forgets them all. (The
costs behind these choices: docs/performance.md.)
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

from assay.services.adjudication.domain.model import ChainHead
from assay.services.adjudication.storage import faults
from assay.services.adjudication.storage.group_commit import GroupCommitWriter, Outcomes
from assay.services.adjudication.storage.sqlite import faults as sqlite_faults
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
            failed = faults.unreachable(error) if sqlite_faults.is_unreachable(error) else error
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
