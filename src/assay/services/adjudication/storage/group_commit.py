"""One group-commit loop for both engines' writers.

A writer task takes every job waiting in its queue (up to ``MAX_BATCH``) and hands them to
its engine, which runs them in order inside one transaction and commits once, so the batch
shares the commit's flush. Only then is each caller answered: an acknowledged write is
stored. The engine answers each job with its value or its error (a failed job vanishes
alone; a failed commit fails them all), so this loop has no failure path of its own.

A caller that gives up (deadline) cancels only its future: its job stays queued and runs,
so a retry with the same request_id finds its result. ``stop`` finishes every queued job
first. Each engine subclasses ``GroupCommitWriter`` with its own ``_run_batch``: SQLite's
(``storage.sqlite.writer``) on a connection with a thread of its own, PostgreSQL's
(``storage.postgres.writer``) over asyncpg under the chain lock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
TxT = TypeVar("TxT")
# A job's outcome: (True, its value) or (False, the error its caller gets).
Outcomes = list[tuple[bool, Any]]
MAX_BATCH = 512
# A job, the future its caller awaits, and whether it said it is small.
_Queued = tuple[Callable[[TxT], Any], asyncio.Future[Any], bool]


class GroupCommitWriter(Generic[TxT]):
    """The queue of jobs of a transaction ``TxT`` and the task that commits them in batches."""

    task_name = "adjudication-writer"

    def __init__(self) -> None:
        # Held while a batch runs (and by a store closing its connection): nothing else
        # touches the writer's connection then.
        self.lock = asyncio.Lock()
        self._queue: asyncio.Queue[_Queued[TxT] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        # Told each batch's size and seconds from BEGIN to COMMIT returned: the server's
        # metrics, when it exports them (``assay.runtime.metrics.Metrics.watch_writer``).
        self.on_batch: Callable[[int, float], None] = _unobserved

    def queue_depth(self) -> int:
        """Jobs waiting for the next batch."""
        return self._queue.qsize()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=self.task_name)

    async def submit(self, job: Callable[[TxT], T], small: bool = False) -> T:
        """Run ``job`` in the next batch; ``small``: it touches a few rows (the engine may
        then run it on the loop's thread)."""
        if self._task is None or self._task.done():
            raise RuntimeError("the adjudication writer is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((job, future, small))
        # No shield: a caller that gives up leaves its job queued (the loop skips answering
        # a done future), which saves a task-like wrapper per write.
        result: T = await future
        return result

    async def stop(self) -> None:
        """Finish every queued job, then stop."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
            self._task = None

    async def _run_batch(self, jobs: list[Callable[[TxT], Any]], small: bool) -> Outcomes:
        """Run ``jobs`` in one transaction and commit it; an outcome per job, in order.
        ``small``: every job of the batch said it touches a few rows."""
        raise NotImplementedError

    async def _loop(self) -> None:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            batch = [item]
            stopping = False
            while len(batch) < MAX_BATCH and not self._queue.empty():
                more = self._queue.get_nowait()
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            async with self.lock:
                started = time.perf_counter()
                jobs = [job for job, _, _ in batch]
                outcomes = await self._run_batch(jobs, all(small for _, _, small in batch))
                for (_, future, _), (ok, value) in zip(batch, outcomes, strict=True):
                    if future.done():
                        continue
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
                self.on_batch(len(batch), time.perf_counter() - started)
            if stopping:
                return


def _unobserved(jobs: int, seconds: float) -> None:
    pass
