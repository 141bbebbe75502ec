"""A SQLite corpus opened to be copied elsewhere: read-only, whole, in one snapshot.

The file's process lock is taken first (``single_process``), so no server writes it while
it is read and nothing it acknowledges afterwards is left behind. The connection is opened
``mode=ro`` and ``query_only``, inside one read transaction. A file at another schema
version than this code's is refused, never migrated here: the copy must be of a schema the
target's migrations hold column for column, and migrating the operator's only copy is the
server's job (``assay serve`` migrates at start), done knowingly, after a backup.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.services.adjudication.storage.corpus_tables import ORDER_COLUMNS, TABLES, TableRows
from assay.services.adjudication.storage.sqlite.schema import SCHEMA_VERSION
from assay.services.adjudication.storage.sqlite.single_process import ProcessLock

BATCH = 2000


class SourceRefused(ValueError):
    """The file cannot be copied as it is; the message says why, in one line."""


class ReadOnlySource:
    """The open file; ``close`` ends the read and releases the lock."""

    def __init__(self, db: sqlite3.Connection, lock: ProcessLock) -> None:
        self._db = db
        self._lock = lock

    @classmethod
    def open(cls, path: Path) -> ReadOnlySource:
        if not path.is_file():
            raise SourceRefused(f"{path}: no such SQLite file")
        lock = ProcessLock.acquire(str(path))  # DatabaseInUse names the file
        try:
            uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"
            db = sqlite3.connect(uri, uri=True, isolation_level=None)
        except BaseException:
            lock.release()
            raise
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA query_only = ON")
            db.execute("BEGIN")
            _check_version(db, path)
            found = {r[0] for r in db.execute(_TABLES_SQL)}
            if found != set(TABLES):
                raise SourceRefused(f"{path}: tables {sorted(found)} are not Assay's")
        except sqlite3.DatabaseError as error:
            db.close()
            lock.release()
            raise SourceRefused(f"{path}: {error}") from None
        except BaseException:
            db.close()
            lock.release()
            raise
        return cls(db, lock)

    def close(self) -> None:
        try:
            self._db.execute("COMMIT")
        finally:
            self._db.close()
            self._lock.release()

    def columns(self, table: str) -> list[str]:
        return [str(r["name"]) for r in self._db.execute(f"PRAGMA table_info({table})")]

    def table(self, table: str) -> TableRows:
        """``table``'s rows in rowid order; reviews with their rowid as ``position``."""
        names = self.columns(table)
        order = ORDER_COLUMNS.get(table)
        selected = ", ".join((f"rowid AS {order}", *names) if order else names)
        cursor = self._db.execute(f"SELECT {selected} FROM {table} ORDER BY rowid")
        columns = [order, *names] if order else names
        return TableRows(table, columns, _batches(cursor))

    def chain_hashes(self) -> Iterator[tuple[int, str]]:
        """(sequence, stored chain hash) of every audit event, in order."""
        for found in self._db.execute("SELECT sequence, hash FROM audit_events ORDER BY sequence"):
            yield int(found["sequence"]), str(found["hash"])


_TABLES_SQL = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"


def _check_version(db: sqlite3.Connection, path: Path) -> None:
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise SourceRefused(
            f"{path} has schema version {version}, newer than this assay's {SCHEMA_VERSION}: "
            "migrate it with the Assay that wrote it"
        )
    if version < SCHEMA_VERSION:
        raise SourceRefused(
            f"{path} has schema version {version}; this assay copies version {SCHEMA_VERSION}: "
            f"back it up, start `assay serve adjudication --db {path}` once (it migrates at "
            "start) and stop it, then copy again"
        )


def _batches(cursor: sqlite3.Cursor) -> Iterator[list[tuple[Any, ...]]]:
    while batch := cursor.fetchmany(BATCH):
        yield [tuple(r) for r in batch]
