"""Raw SQL on an adjudication database, as an attacker holding it would run it, on either
engine: the insert-only guards off for the edit, rows read by column name.

SQLite: a ``sqlite3`` connection on the file with its guarding triggers dropped, recreated
on the way out (the file then looks untouched). PostgreSQL: an ``asyncpg`` connection with
``session_replication_role = replica`` (the fixture's server runs the tests as superuser),
which skips the triggers for this session only while the service's own sessions stay
guarded; it runs on a thread with a loop of its own, so test code inside a running event
loop calls it synchronously, as it calls ``sqlite3``.

Statements are written once with ``?`` placeholders (numbered ``$n`` for PostgreSQL);
``json_field`` spells the one function the engines name differently.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re
import secrets
import shutil
import sqlite3
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from tests.service.adjudication_support import is_postgres

T = TypeVar("T")
Row = dict[str, Any]

# A ``?`` outside single-quoted literals.
_MARK = re.compile(r"'(?:[^']|'')*'|\?")


def numbered(sql: str) -> str:
    """``sql`` with its ``?`` placeholders numbered ``$1``, ``$2``… (PostgreSQL's spelling)."""
    count = 0

    def number(found: re.Match[str]) -> str:
        nonlocal count
        if found.group(0) != "?":
            return found.group(0)
        count += 1
        return f"${count}"

    return _MARK.sub(number, sql)


class Raw:
    """An attacker's connection: ``execute`` returns the rows changed, ``all`` and ``one``
    the rows selected as dicts."""

    postgres: bool

    def execute(self, sql: str, *params: object) -> int:
        raise NotImplementedError

    def all(self, sql: str, *params: object) -> list[Row]:
        raise NotImplementedError

    def one(self, sql: str, *params: object) -> Row:
        """The one row ``sql`` selects (asserted)."""
        found = self.all(sql, *params)
        assert len(found) == 1, (sql, params, found)
        return found[0]

    def json_field(self, column: str, key: str) -> str:
        """SQL for ``column``'s JSON object's ``key`` as text."""
        if self.postgres:
            return f"({column} ->> '{key}')"
        return f"json_extract({column}, '$.{key}')"

    def columns(self, table: str) -> list[str]:
        """``table``'s column names in their order (a generated column left out: the engine
        fills it)."""
        if self.postgres:
            found = self.all(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "AND is_generated = 'NEVER' AND is_identity = 'NO' ORDER BY ordinal_position",
                table,
            )
            return [str(row["column_name"]) for row in found]
        return [str(row["name"]) for row in self.all(f"PRAGMA table_info({table})")]


class _Sqlite(Raw):
    postgres = False

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, *params: object) -> int:
        return self.db.execute(sql, params).rowcount

    def all(self, sql: str, *params: object) -> list[Row]:
        return [dict(zip(r.keys(), r, strict=True)) for r in self.db.execute(sql, params)]


class _Postgres(Raw):
    postgres = True

    def __init__(self, dsn: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._db: asyncpg.Connection[asyncpg.Record] = self._run(asyncpg.connect(dsn))
        self.execute("SET session_replication_role = replica")

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=30)

    def execute(self, sql: str, *params: object) -> int:
        status = self._run(self._db.execute(numbered(sql), *params))
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else 0

    def all(self, sql: str, *params: object) -> list[Row]:
        return [dict(r) for r in self._run(self._db.fetch(numbered(sql), *params))]

    def close(self) -> None:
        try:
            self._run(self._db.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()


@contextlib.contextmanager
def tampering(db: str | Path) -> Iterator[Raw]:
    """An attacker's connection on ``db`` (a SQLite path or a PostgreSQL URL), guards off."""
    if is_postgres(db):
        raw = _Postgres(str(db))
        try:
            yield raw
        finally:
            raw.close()
        return
    connection = sqlite3.connect(db, isolation_level=None)
    connection.row_factory = sqlite3.Row
    triggers = connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
    ).fetchall()
    try:
        for trigger in triggers:
            connection.execute(f"DROP TRIGGER {trigger['name']}")
        yield _Sqlite(connection)
        for trigger in triggers:
            connection.execute(trigger["sql"])
    finally:
        connection.close()


def edit(db: str | Path, sql: str, *params: object) -> None:
    """Run one statement that must change exactly one row."""
    with tampering(db) as raw:
        assert raw.execute(sql, *params) == 1, (sql, params)


# --- copies of a populated database ------------------------------------------------------


def settle(db: str | Path) -> None:
    """``db`` ready to copy: a SQLite file's WAL checkpointed into it (nothing on
    PostgreSQL, whose template copy reads the committed database)."""
    if is_postgres(db):
        return
    raw = sqlite3.connect(db)
    try:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        raw.close()


def _with_database(dsn: str, name: str) -> str:
    return f"{dsn.rsplit('/', 1)[0]}/{name}"


async def _admin_async(dsn: str, statement: str) -> None:
    admin = await asyncpg.connect(_with_database(dsn, "postgres"))
    try:
        await admin.execute(statement)
    finally:
        await admin.close()


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """``work`` run to its end from synchronous code, inside a running event loop or not
    (on a thread with a loop of its own)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result(timeout=60)


def _admin(dsn: str, statement: str) -> None:
    """Run ``statement`` on the server's maintenance database."""
    run_sync(_admin_async(dsn, statement))


class Copies:
    """Private copies of a settled database, one per test: a SQLite file copied, or a
    PostgreSQL database created from the source as its template (dropped by ``close``)."""

    def __init__(self) -> None:
        self._made: list[str] = []

    def copy(self, source: str | Path, directory: Path, name: str = "a.db") -> str:
        if not is_postgres(source):
            shutil.copyfile(source, directory / name)
            return str(directory / name)
        database = f"copy_{secrets.token_hex(6)}"
        source_name = str(source).rsplit("/", 1)[1]
        _admin(str(source), f'CREATE DATABASE "{database}" TEMPLATE "{source_name}"')
        self._made.append(_with_database(str(source), database))
        return self._made[-1]

    def close(self) -> None:
        for made in self._made:
            name = made.rsplit("/", 1)[1]
            _admin(made, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._made.clear()


def copy_row(raw: Raw, table: str, where: str, *params: object, **new: object) -> None:
    """Insert a copy of the one row matching ``where``, with the ``new`` column values (every
    column copied by name, so the forgery follows the schema whatever its version)."""
    columns = raw.columns(table)
    assert set(new) <= set(columns), (table, new)
    picked = ", ".join("?" if c in new else c for c in columns)
    values = [new[c] for c in columns if c in new]
    done = raw.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {picked} FROM {table} WHERE {where}",
        *values,
        *params,
    )
    assert done == 1, (table, where)
