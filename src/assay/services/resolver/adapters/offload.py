"""Runs heavy resolution where it cannot stall the server, and stops it once the caller is gone.

Resolving is pure computation. On the event loop, one large request stalled everything else,
health checks included, and its work ran on long after its caller had given up.

Work of more than ``INLINE_MAX_UNITS`` (claims, or claim resolutions: the servicer counts)
runs on a pool of ``WORKERS`` threads, which also serialize its response; smaller work,
nearly every call, stays on the loop, where the hop would cost more than the work. A worker
gives the GIL up at the switch interval, so the loop keeps answering; more workers would not
resolve faster under the GIL, only hold more large requests in memory, so further heavy calls
wait (still cancellable). Each work checks its ``Stop`` (``use_cases.stop``) between chunks
and raises ``Abandoned`` once the caller has cancelled or its deadline passed; that is logged
(``resolver_work_stopped``) and counted (``Offload.stopped``). The cyclic collector stays on
here (pausing it is process-wide); work on the loop runs with it paused (``without_gc``).
(Measured: docs/performance.md.)
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import TypeVar

from assay.runtime.logging import get_logger
from assay.services.resolver.use_cases.stop import Abandoned, Stop

_In = TypeVar("_In")
_Out = TypeVar("_Out")

# Above this much work (claims, or claim resolutions) a call runs on a worker thread:
# about 10 ms of resolving, roughly 100 times what the hop to a thread costs.
INLINE_MAX_UNITS = 2_000
WORKERS = 2

_log = get_logger("assay.resolver")


class Offload:
    """A bounded pool of worker threads for heavy work, and the bookkeeping of stops."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="resolver-work")
        self.started = 0  # works a worker has started, since start
        self.stopped = 0  # works stopped early, since start
        self.lingered: list[float] = []  # per stop, seconds the work ran on after it (last 16)

    async def run(
        self,
        method: str,
        work: Callable[[_In, Stop], _Out],
        request: _In,
        remaining: float | None,
    ) -> _Out:
        """``work(request, stop)`` on a worker; ``remaining`` is the caller's time left.

        Cancelling the awaiting task (grpc does when the caller cancels or its deadline
        passes) stops the work at its next check; work that stops on its own clock raises
        ``asyncio.CancelledError`` here, as a cancelled call would."""
        stop = Stop(remaining)
        done: Future[_Out] = self._pool.submit(self._run, work, request, stop)
        loop = asyncio.get_running_loop()
        # Each way out lets go of ``done`` first: the error's traceback holds this frame, and
        # the future holds the error, so the two would keep each other (and the request the
        # worker's frames hold) alive until a full collection.
        try:
            return await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            stop.cancel()
            if not done.cancel():  # it started: record when it unwinds
                done.add_done_callback(lambda _: _soon(loop, lambda: self._record(method, stop)))
            del done
            raise
        except Abandoned:
            del done
            self._record(method, stop)
            raise asyncio.CancelledError from None
        except BaseException:
            del done
            raise

    def _run(self, work: Callable[[_In, Stop], _Out], request: _In, stop: Stop) -> _Out:
        self.started += 1
        try:
            return work(request, stop)
        finally:
            stop.finished = time.monotonic()

    def _record(self, method: str, stop: Stop) -> None:
        lingered = max(0.0, stop.finished - stop.since) if stop.finished else 0.0
        self.stopped += 1
        self.lingered = [*self.lingered[-15:], lingered]
        _log.info(
            "resolver_work_stopped",
            method=method,
            why=stop.reason or "cancelled",
            lingered_ms=round(lingered * 1000, 1),
        )

    def close(self) -> None:
        """Refuse new work and drop what waits; running work stops at its callers' stops."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def _soon(loop: asyncio.AbstractEventLoop, call: Callable[[], None]) -> None:
    """Run ``call`` on the loop (asked from a worker thread), unless the loop is closed."""
    with suppress(RuntimeError):  # the loop is closed: the server has stopped
        loop.call_soon_threadsafe(call)


def without_gc(work: Callable[[_In], _Out], request: _In) -> _Out:
    """Run synchronous request work with the cyclic garbage collector paused.

    A large request allocates hundreds of thousands of acyclic tuples and lists, and
    the generation scans those allocations trigger cost a large share of the time.
    Nothing here creates reference cycles and ``work`` never awaits, so no other request
    runs meanwhile. Everything ``work`` allocated except its result is freed when it
    returns, before the collector is switched back on, so no deferred scan is left over.
    """
    if not gc.isenabled():
        return work(request)
    gc.disable()
    try:
        return work(request)
    finally:
        gc.enable()
