"""Which asyncpg errors mean "PostgreSQL cannot be reached" (see ``storage.faults``).

The server is gone or going: the connection was lost or never made
(``PostgresConnectionError``, SQLSTATE class 08, and the ``OSError`` of a refused or reset
socket), the server is shutting down, crashing or still starting (57P01, 57P02, 57P03), it
refuses more connections (53300), or none of a multi-host URL's servers is the kind
``target_session_attrs`` asks for (``TargetServerAttributeNotMatched``: during a failover,
before the standby is promoted). ``InterfaceError`` counts only for a statement sent on a
connection asyncpg already knows is closed; other ``InterfaceError``\\ s are the client's own
mistakes and stay unexpected, as does every other SQLSTATE (a constraint, a syntax error):
those are bugs, not outages.

A connection its server is closing, or the pool took back, fails oddly: ``lost`` tells that
apart by the connection's state. ``quiet_pool_log`` quiets the pool's reconnect tracebacks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import asyncpg

from assay.runtime.logging import get_logger

_log = get_logger("assay.adjudication.storage")

_GONE = (
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    # Of a multi-host URL's servers, none is (yet) what it asks for: a standby not yet promoted.
    asyncpg.TargetServerAttributeNotMatched,
    OSError,  # ConnectionRefusedError, ConnectionResetError, TimeoutError on connect
)
# asyncpg's wording for a statement on a closed connection ("connection is closed") and
# for one cut off mid-operation ("connection was closed in the middle of operation").
_CLOSED = ("connection is closed", "connection was closed")


def is_unreachable(error: BaseException) -> bool:
    """Whether ``error``, or the error it was raised ``from``, says the database is gone."""
    for current in (error, error.__cause__):
        if isinstance(current, _GONE):
            return True
        if isinstance(current, asyncpg.InterfaceError) and str(current).startswith(_CLOSED):
            return True
    return False


# What asyncpg raises for a statement on a connection whose server is closing it, or which
# the pool already took back: the connection's state tells the two causes apart.
_ODD = (asyncpg.InternalClientError, asyncpg.InterfaceError)
# How long ``lost`` waits for a connection that failed oddly to be closed by its server.
CLOSE_WAIT_SECONDS = 0.5
_POLL_SECONDS = 0.01


def usable(db: Any) -> bool:
    """Whether pooled connection ``db`` can still be used: not closed, and not taken back by
    the pool, which detaches a connection its server closed (``InterfaceError`` on any call)."""
    try:
        return not db.is_closed()
    except asyncpg.InterfaceError:
        return False


async def lost(error: BaseException, db: Any | None) -> bool:
    """Whether ``error``, raised by work on ``db`` (None: none was had yet), means the
    database could not be reached (module docstring).

    A server that terminates an idle session sends its FATAL message before closing the
    socket, and a statement sent between the two fails with ``InternalClientError`` (the
    protocol is still consuming that message); one sent on a connection the pool took back
    when its server closed it fails with ``InterfaceError``. So for those this waits a
    moment for ``db`` to be closed: if it is, the error was the lost connection; if it stays
    open, the error is what it says."""
    if is_unreachable(error):
        return True
    if db is None or not isinstance(error, _ODD):
        return False
    deadline = asyncio.get_running_loop().time() + CLOSE_WAIT_SECONDS
    while usable(db):
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(_POLL_SECONDS)
    return True


class _PoolLog(logging.Filter):
    """Turns asyncpg's pool warnings into one structured line each, without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        _log.warning(
            "database_pool",
            message=record.getMessage(),
            error=f"{type(error).__name__}: {error}" if error is not None else None,
        )
        return False


def quiet_pool_log() -> None:
    """Route asyncpg's pool log through ``_PoolLog`` (once per process).

    asyncpg's pool reconnects its floor of connections in the background and, when that
    fails, logs a warning with the whole traceback through the standard ``logging`` module,
    once per second while the server is down; this makes each one structured warning line
    naming the error, like every other line the server writes."""
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, _PoolLog) for f in pool_log.filters):
        pool_log.addFilter(_PoolLog())
