"""One process per SQLite file: an exclusive lock on ``<db>.lock`` for the store's life.

The SQLite store keeps one writer and remembers what it wrote (``case_cache``):
a second process writing the same file would make that memory wrong, and
its ``BEGIN IMMEDIATE`` would wait and then fail every write as INTERNAL. So
opening takes an exclusive, non-blocking ``flock`` on a lock file beside the
database and a second process is refused at once, in one line that names the
file. The kernel drops the lock when the process ends however it ends, so a
crash never leaves a stale lock behind. The lock file is owner-only, like the
database, and holds nothing: it is never deleted (deleting it while another
process waits on it would let two processes hold "the" lock).
"""

from __future__ import annotations

import fcntl
import os

LOCK_MODE = 0o600


class DatabaseInUse(RuntimeError):
    """Another process has the SQLite file open."""


class ProcessLock:
    """The held lock; ``release`` (at close) lets another process open the file."""

    def __init__(self, fd: int, path: str) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, db_path: str) -> ProcessLock:
        path = db_path + ".lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, LOCK_MODE)
        try:
            os.fchmod(fd, LOCK_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DatabaseInUse(
                f"{db_path} is in use by another process (lock {path}); "
                "one process serves a SQLite file, use PostgreSQL for replicas"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
