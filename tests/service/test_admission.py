"""Admission control through real grpc.aio servers: a bound on calls at once, refusals that
say when to retry, the Assay clients retrying them, and no call left without a status.

A held servicer keeps calls in flight on purpose (each waits for ``release``), so a burst
past the limit is deterministic; the 2,000-call burst runs against the real resolver with
the default limit, where grpc's own pending-call queue used to drop calls with a bare
CANCELLED and no log line.
"""

from __future__ import annotations

import asyncio
import collections
import io
import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.client import AsyncResolverClient, ResolverClient
from assay.client.errors import AssayCallError
from assay.rpc_errors import decode_rpc_error
from assay.runtime.admission import MAX_RETRY_SECONDS, PUSHBACK_KEY, retry_delay
from assay.runtime.config import ServerConfig
from assay.runtime.server import RunningService, ServiceSpec, serving
from assay.services.registry import ServeOptions
from assay.services.resolver.service import build_spec
from assay.v1 import resolver_service_pb2 as rs
from assay.v1 import resolver_service_pb2_grpc as rs_grpc
from tests.service.test_resolver_rpcs import EVIDENCE, SUBJECT
from tests.support.eventually import eventually_async

SERVICE = rs.DESCRIPTOR.services_by_name["ResolverService"]
LIMIT = 4
POLICY = "/assay.v1.ResolverService/GetResolverPolicy"


class HeldServicer:
    """GetResolverPolicy waits for ``release``; every other method is never called."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0

    async def GetResolverPolicy(self, request: Any, context: Any) -> Any:
        self.started += 1
        await self.release.wait()
        return rs.GetResolverPolicyResponse(conflict_margin=0.2, reliability_table_origin="t")

    def __getattr__(self, name: str) -> Any:
        async def unused(request: Any, context: Any) -> Any:
            raise AssertionError(f"{name} is not part of this test")

        return unused


@pytest.fixture
async def held(log_stream: io.StringIO) -> AsyncIterator[tuple[RunningService, HeldServicer]]:
    servicer = HeldServicer()
    spec = ServiceSpec("held", SERVICE, servicer, port=0)
    config = ServerConfig(grace_seconds=0.5, max_concurrent_rpcs=LIMIT)
    async with serving([spec], config) as running:
        try:
            yield running[0], servicer
        finally:
            servicer.release.set()


async def fill(service: RunningService, channel: grpc.aio.Channel) -> list[asyncio.Task[Any]]:
    """``LIMIT`` calls in flight, admitted and held."""
    raw = channel.unary_unary(POLICY)
    held = [asyncio.ensure_future(raw(b"", timeout=20)) for _ in range(LIMIT)]
    await eventually_async(
        lambda: service.admission.in_flight == LIMIT, message="the held calls to be admitted"
    )
    return held


def rpc_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    lines = (json.loads(raw) for raw in stream.getvalue().splitlines())
    return [line for line in lines if line.get("event") == "rpc"]


def details_of(error: grpc.aio.AioRpcError) -> tuple[str, float]:
    """The ErrorInfo reason and the RetryInfo delay (-1.0: none) of a failed call."""
    decoded = decode_rpc_error(error)
    return decoded.reason, -1.0 if decoded.retry_delay is None else decoded.retry_delay


class TestRefusals:
    async def test_calls_past_the_limit_are_refused_at_once_with_retry_info(
        self, held: tuple[RunningService, HeldServicer], log_stream: io.StringIO
    ) -> None:
        """With the limit in flight, 30 more calls each get RESOURCE_EXHAUSTED, OVERLOADED,
        a RetryInfo delay and the same delay as grpc's pushback trailer; none is started."""
        service, servicer = held
        async with grpc.aio.insecure_channel(service.address) as channel:
            in_flight = await fill(service, channel)
            raw = channel.unary_unary(POLICY)
            refused = await asyncio.gather(
                *(raw(b"", timeout=10) for _ in range(30)), return_exceptions=True
            )
            servicer.release.set()
            answered = await asyncio.gather(*in_flight)
        assert len(answered) == LIMIT
        assert servicer.started == LIMIT
        for error in refused:
            assert isinstance(error, grpc.aio.AioRpcError), error
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            reason, delay = details_of(error)
            assert reason == "ERROR_REASON_OVERLOADED"
            assert 0 < delay <= MAX_RETRY_SECONDS
            trailers = dict(error.trailing_metadata() or ())
            assert int(trailers[PUSHBACK_KEY]) == pytest.approx(delay * 1000, abs=1)
            assert trailers["x-request-id"]
        lines = [line for line in rpc_lines(log_stream) if line["code"] == "RESOURCE_EXHAUSTED"]
        assert len(lines) == 30
        assert {line["reason"] for line in lines} == {"ERROR_REASON_OVERLOADED"}
        assert service.admission.refused_overloaded == 30

    async def test_health_answers_while_the_service_is_full(
        self, held: tuple[RunningService, HeldServicer]
    ) -> None:
        """The bound is the service's: health checks are not counted, and keep answering."""
        service, _ = held
        async with grpc.aio.insecure_channel(service.address) as channel:
            await fill(service, channel)
            health = health_pb2_grpc.HealthStub(channel)
            for name in ("", SERVICE.full_name):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING

    async def test_a_slot_is_freed_when_a_caller_gives_up(
        self, held: tuple[RunningService, HeldServicer]
    ) -> None:
        """A held call whose caller cancels leaves the count, so the limit is not leaked."""
        service, _ = held
        async with grpc.aio.insecure_channel(service.address) as channel:
            in_flight = await fill(service, channel)
            in_flight[0].cancel()
            await eventually_async(
                lambda: service.admission.in_flight == LIMIT - 1, message="the slot to free"
            )


