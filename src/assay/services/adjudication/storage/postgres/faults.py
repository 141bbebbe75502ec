"""Which asyncpg errors mean "PostgreSQL cannot be reached" (see ``storage.faults``).

The server is gone or going: the connection was lost or never made
(``PostgresConnectionError``, SQLSTATE class 08, and the ``OSError`` of a refused or
reset socket), the server is shutting down, crashing or still starting
(``AdminShutdownError`` 57P01, ``CrashShutdownError`` 57P02,
``CannotConnectNowError`` 57P03), or it refuses more connections
(``TooManyConnectionsError`` 53300). asyncpg also raises ``InterfaceError`` for a
statement sent on a connection it already knows is closed; other
``InterfaceError``\\ s are the client's own mistakes and stay unexpected, as does
every other SQLSTATE (a constraint, a syntax error): those are bugs, not outages.

One more case needs the connection itself: a server that terminates an idle session
sends its FATAL message before closing the socket, and a statement sent between the two
fails with ``InternalClientError`` (the protocol is still consuming that message).
``lost`` waits a moment for such a connection to close: if it does, the error was the
lost connection; if it stays open, the error is what it says.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

_GONE = (
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
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
    database could not be reached (module docstring)."""
    if is_unreachable(error):
        return True
    if db is None or not isinstance(error, asyncpg.InternalClientError):
        return False
    deadline = asyncio.get_running_loop().time() + CLOSE_WAIT_SECONDS
    while usable(db):
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(_POLL_SECONDS)
    return True
