"""A database that cannot be reached, told apart from every other storage failure.

A database restart, a lost connection or a server refusing connections is not a bug in the
service, which recovers by itself (the next statement reconnects). So it must not reach the
caller as INTERNAL with a traceback in the log: it becomes ``UNAVAILABLE``, reason
``STORAGE_UNAVAILABLE``, with a ``RetryInfo`` delay when repeating is safe, and the call's
log line is the one warning every refused call gets. Each engine says which driver errors
mean "unreachable" (``sqlite.faults``, ``postgres.faults``); anything else stays an
unexpected failure.

A repeat's safety depends on where the connection was lost: before COMMIT was sent nothing
of the batch is stored; during COMMIT the write may be stored. A write keyed by a request id
is safe to repeat either way (the repeat returns the stored response, or runs it the first
time); one without is answered without RetryInfo, with metadata ``commit_outcome: unknown``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assay.errors import Unavailable, storage_unavailable

# What RetryInfo asks callers to wait before repeating. A database restart takes about a
# second; clients back off further on each attempt (``assay.client.overload``).
RETRY_DELAY_SECONDS = 0.25


def unreachable(cause: BaseException) -> Unavailable:
    """The error for a call that stored nothing because the database could not be reached.
    The driver's message stays in the server: the caller learns only its kind."""
    return storage_unavailable(
        f"the database is unavailable ({type(cause).__name__}); retry after the delay in RetryInfo",
        RETRY_DELAY_SECONDS,
    )


def commit_unknown(cause: BaseException, job: Callable[..., Any]) -> Unavailable:
    """The error for a write whose COMMIT lost the database: safe to repeat (with RetryInfo)
    only when ``job`` is keyed by a request id (its ``request_id`` attribute)."""
    kind = type(cause).__name__
    if getattr(job, "request_id", ""):
        return storage_unavailable(
            f"the database connection was lost while committing ({kind}); the write may "
            "have been stored: repeating it with the same request_id is safe",
            RETRY_DELAY_SECONDS,
        )
    return storage_unavailable(
        f"the database connection was lost while committing ({kind}); the write may have "
        "been stored, and without a request_id repeating it could act twice",
        None,
    )
