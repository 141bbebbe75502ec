"""Running asyncpg work from a synchronous writer job.

The service's write jobs are plain synchronous functions of a ``WriteTx``
(see ``storage.tx``), and asyncpg is asyncio-only. The PostgreSQL writer runs
a batch's jobs on a worker thread of its own; each ``WriteTx`` method hands
one coroutine (one named query or write, however many statements) to the
event loop with ``run_coroutine_threadsafe`` and blocks the worker until it is
done. The loop is never blocked: while the job thread waits, the loop runs the
statement and everything else (other RPCs, reads).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# A statement that has not answered by then is treated as lost: the job fails (and the
# batch rolls back) instead of the worker waiting forever on a loop that has stopped.
STATEMENT_TIMEOUT_SECONDS = 120.0


class Bridge:
    """From the job's worker thread, run coroutines on ``loop`` and wait for their result."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """``await work`` on the loop; its result or exception comes back to this thread."""
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        return future.result(STATEMENT_TIMEOUT_SECONDS)
