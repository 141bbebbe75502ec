"""The shared runtime through a real grpc.aio server: error mapping, malformed bytes,
request ids, one log line per RPC, health, reflection and graceful drain.

A small servicer stands in for a service so each behaviour can be provoked on
purpose; the server, handlers, channel and wire are all real.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from assay import errors
from assay.runtime.config import ServerConfig
from assay.runtime.server import RunningService, ServiceSpec, serving, start, stop
from assay.runtime.status import decode_rpc_error
from assay.v1 import resolver_service_pb2 as rs
from assay.v1 import resolver_service_pb2_grpc as rs_grpc
from tests.support.eventually import eventually_async

SERVICE = rs.DESCRIPTOR.services_by_name["ResolverService"]


class ScriptedServicer:
    """Each method provokes one runtime behaviour."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def ResolveSemantic(self, request: Any, context: Any) -> Any:
        raise RuntimeError("secret internal detail")

    async def ResolveEvidence(self, request: Any, context: Any) -> Any:
        raise errors.InvalidArgument(
            errors.Reason.INVALID_CLAIM,
            "evidence.claims[3].confidence: must be in [0, 1]",
            [errors.FieldViolation("evidence.claims[3].confidence", "must be in [0, 1]")],
            {"claim_id": "c3"},
        )

    async def ResolveHypotheses(self, request: Any, context: Any) -> Any:
        await self.release.wait()
        return rs.ResolveHypothesesResponse()

    async def Reconcile(self, request: Any, context: Any) -> Any:
        raise errors.Unavailable(errors.Reason.SHUTTING_DOWN, "going away")

    async def GetResolverPolicy(self, request: Any, context: Any) -> Any:
        return rs.GetResolverPolicyResponse(conflict_margin=0.2, reliability_table_origin="test")

    async def ResolveColumns(self, request: Any, context: Any) -> Any:
        return rs.ResolveColumnsResponse()  # bound (every method must be), never called here


@pytest.fixture
async def server(log_stream: io.StringIO) -> AsyncIterator[tuple[RunningService, ScriptedServicer]]:
    servicer = ScriptedServicer()
    spec = ServiceSpec("scripted", SERVICE, servicer, port=0)
    async with serving([spec], ServerConfig(grace_seconds=5)) as running:
        yield running[0], servicer


def rpc_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [
        line
        for line in (json.loads(raw) for raw in stream.getvalue().splitlines())
        if line.get("event") == "rpc"
    ]


class TestErrorMapping:
    async def test_domain_error_becomes_rich_status(
        self, server: tuple[RunningService, ScriptedServicer]
    ) -> None:
        """An InvalidArgument becomes INVALID_ARGUMENT with ErrorInfo and BadRequest details."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = rs_grpc.ResolverServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ResolveEvidence(rs.ResolveEvidenceRequest(), timeout=5)
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.INVALID_ARGUMENT
        assert decoded.reason == "ERROR_REASON_INVALID_CLAIM"
        assert decoded.domain == "assay.v1"
        assert decoded.metadata["claim_id"] == "c3"
        assert decoded.metadata["request_id"]
        assert [v.field for v in decoded.violations] == ["evidence.claims[3].confidence"]

    async def test_unavailable_family_maps_by_class(
        self, server: tuple[RunningService, ScriptedServicer]
    ) -> None:
        """An Unavailable error maps to UNAVAILABLE with its reason."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = rs_grpc.ResolverServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.Reconcile(rs.ReconcileRequest(), timeout=5)
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.UNAVAILABLE
        assert decoded.reason == "ERROR_REASON_SHUTTING_DOWN"

    async def test_unexpected_exception_is_generic_internal_with_traceback_in_log(
        self, server: tuple[RunningService, ScriptedServicer], log_stream: io.StringIO
    ) -> None:
        """An unmapped exception gives INTERNAL with no internals; the log has the traceback."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = rs_grpc.ResolverServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ResolveSemantic(
                    rs.ResolveSemanticRequest(),
                    timeout=5,
                    metadata=(("x-request-id", "req-internal-1"),),
                )
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.INTERNAL
        assert decoded.reason == "ERROR_REASON_INTERNAL"
        assert "secret" not in decoded.message
        assert "req-internal-1" in decoded.message
        logged = log_stream.getvalue()
        assert "secret internal detail" in logged
        assert "Traceback" in logged

    async def test_malformed_bytes_are_invalid_argument(
        self, server: tuple[RunningService, ScriptedServicer]
    ) -> None:
        """Bytes that are not a protobuf message get INVALID_ARGUMENT, not UNKNOWN."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            raw = channel.unary_unary("/assay.v1.ResolverService/GetResolverPolicy")
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await raw(b"\xff\xff\xff\xff\x0f", timeout=5)
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.INVALID_ARGUMENT
        assert decoded.reason == "ERROR_REASON_MALFORMED_REQUEST"

    async def test_unknown_method_is_unimplemented(
        self, server: tuple[RunningService, ScriptedServicer]
    ) -> None:
        """A method the service does not have is UNIMPLEMENTED."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            raw = channel.unary_unary("/assay.v1.ResolverService/NoSuchMethod")
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await raw(b"", timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


class TestRequestIdAndLogging:
    async def test_request_id_echoed_and_logged_once(
        self, server: tuple[RunningService, ScriptedServicer], log_stream: io.StringIO
    ) -> None:
        """The caller's x-request-id comes back in trailers and appears in exactly one log line."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = rs_grpc.ResolverServiceStub(channel)
            call = stub.GetResolverPolicy(
                rs.GetResolverPolicyRequest(), timeout=5, metadata=(("x-request-id", "abc-123"),)
            )
            reply = await call
            trailers = dict(await call.trailing_metadata())
        assert reply.reliability_table_origin == "test"
        assert trailers["x-request-id"] == "abc-123"
        lines = [line for line in rpc_lines(log_stream) if line["request_id"] == "abc-123"]
        assert len(lines) == 1
        assert lines[0]["method"] == "/assay.v1.ResolverService/GetResolverPolicy"
        assert lines[0]["code"] == "OK"
        assert lines[0]["duration_ms"] >= 0

    async def test_request_id_generated_when_absent(
        self, server: tuple[RunningService, ScriptedServicer], log_stream: io.StringIO
    ) -> None:
        """Without x-request-id the server makes one and returns it."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = rs_grpc.ResolverServiceStub(channel)
            call = stub.GetResolverPolicy(rs.GetResolverPolicyRequest(), timeout=5)
            await call
            trailers = dict(await call.trailing_metadata())
        assert len(trailers["x-request-id"]) == 32
        assert rpc_lines(log_stream)[-1]["request_id"] == trailers["x-request-id"]

    async def test_failed_call_log_line_has_code_and_reason(
        self, server: tuple[RunningService, ScriptedServicer], log_stream: io.StringIO
    ) -> None:
        """A failed RPC's single log line carries its status code and reason."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = rs_grpc.ResolverServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.ResolveEvidence(rs.ResolveEvidenceRequest(), timeout=5)
        line = rpc_lines(log_stream)[-1]
        assert line["code"] == "INVALID_ARGUMENT"
        assert line["reason"] == "ERROR_REASON_INVALID_CLAIM"
        assert line["level"] == "warning"


