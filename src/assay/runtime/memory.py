"""Gives the memory a large request used back to the operating system.

Freeing a Python object returns its memory to the C allocator, not to the OS, and glibc's
``malloc`` keeps much of it: its threshold for serving a block straight from the OS (mmap)
rises to the size of every such block freed, so after one large request the next ones are
carved from per-thread heaps, which give memory back only from their top. A server that
parsed a few large requests stayed far above its start-up size though nothing referred to
them any more (``malloc_trim`` alone did not help).

So once the first call whose request held at least ``LARGE_REQUEST_BYTES`` has ended, the
thresholds are fixed (``mallopt``: ``MMAP_THRESHOLD_BYTES``, ``TRIM_THRESHOLD_BYTES``), and
after each such call a ``malloc_trim(0)`` returns the free pages inside the heaps. Trims are
coalesced (at most one per ``MIN_TRIM_INTERVAL`` seconds) and run on a worker thread, so the
event loop never waits on one. Small calls are untouched; off glibc nothing changes. The
before and after: docs/performance.md.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import time
from collections.abc import Callable
from typing import Any

LARGE_REQUEST_BYTES = 1 << 20
MMAP_THRESHOLD_BYTES = 1 << 20
TRIM_THRESHOLD_BYTES = 2 << 20  # twice the mmap threshold, as glibc's own adjustment sets it
MIN_TRIM_INTERVAL = 1.0

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3


def _glibc() -> Any:
    """The process's C library when it is glibc (it has ``malloc_trim``), else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
    except (OSError, AttributeError, TypeError):  # no C library to open, or not glibc's
        return None
    return libc


_LIBC = _glibc()


def release_free_memory() -> bool:
    """Return the allocator's free pages to the OS now; True if any were returned.

    Blocks for as long as the allocator takes (milliseconds for a large heap): call it
    off the event loop. False where there is nothing to call."""
    return bool(_LIBC.malloc_trim(0)) if _LIBC is not None else False


def fix_allocator_thresholds() -> bool:
    """Stop glibc raising its mmap and trim thresholds after large blocks (see the module
    docstring); True if both were set. Idempotent; a no-op without glibc."""
    if _LIBC is None:
        return False
    mmap_set = _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    trim_set = _LIBC.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    return bool(mmap_set and trim_set)


class Trimmer:
    """Coalesces trim requests: one trim at a time, at most one start per ``interval``.

    ``release`` runs on the loop's default executor, ``first`` on the loop before the
    first trim is scheduled; ``clock`` is ``time.monotonic`` unless a test says otherwise."""

    def __init__(
        self,
        release: Callable[[], bool] | None,
        interval: float = MIN_TRIM_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        first: Callable[[], object] = lambda: None,
    ) -> None:
        self._release = release
        self._first: Callable[[], object] | None = first
        self._interval = interval
        self._clock = clock
        self._last_start = -math.inf
        self._pending = False
        self.trims = 0  # started so far: for tests and diagnostics

    @property
    def pending(self) -> bool:
        """Whether a trim is waiting or running."""
        return self._pending

    def request(self) -> None:
        """Trim soon (on the running loop), unless a trim is already waiting or running."""
        if self._release is None or self._pending:
            return
        if self._first is not None:
            self._first()
            self._first = None
        self._pending = True
        wait = max(0.0, self._last_start + self._interval - self._clock())
        asyncio.get_running_loop().call_later(wait, self._start)

    def _start(self) -> None:
        assert self._release is not None
        self._last_start = self._clock()
        self.trims += 1
        try:
            running = asyncio.get_running_loop().run_in_executor(None, self._release)
        except RuntimeError:  # the loop is shutting its executor down: nothing to save
            self._pending = False
            return
        running.add_done_callback(self._finished)

    def _finished(self, done: asyncio.Future[bool]) -> None:
        self._pending = False
        if not done.cancelled():
            done.exception()  # retrieved, so a failure is not reported as never retrieved


_TRIMMER = Trimmer(
    release_free_memory if _LIBC is not None else None, first=fix_allocator_thresholds
)


def trim_after(_context: Any = None) -> None:
    """Done-callback for a call with a large request: trim once it has ended.

    For ``context.add_done_callback``, which grpc runs on the loop when the call is over
    (the context comes as the argument and is not needed)."""
    _TRIMMER.request()
