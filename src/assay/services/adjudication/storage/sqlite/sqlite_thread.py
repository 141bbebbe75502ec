"""A ``sqlite3`` connection with a thread of its own: a whole unit of SQL work in one hop.

The standard ``sqlite3`` module blocks, so each connection gets one thread that runs what it
is handed: a plain function of the connection (a read transaction, a writer's batch), not a
statement. A review needs about eight statements, and a hop between the event loop and a
thread is costly, so statement-by-statement hops (what a generic async wrapper offers) would
make the writer wait for hops rather than SQLite; inside the function SQL calls are direct.

Only the standard library is used: a queue of (work, future) pairs drained by the thread,
each result handed back with ``call_soon_threadsafe``. The thread is a daemon, so a
connection left open never keeps the process alive; ``close`` still ends it cleanly and
closes the connection on its thread. ``check_same_thread=False`` lets the writer also use
``raw`` from the loop's thread while it holds its lock and nothing runs here (sqlite's
default serialized mode allows it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
_Item = tuple[Callable[[sqlite3.Connection], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]
_names = itertools.count(1)


class SqliteConnection:
    """One ``sqlite3`` connection and the thread that runs work on it (``run``)."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw
        self._jobs: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(
            target=self._serve, name=f"assay-sqlite-{next(_names)}", daemon=True
        )
        self._thread.start()

    @classmethod
    async def open(cls, path: str, pragmas: Iterable[str] = ()) -> SqliteConnection:
        """Connect to ``path`` (autocommit: transactions are explicit) and run ``pragmas``."""
        raw = await asyncio.to_thread(
            sqlite3.connect, path, isolation_level=None, check_same_thread=False
        )
        db = cls(raw)
        try:
            await db.run(lambda conn: [conn.execute(pragma).fetchall() for pragma in pragmas])
        except BaseException:
            await db.close()
            raise
        return db

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` on this connection's thread; its result or exception comes
        back here. A caller that is cancelled does not stop ``work``: it runs to its end."""
        if self._closed:
            raise sqlite3.ProgrammingError("the connection is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((work, loop, future))
        return await future

    async def close(self) -> None:
        """Run what was queued, close the connection on its thread, and end the thread."""
        if self._closed:
            return
        self._closed = True
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

    def _serve(self) -> None:
        while (item := self._jobs.get()) is not None:
            work, loop, future = item
            try:
                value = work(self.raw)
            except BaseException as error:  # handed back to the caller, whatever it is
                _answer(loop, future, error, failed=True)
            else:
                _answer(loop, future, value, failed=False)
        self.raw.close()


def _answer(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], value: Any, failed: bool
) -> None:
    def settle() -> None:
        if future.done():  # the caller was cancelled meanwhile
            return
        if failed:
            future.set_exception(value)
        else:
            future.set_result(value)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
        loop.call_soon_threadsafe(settle)
