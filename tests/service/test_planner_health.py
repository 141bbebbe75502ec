"""The planner's health follows its resolver: ``assay.v1.PlannerService`` is NOT_SERVING while
the resolver is unreachable and SERVING again by itself once it is back; the server as a
whole (``""``) stays SERVING throughout, and each change is one log line.

Real resolver and planner servers on loopback; the resolver is stopped and started again on
the same port, and the planner's health is polled (never slept on) with a deadline.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.runtime.server import RunningService, serving
from assay.services.planner.service import build_spec
from assay.services.registry import ServeOptions
from tests.service.planner_harness import FAST_STOP, resolver_spec
from tests.support.eventually import eventually_async
from tests.support.processes import free_port

PLANNER = "assay.v1.PlannerService"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
# The probe retries a failing resolver within 2 s and checks a healthy one every second.
WITHIN_SECONDS = 10.0
SERVING_STATUS = health_pb2.HealthCheckResponse.ServingStatus


@asynccontextmanager
async def resolver_on(port: int) -> AsyncIterator[RunningService]:
    spec = resolver_spec()
    spec.port = port
    async with serving([spec], FAST_STOP) as running:
        yield running[0]


@asynccontextmanager
async def planner_calling(port: int) -> AsyncIterator[health_pb2_grpc.HealthStub]:
    spec = await build_spec(ServeOptions(port=0, resolver_target=f"127.0.0.1:{port}"))
    async with (
        serving([spec], FAST_STOP) as running,
        grpc.aio.insecure_channel(running[0].address) as channel,
    ):
        yield health_pb2_grpc.HealthStub(channel)


async def status(health: health_pb2_grpc.HealthStub, name: str = PLANNER) -> int:
    reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
    return int(reply.status)


async def becomes(health: health_pb2_grpc.HealthStub, wanted: int) -> None:
    """Poll the planner's status until it is ``wanted``."""

    async def reached() -> bool:
        return await status(health) == wanted

    await eventually_async(
        reached,
        message=f"planner health to become {SERVING_STATUS.Name(wanted)}",
        timeout=WITHIN_SECONDS,
        interval=0.05,
    )


class TestPlannerHealth:
    async def test_serving_while_its_resolver_serves(self) -> None:
        """A planner started against a live resolver is SERVING from the start."""
        port = free_port()
        async with resolver_on(port), planner_calling(port) as health:
            assert await status(health) == SERVING
            assert await status(health, "") == SERVING

    async def test_not_serving_from_the_start_without_a_resolver(self) -> None:
        """Started before its resolver: NOT_SERVING for its name at once, the server SERVING."""
        async with planner_calling(free_port()) as health:
            assert await status(health) == NOT_SERVING
            assert await status(health, "") == SERVING

    async def test_follows_the_resolver_down_and_back_up(self, log_stream: io.StringIO) -> None:
        """Resolver stopped: NOT_SERVING; started again on the same port: SERVING, by itself."""
        port = free_port()
        async with planner_calling(port) as health:
            async with resolver_on(port):
                await becomes(health, SERVING)
            await becomes(health, NOT_SERVING)
            assert await status(health, "") == SERVING
            async with resolver_on(port):
                await becomes(health, SERVING)
        events = [json.loads(line).get("event") for line in log_stream.getvalue().splitlines()]
        changes = [e for e in events if e in ("dependency_unavailable", "dependency_available")]
        assert changes == ["dependency_available", "dependency_unavailable", "dependency_available"]

    async def test_a_watch_on_the_planner_sees_the_resolver_go(self) -> None:
        """A Watch on the planner's name is told NOT_SERVING when the resolver stops."""
        port = free_port()
        async with planner_calling(port) as health:
            async with resolver_on(port):
                await becomes(health, SERVING)
                watch = health.Watch(health_pb2.HealthCheckRequest(service=PLANNER), timeout=20)
                assert (await watch.read()).status == SERVING
            reply = await asyncio.wait_for(watch.read(), WITHIN_SECONDS)
            assert reply.status == NOT_SERVING
            watch.cancel()
