"""What the heavy-work tests check while a large call runs, written once.

Health is checked every ``CHECK_EVERY`` seconds until the call ends, each check with the
``CHECK_TIMEOUT`` deadline the service promises ("answered within 1 s"); a stopped call must
be logged by the server (``resolver_work_stopped``) with how long its work lingered.
The bounds are generous for two shared cores.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.eventually import eventually_async
from tests.support.processes import AssayProcess

CHECK_EVERY = 0.1
CHECK_TIMEOUT = 1.0
# How long stopped work may linger after its caller's deadline, and how long to wait for the
# server to say so.
LINGER_BOUND_MS = 2_000.0
LOG_WAIT = 30.0


async def health_while(channel: grpc.aio.Channel, call: asyncio.Future[Any]) -> list[int | str]:
    """Each health answer (a status, or the error code's name) until ``call`` is done."""
    health = health_pb2_grpc.HealthStub(channel)
    answers: list[int | str] = []
    while not call.done():
        sent = time.monotonic()
        try:
            reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=CHECK_TIMEOUT)
            answers.append(reply.status)
        except grpc.aio.AioRpcError as error:
            answers.append(error.code().name)
        # The next check is due CHECK_EVERY after this one, or none once the call ends.
        await asyncio.wait([call], timeout=max(0.0, CHECK_EVERY - (time.monotonic() - sent)))
    return answers


async def work_stopped(process: AssayProcess, method: str) -> dict[str, Any]:
    """The server's log line saying it stopped ``method``'s work, checked: stopped for its
    caller (deadline or cancel), and soon after."""
    stopped: dict[str, Any] = await eventually_async(
        lambda: process.log_line(event="resolver_work_stopped", method=method),
        message="the server to log that it stopped the work",
        timeout=LOG_WAIT,
        interval=0.05,
    )
    assert stopped["why"] in ("deadline", "cancelled")
    assert stopped["lingered_ms"] < LINGER_BOUND_MS, stopped
    return stopped
