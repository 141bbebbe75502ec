"""Wait for a condition to hold: the one way tests wait.

A test that needs some state to appear (a gauge to read 1, a log line to be written, a
case to expire) polls a condition with :func:`eventually` (or :func:`eventually_async`
inside a coroutine) instead of sleeping a fixed time: it moves on as soon as the state
is there, and on a slow machine it waits longer instead of failing or passing by luck.

The condition's truthy result is returned, so a wait can also fetch what it waited for
(a condition returning ``X | None`` gives back an ``X``).
At the deadline the wait fails with an ``AssertionError`` that names what was awaited
and the last value (or ignored exception) the condition gave. Exceptions the caller
lists in ``ignoring`` count as "not yet"; any other exception ends the wait at once.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0
DEFAULT_INTERVAL = 0.01


def _timed_out(message: str, timeout: float, last: object, error: BaseException | None) -> str:
    seen = f"last error {error!r}" if error is not None else f"last value {last!r}"
    return f"{message}: not within {timeout}s ({seen})"


def eventually(
    condition: Callable[[], T | None],
    *,
    message: str,
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = DEFAULT_INTERVAL,
    ignoring: tuple[type[Exception], ...] = (),
) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns something truthy,
    and return that; fail naming ``message`` if it has not within ``timeout`` seconds.

    The condition is always tried at least once, and once more at the deadline.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    error: Exception | None = None
    while True:
        past = time.monotonic() >= deadline
        try:
            value = condition()
        except ignoring as caught:
            error = caught
        else:
            if value:
                return value
            last, error = value, None
        if past:
            raise AssertionError(_timed_out(message, timeout, last, error)) from error
        time.sleep(interval)


@overload
async def eventually_async(
    condition: Callable[[], Awaitable[T | None]],
    *,
    message: str,
    timeout: float = ...,  # noqa: ASYNC109 - a polling deadline, failing with the last value seen
    interval: float = ...,
    ignoring: tuple[type[Exception], ...] = ...,
) -> T: ...


@overload
async def eventually_async(
    condition: Callable[[], T | None],
    *,
    message: str,
    timeout: float = ...,  # noqa: ASYNC109 - a polling deadline, failing with the last value seen
    interval: float = ...,
    ignoring: tuple[type[Exception], ...] = ...,
) -> T: ...


async def eventually_async(
    condition: Callable[[], object],
    *,
    message: str,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - a polling deadline, failing with the last value seen
    interval: float = DEFAULT_INTERVAL,
    ignoring: tuple[type[Exception], ...] = (),
) -> object:
    """The coroutine twin of :func:`eventually`: ``condition`` may be a plain function or
    a coroutine function, and the event loop runs between tries."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: object = None
    error: Exception | None = None
    while True:
        past = loop.time() >= deadline
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
        except ignoring as caught:
            error = caught
        else:
            if value:
                return value
            last, error = value, None
        if past:
            raise AssertionError(_timed_out(message, timeout, last, error)) from error
        await asyncio.sleep(interval)
