"""Running asyncpg work from a synchronous writer job, on the event loop's own thread.

The service's write jobs are plain synchronous functions of a ``WriteTx`` (see
``storage.sqlite.tx``), and asyncpg is asyncio-only. The PostgreSQL writer runs a batch of
jobs inside a greenlet on the loop's thread (``run_sync``); each ``WriteTx`` method hands its
coroutine to ``Bridge.run``, which switches back to the writer's task, awaits the coroutine
there (the loop serves everything else meanwhile) and switches into the job again with the
result or the exception. This is the technique SQLAlchemy's asyncio extension uses.

A worker thread with ``run_coroutine_threadsafe`` was tried first: each statement then had
to win the GIL back from a busy loop, which cut a replica's commit rate to a small fraction
of raw inserts (docs/performance.md). A greenlet switch costs microseconds and involves no
other thread.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import greenlet

T = TypeVar("T")


class _JobGreenlet(greenlet.greenlet):
    """The greenlet a batch of jobs runs in; ``driver`` is the writer task's greenlet."""

    def __init__(self, work: Callable[..., Any], driver: greenlet.greenlet) -> None:
        super().__init__(work, driver)
        self.driver = driver


async def run_sync(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a greenlet on this thread, awaiting every coroutine it passes to
    ``Bridge.run``; its result or exception comes back here."""
    job = _JobGreenlet(work, greenlet.getcurrent())
    pending: Any = job.switch(*args)
    while not job.dead:
        try:
            value = await pending
        except BaseException:
            pending = job.throw(*sys.exc_info())
        else:
            pending = job.switch(value)
    result: T = pending
    return result


class Bridge:
    """What a job's ``WriteTx`` uses to run SQL: only inside ``run_sync``."""

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """``await work`` in the writer's task; the result or exception comes back here."""
        current = greenlet.getcurrent()
        if not isinstance(current, _JobGreenlet):
            work.close()
            raise RuntimeError("a PostgreSQL WriteTx is used outside its writer job")
        awaitable: Awaitable[T] = work
        result: T = current.driver.switch(awaitable)
        return result
