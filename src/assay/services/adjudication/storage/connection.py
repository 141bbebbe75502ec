"""Running a whole unit of SQL work on an aiosqlite connection's own thread, in one hop.

aiosqlite gives every connection a thread and sends it one statement at a
time: each ``await db.execute(...)`` is a round trip between the event loop
and that thread (tens of microseconds). A review needs about eight statements
(retry lookup, case, round, reviewer, insert, audit, retry record), so per
statement the writer would spend most of its time waiting for hops, and the
batch — which must run its jobs one after another — could not go faster than
those hops. Here the unit of work is a plain function of the ``sqlite3``
connection, run in the connection's thread with a single hop; inside it SQL
calls are direct. This uses ``Connection._execute`` and ``_conn``, aiosqlite's
internal "run this on my thread" primitive on which every public method is
built; the version is pinned in ``pyproject.toml`` and
``tests/unit/adjudication/test_connection.py`` fails if they change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiosqlite

T = TypeVar("T")


def raw(db: aiosqlite.Connection) -> sqlite3.Connection:
    """The connection itself, for use on the caller's thread between ``run`` calls: only
    for a connection opened with ``check_same_thread=False`` that nothing else is using
    meanwhile (the writer holds its lock)."""
    connection: sqlite3.Connection = db._conn
    return connection


async def run(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """``work(raw_connection)`` on ``db``'s thread; its result or exception comes back here."""
    raw: sqlite3.Connection = db._conn
    execute: Callable[..., Awaitable[T]] = db._execute
    return await execute(work, raw)
