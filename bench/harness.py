"""What the benchmarks share: best-of timings, call rates, and a free loopback port.

Call rates come from concurrent asyncio callers for a fixed time, every path warmed up
first, repeats interleaved so drift in machine load hits all alike; timings and rates keep
the best of their repeats (the least noisy estimate on a shared machine)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Mapping

Call = Callable[[], Awaitable[object]]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (for a server the benchmark starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def best_of(fn: Callable[[], object], repeats: int, inner: int = 1) -> float:
    """The fastest of ``repeats`` timings of ``inner`` calls, per call, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - started) / inner)
    return best


async def throughput(call: Call, concurrency: int, seconds: float) -> float:
    """Calls per second ``concurrency`` callers complete in ``seconds``."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await call()
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - started)


async def best_rates(
    calls: Mapping[str, Call], concurrency: int, seconds: float, repeats: int = 3
) -> dict[str, float]:
    """The best of ``repeats`` interleaved runs of each call, after a short warm-up of each."""
    for call in calls.values():
        await throughput(call, concurrency, 0.3)
    rates: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            rates[name].append(await throughput(call, concurrency, seconds))
    return {name: max(found) for name, found in rates.items()}
