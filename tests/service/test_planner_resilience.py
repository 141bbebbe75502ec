"""The planner when its resolver is down, slow, failing or configured differently.

The planner never plans without fusion: each of these must end in a specific
status and reason, promptly, and never in a hang or a generic INTERNAL.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.runtime.server import serving
from assay.runtime.status import decode_rpc_error
from assay.services.registry import ServeOptions
from assay.services.resolver import service as resolver_service
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY, Policy
from assay.v1 import planner_service_pb2_grpc
from tests.service.planner_harness import (
    FAST_STOP,
    WatchingResolver,
    both,
    example,
    planner_for,
    resolver_spec,
)
from tests.support.processes import free_port

# "Quickly": well under any sensible client deadline, with retries included.
FAIL_FAST_SECONDS = 2.5


class FailingResolver(WatchingResolver):
    """A resolver whose ResolveHypotheses breaks unexpectedly."""

    async def ResolveHypotheses(self, request: Any, context: Any) -> Any:
        raise RuntimeError("boom")


class TestResolverDown:
    async def test_unreachable_resolver_is_unavailable_quickly(self) -> None:
        """Nothing listens at the resolver target: UNAVAILABLE, RESOLVER_UNAVAILABLE, fast."""
        async with planner_for(f"127.0.0.1:{free_port()}") as stub:
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(example("empty-graph.json"), timeout=10)
            elapsed = time.monotonic() - started
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.UNAVAILABLE
        assert decoded.reason == "ERROR_REASON_RESOLVER_UNAVAILABLE"
        assert elapsed < FAIL_FAST_SECONDS

    async def test_retries_stay_within_a_short_deadline(self) -> None:
        """With 0.4 s to spend, retries stop early enough to answer UNAVAILABLE in time."""
        async with planner_for(f"127.0.0.1:{free_port()}") as stub:
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(example("empty-graph.json"), timeout=0.4)
            elapsed = time.monotonic() - started
        decoded = decode_rpc_error(caught.value)
        assert (decoded.code, decoded.reason) == (
            grpc.StatusCode.UNAVAILABLE,
            "ERROR_REASON_RESOLVER_UNAVAILABLE",
        )
        assert elapsed < 0.4

    async def test_planner_stays_serving_while_its_resolver_is_down(self) -> None:
        """The server as a whole (health name "") stays SERVING although the resolver is down:
        the process is alive; only the planner's own service name follows its resolver
        (tests/service/test_planner_health.py)."""
        spec = await _planner_spec(f"127.0.0.1:{free_port()}")
        async with (
            serving([spec], FAST_STOP) as running,
            grpc.aio.insecure_channel(running[0].address) as channel,
        ):
            stub = planner_service_pb2_grpc.PlannerServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.PlanEvidence(example("empty-graph.json"), timeout=5)
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
        assert health.status == health_pb2.HealthCheckResponse.SERVING

    async def test_recovers_when_the_resolver_comes_back(self) -> None:
        """Once a resolver listens at the target, the same planner channel plans again."""
        port = free_port()
        async with planner_for(f"127.0.0.1:{port}") as stub:
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.PlanEvidence(example("empty-graph.json"), timeout=5)
            spec = resolver_spec()
            spec.port = port
            async with serving([spec], FAST_STOP):
                reply = await stub.PlanEvidence(example("empty-graph.json"), timeout=5)
        assert len(reply.plan.gaps) == 1


class TestDeadlines:
    async def test_short_client_deadline_and_slow_resolver_is_deadline_exceeded(self) -> None:
        """A 0.5 s caller deadline against a 3 s resolver ends in DEADLINE_EXCEEDED, promptly."""
        slow = WatchingResolver(resolver_service.make_servicer(), delay_seconds=3.0)
        async with both(slow) as (stub, _):
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(example("safety-conflict-read-only.json"), timeout=0.5)
            elapsed = time.monotonic() - started
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert elapsed < 1.5
        # The resolver was given less time than the caller had, not "no deadline".
        assert slow.time_remaining[0] is not None
        assert slow.time_remaining[0] < 0.5

    async def test_planner_reports_its_own_reason_when_the_resolver_runs_out(self) -> None:
        """When the planner's downstream deadline fires first, it says so in the reason."""
        slow = WatchingResolver(resolver_service.make_servicer(), delay_seconds=3.0)
        async with both(slow) as (stub, _):
            call = stub.PlanEvidence(example("empty-graph.json"), timeout=1.0)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.DEADLINE_EXCEEDED
        # Either the planner's answer (with its reason) or the client's own deadline wins
        # the race; when the planner's arrives it names the resolver.
        assert decoded.reason in ("", "ERROR_REASON_RESOLVER_DEADLINE_EXCEEDED")


class TestResolverErrors:
    async def test_unexpected_resolver_failure_is_resolver_failed(self) -> None:
        """A resolver INTERNAL becomes INTERNAL with RESOLVER_FAILED, not a bare UNKNOWN."""
        failing = FailingResolver(resolver_service.make_servicer())
        async with both(failing) as (stub, _):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(example("empty-graph.json"), timeout=5)
        decoded = decode_rpc_error(caught.value)
        assert (decoded.code, decoded.reason) == (
            grpc.StatusCode.INTERNAL,
            "ERROR_REASON_RESOLVER_FAILED",
        )

    async def test_table_without_a_probe_source_is_a_policy_mismatch(self) -> None:
        """A table lacking 'human_review' cannot weigh that probe: FAILED_PRECONDITION."""
        table = {k: v for k, v in DEFAULT_RELIABILITY.items() if k != "human_review"}
        servicer = resolver_service.make_servicer(Policy(reliability=table, origin="test"))
        async with both(servicer) as (stub, _):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(example("safety-conflict-read-only.json"), timeout=5)
        decoded = decode_rpc_error(caught.value)
        assert (decoded.code, decoded.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "ERROR_REASON_RESOLVER_POLICY_MISMATCH",
        )


async def _planner_spec(target: str) -> Any:
    from assay.services.planner.service import build_spec

    return await build_spec(ServeOptions(port=0, resolver_target=target))
