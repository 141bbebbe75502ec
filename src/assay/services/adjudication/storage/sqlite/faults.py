"""Which SQLite errors mean the database cannot be had right now, rather than a bug.

SQLite has no server to lose: the one such case is a file whose lock another
connection holds (``SQLITE_BUSY``, ``SQLITE_LOCKED``), which is busy, not
broken, and a caller may retry. The shared half, what the caller is told
(UNAVAILABLE with a retry delay), is ``storage.faults``; PostgreSQL's driver
errors are sorted in ``storage.postgres.faults``.
"""

from __future__ import annotations

import sqlite3

# SQLite's primary result codes meaning "another connection holds the lock".
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def is_unreachable(error: BaseException) -> bool:
    """Whether a SQLite error means the file is locked by another connection (busy)."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
