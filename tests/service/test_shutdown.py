"""Graceful shutdown through real servers: health turns NOT_SERVING for ``Check`` and for open
``Watch`` streams (which then end), calls arriving during the drain are refused with
UNAVAILABLE / SHUTTING_DOWN, in-flight calls finish within the grace, calls still running
when it ends get UNAVAILABLE rather than a bare CANCELLED, and a real ``assay`` process with
an open ``Watch`` exits on SIGTERM without waiting out its grace period.
"""

from __future__ import annotations

import asyncio
import io
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.runtime.config import ServerConfig
from assay.runtime.server import RunningService, ServiceSpec, start, stop
from assay.v1 import resolver_service_pb2 as rs
from tests.service.test_admission import HeldServicer, details_of
from tests.support.eventually import eventually_async
from tests.support.processes import assay_command, free_port, wait_serving

SERVICE = rs.DESCRIPTOR.services_by_name["ResolverService"]
POLICY = "/assay.v1.ResolverService/GetResolverPolicy"
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVING = health_pb2.HealthCheckResponse.SERVING


@pytest.fixture
async def held() -> AsyncIterator[tuple[RunningService, HeldServicer]]:
    """A started server whose GetResolverPolicy calls wait for ``release``; the test stops it
    (a second stop is harmless)."""
    servicer = HeldServicer()
    running = await start([ServiceSpec("held", SERVICE, servicer, port=0)], ServerConfig())
    try:
        yield running[0], servicer
    finally:
        servicer.release.set()
        await stop(running, grace=0)


class TestDrain:
    async def test_an_open_watch_sees_not_serving_and_ends(
        self, held: tuple[RunningService, HeldServicer]
    ) -> None:
        """A Watch stream gets SERVING, then NOT_SERVING on stop, then ends: stop does not wait
        out its 10 s grace for it."""
        service, _ = held
        async with grpc.aio.insecure_channel(service.address) as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service=SERVICE.full_name), timeout=20
            )
            seen = [(await watch.read()).status]
            started = time.monotonic()
            stopping = asyncio.ensure_future(stop([service], grace=10))
            while (reply := await watch.read()) is not grpc.aio.EOF:
                seen.append(reply.status)
            await stopping
            elapsed = time.monotonic() - started
            assert await watch.code() == grpc.StatusCode.OK
        assert seen == [SERVING, NOT_SERVING]
        assert elapsed < 3

    async def test_during_the_drain_check_says_not_serving_and_new_calls_are_refused(
        self, held: tuple[RunningService, HeldServicer], log_stream: io.StringIO
    ) -> None:
        """While an in-flight call holds the drain: Check answers NOT_SERVING for every name,
        a new call gets UNAVAILABLE / SHUTTING_DOWN with a retry delay, and the in-flight call
        still finishes with its answer."""
        service, servicer = held
        async with grpc.aio.insecure_channel(service.address) as channel:
            raw = channel.unary_unary(POLICY)
            in_flight = asyncio.ensure_future(raw(b"", timeout=20))
            await eventually_async(
                lambda: service.admission.in_flight == 1, message="the call to be admitted"
            )
            stopping = asyncio.ensure_future(stop([service], grace=10))
            health = health_pb2_grpc.HealthStub(channel)
            for name in ("", SERVICE.full_name):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
                assert reply.status == NOT_SERVING
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await raw(b"", timeout=5)
            assert not stopping.done()
            servicer.release.set()
            answer = await in_flight
            await stopping
        assert rs.GetResolverPolicyResponse.FromString(answer).reliability_table_origin == "t"
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        reason, delay = details_of(caught.value)
        assert reason == "ERROR_REASON_SHUTTING_DOWN"
        assert delay > 0
        events = [json.loads(line) for line in log_stream.getvalue().splitlines()]
        refused = [e for e in events if e.get("event") == "rpc" and e["code"] == "UNAVAILABLE"]
        assert [e["reason"] for e in refused] == ["ERROR_REASON_SHUTTING_DOWN"]
        stopped = [e for e in events if e.get("event") == "stopped"]
        assert stopped[0]["refused_shutting_down"] == 1

    async def test_a_call_still_running_when_the_grace_ends_gets_unavailable(
        self, held: tuple[RunningService, HeldServicer], log_stream: io.StringIO
    ) -> None:
        """A call that never finishes: at the end of a 0.3 s grace its caller gets UNAVAILABLE /
        SHUTTING_DOWN (retryable), not CANCELLED, and stop returns promptly."""
        service, _ = held
        async with grpc.aio.insecure_channel(service.address) as channel:
            in_flight = asyncio.ensure_future(channel.unary_unary(POLICY)(b"", timeout=20))
            await eventually_async(
                lambda: service.admission.in_flight == 1, message="the call to be admitted"
            )
            started = time.monotonic()
            await stop([service], grace=0.3)
            elapsed = time.monotonic() - started
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await in_flight
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert details_of(caught.value)[0] == "ERROR_REASON_SHUTTING_DOWN"
        assert elapsed < 1.3
        assert '"event": "grace_period_over"' in log_stream.getvalue()


class TestProcessExit:
    def test_sigterm_with_an_open_watch_exits_promptly(self, tmp_path: Path) -> None:
        """`assay serve resolver --grace 10` with a Watch stream open: on SIGTERM the Watch
        sees NOT_SERVING and the process exits 0 well inside its grace period."""
        port = free_port()
        target = f"127.0.0.1:{port}"
        with (tmp_path / "log").open("wb") as log:
            process = subprocess.Popen(
                assay_command("serve", "resolver", "--port", str(port), "--grace", "10"),
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        try:
            wait_serving(target, process=process)
            with grpc.insecure_channel(target) as channel:
                stream = health_pb2_grpc.HealthStub(channel).Watch(
                    health_pb2.HealthCheckRequest(), timeout=20
                )
                seen = [next(stream).status]
                started = time.monotonic()
                process.send_signal(signal.SIGTERM)
                seen.extend(reply.status for reply in stream)
                code = process.wait(timeout=9)
                elapsed = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=5)
        assert seen == [SERVING, NOT_SERVING]
        assert code == 0
        assert elapsed < 3, elapsed

    def test_a_second_process_can_bind_right_after(self, tmp_path: Path) -> None:
        """After exit nothing is left holding the port: a new server starts on it at once."""
        port = free_port()
        for _ in range(2):
            with (tmp_path / "log").open("wb") as log:
                process = subprocess.Popen(
                    assay_command("serve", "resolver", "--port", str(port), "--grace", "1"),
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            try:
                wait_serving(f"127.0.0.1:{port}", process=process)
                process.send_signal(signal.SIGTERM)
                assert process.wait(timeout=5) == 0
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(timeout=5)
