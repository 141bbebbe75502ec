"""``Trimmer``: trims after large calls are coalesced and spaced, and run off the loop."""

from __future__ import annotations

import asyncio
import platform
import threading

import pytest

from assay.runtime.memory import Trimmer, fix_allocator_thresholds, release_free_memory
from tests.support.eventually import eventually_async


class Recorder:
    """A stand-in for ``malloc_trim``: records the thread it ran on, and can be held."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.hold = threading.Event()
        self.hold.set()

    def __call__(self) -> bool:
        self.threads.append(threading.current_thread().name)
        self.hold.wait(5)
        return True


async def settled(trimmer: Trimmer) -> None:
    """Let scheduled callbacks and the worker thread run until nothing is pending."""
    await eventually_async(lambda: not trimmer.pending, message="the trim to finish")


async def turns(count: int = 5) -> None:
    """Let the loop run ``count`` iterations: a callback scheduled for now would have run."""
    for _ in range(count):
        await asyncio.sleep(0)


class TestTrimmer:
    async def test_trims_once_off_the_loop_thread(self) -> None:
        """A request trims once, on a worker thread, and runs ``first`` before it."""
        release = Recorder()
        firsts: list[int] = []
        trimmer = Trimmer(release, first=lambda: firsts.append(1))
        trimmer.request()
        await settled(trimmer)
        assert trimmer.trims == 1
        assert len(release.threads) == 1
        assert release.threads[0] != threading.current_thread().name
        assert firsts == [1]

    async def test_requests_while_one_is_pending_coalesce(self) -> None:
        """Ten requests during a running trim add nothing."""
        release = Recorder()
        release.hold.clear()
        trimmer = Trimmer(release)
        trimmer.request()
        await eventually_async(lambda: release.threads, message="the trim running on its thread")
        for _ in range(10):
            trimmer.request()
        release.hold.set()
        await settled(trimmer)
        assert trimmer.trims == 1

    async def test_next_trim_waits_out_the_interval(self) -> None:
        """After a trim, the next is scheduled for the end of the interval, not at once;
        ``first`` does not run again."""
        release = Recorder()
        now = [100.0]
        firsts: list[int] = []
        trimmer = Trimmer(
            release, interval=3600, clock=lambda: now[0], first=lambda: firsts.append(1)
        )
        trimmer.request()
        await settled(trimmer)
        trimmer.request()
        await turns()  # a trim scheduled without waiting would have started by now
        assert trimmer.pending, "the second request is waiting"
        assert trimmer.trims == 1  # the second waits an hour
        assert firsts == [1]

    async def test_nothing_to_call_does_nothing(self) -> None:
        """Without ``malloc_trim`` (not glibc) a request schedules nothing."""
        trimmer = Trimmer(None)
        trimmer.request()
        assert not trimmer.pending, "nothing was scheduled"
        await turns()
        assert trimmer.trims == 0


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator calls")
class TestGlibc:
    def test_calls_reach_the_allocator(self) -> None:
        """``mallopt`` accepts both thresholds; ``malloc_trim`` runs (and says whether it
        returned anything, which depends on the heap)."""
        assert fix_allocator_thresholds() is True
        assert release_free_memory() in (True, False)
