"""SQLite's read primitives run a shared read (``store_reads``) to its end on the reader's
thread: a read over them completes at its first step, an error inside it is raised as
itself, and a read that would suspend is refused rather than left half run."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from assay.services.adjudication.storage.sqlite.primitives import completed


async def _plain(value: int) -> int:
    return value * 2


async def _nested(value: int) -> int:
    return await _plain(value) + 1


async def _failing() -> int:
    raise LookupError("the read's own error")


async def _suspending() -> int:
    await asyncio.sleep(0)
    return 1


def test_a_read_that_never_suspends_completes() -> None:
    assert completed(_nested(20)) == 41


def test_an_error_inside_the_read_is_raised_as_itself() -> None:
    with pytest.raises(LookupError, match="the read's own error"):
        completed(_failing())


def test_a_read_that_would_suspend_is_refused_and_closed() -> None:
    read = _suspending()
    with pytest.raises(RuntimeError, match="suspended"):
        completed(read)
    assert inspect.getcoroutinestate(read) == inspect.CORO_CLOSED