class TestHealthReflectionAndDrain:
    async def test_health_and_reflection(
        self, server: tuple[RunningService, ScriptedServicer]
    ) -> None:
        """Health reports SERVING overall and per service; reflection lists the service."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            overall = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            named = await health.Check(
                health_pb2.HealthCheckRequest(service="assay.v1.ResolverService"), timeout=5
            )
            reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
            replies = [
                reply
                async for reply in reflect.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
                )
            ]
        assert overall.status == health_pb2.HealthCheckResponse.SERVING
        assert named.status == health_pb2.HealthCheckResponse.SERVING
        names = {s.name for s in replies[0].list_services_response.service}
        assert "assay.v1.ResolverService" in names
        assert "grpc.health.v1.Health" in names

    async def test_in_flight_call_finishes_during_graceful_stop(
        self, log_stream: io.StringIO
    ) -> None:
        """stop() marks health NOT_SERVING yet lets an in-flight call complete within the grace."""
        servicer = ScriptedServicer()
        spec = ServiceSpec("scripted", SERVICE, servicer, port=0)
        running = await start([spec], ServerConfig(grace_seconds=5))
        try:
            async with grpc.aio.insecure_channel(running[0].address) as channel:
                stub = rs_grpc.ResolverServiceStub(channel)
                in_flight = asyncio.ensure_future(
                    stub.ResolveHypotheses(rs.ResolveHypothesesRequest(), timeout=10)
                )
                await eventually_async(
                    lambda: running[0].admission.in_flight == 1, message="the call to be admitted"
                )
                stopping = asyncio.ensure_future(stop(running, grace=5))

                async def not_serving() -> bool:
                    health = await running[0].health.Check(health_pb2.HealthCheckRequest(), None)
                    return bool(health.status == health_pb2.HealthCheckResponse.NOT_SERVING)

                await eventually_async(not_serving, message="health to say NOT_SERVING")
                assert not in_flight.done(), "the call ended before it was released"
                servicer.release.set()
                reply = await in_flight
                await stopping
        finally:
            await stop(running, grace=0)
        assert isinstance(reply, rs.ResolveHypothesesResponse)


class TestPortConflicts:
    async def test_a_taken_port_is_an_error_not_a_shared_socket(self) -> None:
        """A second server on a port already served fails to start instead of sharing it."""
        first = ServiceSpec("scripted", SERVICE, ScriptedServicer(), port=0)
        async with serving([first], ServerConfig(grace_seconds=1)) as running:
            taken = running[0].port
            second = ServiceSpec("scripted", SERVICE, ScriptedServicer(), port=taken)
            with pytest.raises(OSError, match="could not bind"):
                await start([second], ServerConfig(grace_seconds=1))
