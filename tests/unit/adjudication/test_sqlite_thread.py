"""The SQLite connection's own thread: work runs there, results and errors come back."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from assay.services.adjudication.storage.sqlite.sqlite_thread import SqliteConnection


class TestRunOnConnectionThread:
    async def test_work_runs_on_the_connection_thread_with_its_connection(
        self, tmp_path: Path
    ) -> None:
        """The function gets the raw sqlite3 connection, off the event loop's thread."""
        db = await SqliteConnection.open(str(tmp_path / "c.db"), ["PRAGMA journal_mode = WAL"])
        try:
            await db.run(
                lambda raw: raw.executescript("CREATE TABLE t (x); INSERT INTO t VALUES (41);")
            )

            def work(raw: sqlite3.Connection) -> tuple[int, bool]:
                value = raw.execute("SELECT x + 1 FROM t").fetchone()[0]
                return value, threading.current_thread() is threading.main_thread()

            assert await db.run(work) == (42, False)
        finally:
            await db.close()

    async def test_exceptions_come_back(self, tmp_path: Path) -> None:
        """An exception raised on the connection thread is raised to the caller."""
        db = await SqliteConnection.open(str(tmp_path / "c.db"))
        try:
            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                await db.run(lambda raw: raw.execute("SELECT * FROM missing"))
        finally:
            await db.close()

    async def test_cancelled_caller_does_not_stop_the_work(self, tmp_path: Path) -> None:
        """Work whose caller gave up still runs to its end (a queued write is not lost)."""
        db = await SqliteConnection.open(str(tmp_path / "c.db"))
        started, release = threading.Event(), threading.Event()
        try:
            await db.run(lambda raw: raw.execute("CREATE TABLE t (x)"))

            def slow(raw: sqlite3.Connection) -> None:
                started.set()
                release.wait(10)
                raw.execute("INSERT INTO t VALUES (1)")

            call = asyncio.ensure_future(db.run(slow))
            await asyncio.to_thread(started.wait, 10)
            call.cancel()
            release.set()
            count = await db.run(lambda raw: raw.execute("SELECT COUNT(*) FROM t").fetchone()[0])
            assert count == 1
        finally:
            await db.close()

    async def test_closed_connection_refuses_work_and_its_thread_ends(self, tmp_path: Path) -> None:
        """After close, run raises and the thread is gone."""
        db = await SqliteConnection.open(str(tmp_path / "c.db"))
        await db.close()
        with pytest.raises(sqlite3.ProgrammingError):
            await db.run(lambda raw: raw.execute("SELECT 1"))
        assert not db._thread.is_alive()
