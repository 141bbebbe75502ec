"""Which asyncio event loop a server process runs on.

``uvloop`` (libuv under asyncio's API) cuts the per-call overhead of the loop itself --
futures, callbacks, the hops to the SQLite writer thread -- which for a Python gRPC server is
a large part of every small call (docs/performance.md). grpc.aio runs on any asyncio loop.
``auto`` (the default) takes uvloop when it is installed (a dependency wherever it has
wheels: not on Windows) and the standard loop otherwise; ``asyncio`` forces the standard
loop, ``uvloop`` insists on uvloop.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
LOOPS = ("auto", "uvloop", "asyncio")
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def resolve_loop(name: str) -> str:
    """The loop ``name`` stands for here: ``uvloop`` or ``asyncio``.

    Raises ``ValueError`` for an unknown name, or ``uvloop`` when it is not installed."""
    if name not in LOOPS:
        raise ValueError(f"unknown event loop {name!r}: choose one of {', '.join(LOOPS)}")
    if name == "auto":
        return "uvloop" if uvloop_available() else "asyncio"
    if name == "uvloop" and not uvloop_available():
        raise ValueError("event loop 'uvloop' is not installed here (pip install uvloop)")
    return name


def loop_factory(name: str) -> LoopFactory | None:
    """A factory for ``asyncio.Runner``; None means the standard loop."""
    if resolve_loop(name) == "asyncio":
        return None
    import uvloop

    factory: LoopFactory = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T], name: str = "auto") -> T:
    """``asyncio.run`` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
        return runner.run(main)


def running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: what the running loop is (for the start-up log line)."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