class TestClientsRetry:
    async def test_async_client_retries_after_the_servers_delay(
        self, held: tuple[RunningService, HeldServicer]
    ) -> None:
        """The async client's call is refused, waits the delay, and succeeds once there is room."""
        service, servicer = held
        async with (
            grpc.aio.insecure_channel(service.address) as channel,
            AsyncResolverClient(service.address) as client,
        ):
            await fill(service, channel)
            call = asyncio.ensure_future(client.get_resolver_policy(timeout=10))
            await eventually_async(
                lambda: service.admission.refused_overloaded >= 1, message="a refusal"
            )
            servicer.release.set()
            reply = await call
        assert reply.reliability_table_origin == "t"

    async def test_sync_client_retries_after_the_servers_delay(
        self, held: tuple[RunningService, HeldServicer]
    ) -> None:
        """The blocking client does the same (run in a thread: the server shares this loop)."""
        service, servicer = held

        def policy() -> Any:
            with ResolverClient(service.address) as client:
                return client.get_resolver_policy(timeout=10)

        async with grpc.aio.insecure_channel(service.address) as channel:
            await fill(service, channel)
            call = asyncio.ensure_future(asyncio.to_thread(policy))
            await eventually_async(
                lambda: service.admission.refused_overloaded >= 1, message="a refusal"
            )
            servicer.release.set()
            reply = await call
        assert reply.reliability_table_origin == "t"

    async def test_retries_stop_within_the_callers_timeout(
        self, held: tuple[RunningService, HeldServicer]
    ) -> None:
        """Never any room: the caller gets the refusal itself, within its own timeout."""
        service, _ = held
        async with (
            grpc.aio.insecure_channel(service.address) as channel,
            AsyncResolverClient(service.address) as client,
        ):
            await fill(service, channel)
            started = time.monotonic()
            with pytest.raises(AssayCallError) as caught:
                await client.get_resolver_policy(timeout=0.6)
            elapsed = time.monotonic() - started
        assert caught.value.code in (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.StatusCode.DEADLINE_EXCEEDED,
        )
        if caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            assert caught.value.reason == "ERROR_REASON_OVERLOADED"
        assert elapsed < 1.5
        assert service.admission.refused_overloaded >= 1


class TestBurst:
    async def test_every_call_of_a_2000_call_burst_gets_a_status_and_a_log_line(
        self, log_stream: io.StringIO
    ) -> None:
        """2,000 simultaneous calls to the real resolver: each is answered OK or refused with a
        retryable status; none is dropped (no CANCELLED), and the server logs every one."""
        spec = await build_spec(ServeOptions(port=0))
        request = rs.ResolveSemanticRequest(
            evidence=EVIDENCE, subject=SUBJECT, predicate="idempotency.mode"
        )
        async with (
            serving([spec], ServerConfig(grace_seconds=1)) as running,
            grpc.aio.insecure_channel(running[0].address) as channel,
        ):
            stub = rs_grpc.ResolverServiceStub(channel)

            async def one() -> str:
                try:
                    await stub.ResolveSemantic(request, timeout=60)
                except grpc.aio.AioRpcError as error:
                    return str(error.code().name)
                return "OK"

            codes = collections.Counter(await asyncio.gather(*(one() for _ in range(2000))))
        assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes
        assert sum(codes.values()) == 2000
        logged = collections.Counter(line["code"] for line in rpc_lines(log_stream))
        assert logged == codes


class TestRetryDelay:
    @pytest.mark.parametrize(
        ("base", "attempts", "low", "high"),
        [
            (0.1, 0, 0.05, 0.1),
            (0.1, 1, 0.1, 0.2),
            (0.1, 3, 0.4, 0.8),
            (0.1, 30, MAX_RETRY_SECONDS / 2, MAX_RETRY_SECONDS),
        ],
    )
    def test_doubles_per_attempt_with_jitter_and_a_cap(
        self, base: float, attempts: int, low: float, high: float
    ) -> None:
        """The delay doubles per previous attempt, is capped, and is jittered within half."""
        rand = random.Random(7)
        delays = [retry_delay(base, attempts, rand) for _ in range(200)]
        assert low <= min(delays)
        assert max(delays) <= high
        assert len(set(delays)) > 100  # spread, not one value for the whole burst
