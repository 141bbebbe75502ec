"""The one place adjudication relies on aiosqlite internals: running a function on its thread."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import aiosqlite
import pytest

from assay.services.adjudication.storage import connection


class TestRunOnConnectionThread:
    async def test_work_runs_on_the_connection_thread_with_its_connection(
        self, tmp_path: Path
    ) -> None:
        """The function gets the raw sqlite3 connection, off the event loop's thread."""
        db = await aiosqlite.connect(tmp_path / "c.db")
        try:
            await db.execute("CREATE TABLE t (x INTEGER)")
            await db.execute("INSERT INTO t VALUES (41)")

            def work(raw: sqlite3.Connection) -> tuple[int, bool]:
                value = raw.execute("SELECT x + 1 FROM t").fetchone()[0]
                return value, threading.current_thread() is threading.main_thread()

            assert await connection.run(db, work) == (42, False)
        finally:
            await db.close()

    async def test_exceptions_come_back(self, tmp_path: Path) -> None:
        """An exception raised on the connection thread is raised to the caller."""
        db = await aiosqlite.connect(tmp_path / "c.db")
        try:

            def work(raw: sqlite3.Connection) -> None:
                raw.execute("SELECT * FROM missing")

            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                await connection.run(db, work)
        finally:
            await db.close()
