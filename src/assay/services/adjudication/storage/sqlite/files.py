"""The database file is owner-only (0600): reviews, verdicts and the ledger are in it.

SQLite creates a missing file with 0644 (less the umask), so the file is
created here first, with ``os.open(..., 0o600)``, before SQLite opens it;
SQLite then gives the ``-wal`` and ``-shm`` files it creates the database
file's own mode. A file that already exists with group or other bits (made by
an older Assay, or by hand) is tightened to owner-only, with its side files,
and the server says so once in its log: refusing to start would lock out an
operator whose data is fine, and leaving it readable would keep the leak.
"""

from __future__ import annotations

import os
import stat

from assay.runtime.logging import get_logger

DB_MODE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")
_log = get_logger("assay.adjudication")


def owner_only(path: str) -> None:
    """Create ``path`` empty and 0600 if it is missing; else strip group/other bits from it
    and its side files (logging each change, or why it could not be made)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_MODE)
    except FileExistsError:
        for candidate in (path, *(path + suffix for suffix in SIDE_FILES)):
            _tighten(candidate)
    else:
        os.close(fd)


def _tighten(path: str) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    if not mode & 0o077:
        return
    tightened = mode & 0o700
    try:
        os.chmod(path, tightened)
    except OSError as error:
        _log.warning(
            "database_file_readable_by_others", path=path, mode=oct(mode), error=str(error)
        )
        return
    _log.warning("database_file_made_owner_only", path=path, was=oct(mode), now=oct(tightened))
