"""Metrics, traces and request ids through real servers on loopback.

``/metrics`` is scraped over HTTP after known calls; traces go to an in-memory exporter
installed as the process's tracing (``assay.runtime.tracing.install``), which servers and
channels created afterwards use.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families

from assay.runtime import tracing
from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.services.adjudication.service import build_spec as adjudication_spec
from assay.services.registry import ServeOptions
from assay.services.resolver import service as resolver_service
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rgrpc
from tests.service.adjudication_support import register
from tests.service.planner_harness import WatchingResolver, both, example, resolver_spec
from tests.support.eventually import eventually_async

RESOLVER = "assay.v1.ResolverService"
PLANNER = "assay.v1.PlannerService"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(port: int) -> Samples:
    """Every sample ``/metrics`` shows, by name and labels."""

    def fetch() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            body: bytes = reply.read()
            return body.decode()

    text = await asyncio.to_thread(fetch)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def listening_ports() -> set[int]:
    """The TCP ports this process listens on (its socket inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


async def in_flight_becomes(port: int, expected: int, seconds: float = 10.0) -> None:
    """Scrape until the resolver's in-flight gauge shows ``expected``, failing after
    ``seconds`` with the last value shown."""

    async def shows() -> bool:
        shown = sample(await scrape(port), "assay_rpc_in_flight", grpc_service=RESOLVER)
        assert shown == expected, f"in flight: {shown}"
        return True

    await eventually_async(
        shows,
        message=f"the in-flight gauge to show {expected}",
        timeout=seconds,
        interval=0.02,
        ignoring=(AssertionError,),
    )


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on, into memory, for the servers and channels the test creates."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.uninstall()


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


class TestRpcMetrics:
    async def test_counts_calls_by_method_and_code_with_latency_counts(self) -> None:
        """3 OK calls and 1 INVALID_ARGUMENT show as exactly those counters and histogram
        counts, with nothing in flight afterwards."""
        spec = resolver_spec()
        async with serving([spec], ServerConfig(metrics_port=0)) as running:
            metrics = running[0].metrics
            assert metrics is not None
            assert metrics.port > 0
            async with grpc.aio.insecure_channel(running[0].address) as channel:
                stub = rgrpc.ResolverServiceStub(channel)
                for _ in range(3):
                    await stub.GetResolverPolicy(rpb.GetResolverPolicyRequest(), timeout=10)
                with pytest.raises(grpc.aio.AioRpcError) as bad:
                    await stub.ResolveSemantic(rpb.ResolveSemanticRequest(), timeout=10)
                assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            got = await scrape(metrics.port)
        handled = "grpc_server_handled_total"
        policy = {"grpc_service": RESOLVER, "grpc_method": "GetResolverPolicy"}
        semantic = {"grpc_service": RESOLVER, "grpc_method": "ResolveSemantic"}
        assert sample(got, handled, **policy, grpc_code="OK") == 3
        assert sample(got, handled, **semantic, grpc_code="INVALID_ARGUMENT") == 1
        assert sample(got, handled, **semantic, grpc_code="OK") == 0  # bound, never used
        assert sample(got, "grpc_server_handling_seconds_count", **policy) == 3
        assert sample(got, "grpc_server_handling_seconds_count", **semantic) == 1
        assert sample(got, "grpc_server_handling_seconds_bucket", **policy, le="+Inf") == 3
        assert (sample(got, "grpc_server_handling_seconds_sum", **policy) or 0) > 0
        assert sample(got, "assay_rpc_in_flight", grpc_service=RESOLVER) == 0
        methods = {dict(labels).get("grpc_method") for name, labels in got if name == handled}
        assert methods == {"GetResolverPolicy", "ResolveHypotheses", "ResolveSemantic"} | {
            "ResolveEvidence",
            "ResolveColumns",
            "Reconcile",
        }  # every method bound at start, health and reflection not among them

    async def test_a_call_in_progress_is_in_flight(self) -> None:
        """The in-flight gauge shows a slow call while it runs, and not once it ended."""
        slow = WatchingResolver(resolver_service.make_servicer(), delay_seconds=30)
        async with serving([resolver_spec(slow)], ServerConfig(metrics_port=0)) as running:
            port = running[0].metrics.port  # type: ignore[union-attr]
            async with grpc.aio.insecure_channel(running[0].address) as channel:
                call = rgrpc.ResolverServiceStub(channel).GetResolverPolicy(
                    rpb.GetResolverPolicyRequest(), timeout=60
                )
                await in_flight_becomes(port, 1)
                call.cancel()
                await in_flight_becomes(port, 0)

    async def test_off_by_default_no_port_is_bound(self) -> None:
        """Without a metrics port the server listens on its gRPC port only; with one, on
        that port too."""
        before = listening_ports()
        async with serving([resolver_spec()]) as running:
            assert running[0].metrics is None
            assert listening_ports() - before == {running[0].port}
        async with serving([resolver_spec()], ServerConfig(metrics_port=0)) as running:
            metrics = running[0].metrics
            assert metrics is not None
            assert listening_ports() - before == {running[0].port, metrics.port}
        assert ServerConfig().metrics_port is None

    async def test_a_taken_metrics_port_fails_the_start_naming_it(self) -> None:
        """The start fails with the metrics address in the error, and nothing stays bound."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            before = listening_ports()
            with pytest.raises(OSError, match=f"127.0.0.1:{port} for metrics"):
                async with serving([resolver_spec()], ServerConfig(metrics_port=port)):
                    pass
            assert listening_ports() == before


class TestWriterMetrics:
    async def test_batches_commits_and_queue_depth_move_with_writes(self, tmp_path: Path) -> None:
        """Three sequential writes are three batches of one job, each with a commit time."""
        spec = await adjudication_spec(ServeOptions(port=0, db_path=str(tmp_path / "a.db")))
        async with serving([spec], ServerConfig(metrics_port=0)) as running:
            port = running[0].metrics.port  # type: ignore[union-attr]
            before = await scrape(port)
            async with grpc.aio.insecure_channel(running[0].address) as channel:
                stub = adj_grpc.AdjudicationServiceStub(channel)
                for name in ("r1", "r2", "r3"):
                    await register(stub, name)
            after = await scrape(port)

        def moved(name: str) -> float:
            return (sample(after, name) or 0) - (sample(before, name) or 0)

        assert moved("assay_adjudication_writer_batch_size_count") == 3
        assert moved("assay_adjudication_writer_batch_size_sum") == 3
        assert moved("assay_adjudication_writer_commit_seconds_count") == 3
        assert moved("assay_adjudication_writer_commit_seconds_sum") > 0
        assert sample(after, "assay_adjudication_writer_queue_depth") == 0
        registered = {
            "grpc_service": "assay.v1.AdjudicationService",
            "grpc_method": "RegisterReviewer",
            "grpc_code": "OK",
        }
        assert sample(after, "grpc_server_handled_total", **registered) == 3


def _by_name(finished: tuple[ReadableSpan, ...], name: str, kind: SpanKind) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name and s.kind == kind]


class TestTracing:
    async def test_a_plan_is_one_trace_with_resolver_calls_as_children(
        self, spans: InMemorySpanExporter, log_stream: io.StringIO
    ) -> None:
        """The plan's server span is the root; each resolver call is a client span under it
        and the resolver's server span under that, all in one trace; every RPC line written
        for the plan carries that trace's id; health checks are not traced."""
        watcher = WatchingResolver(resolver_service.make_servicer())
        async with both(watcher) as (stub, _):
            await stub.PlanEvidence(example("corroborated.json"), timeout=10)
        finished = spans.get_finished_spans()
        [plan] = _by_name(finished, f"/{PLANNER}/PlanEvidence", SpanKind.SERVER)
        assert plan.parent is None or not plan.parent.is_remote
        trace_id = plan.context.trace_id
        resolved = [s for s in finished if s.kind == SpanKind.SERVER and RESOLVER in s.name]
        assert [s.name.rsplit("/", 1)[1] for s in resolved] == watcher.calls
        assert len(resolved) >= 1
        by_id = {s.context.span_id: s for s in finished}
        for server in resolved:
            assert server.context.trace_id == trace_id
            assert server.parent is not None
            client = by_id[server.parent.span_id]
            assert client.kind == SpanKind.CLIENT
            assert client.parent is not None
            assert client.parent.span_id == plan.context.span_id
        assert not [s for s in finished if "grpc.health" in s.name]
        rpc_lines = [line for line in _lines(log_stream) if line.get("event") == "rpc"]
        assert {line["method"] for line in rpc_lines} >= {f"/{PLANNER}/PlanEvidence"}
        assert {line.get("trace_id") for line in rpc_lines} == {format(trace_id, "032x")}
        [plan_line] = [line for line in rpc_lines if line["method"] == f"/{PLANNER}/PlanEvidence"]
        assert plan_line["span_id"] == format(plan.context.span_id, "016x")


class TestRequestIdPropagation:
    @pytest.mark.parametrize("sent", [None, "caller-id-1"])
    async def test_the_planners_request_id_reaches_the_resolver(
        self, sent: str | None, log_stream: io.StringIO
    ) -> None:
        """Whether or not the caller sent one, the resolver's calls carry the id in the
        planner's log line; with tracing off, no line has a trace id."""
        watcher = WatchingResolver(resolver_service.make_servicer())
        metadata = () if sent is None else (("x-request-id", sent),)
        async with both(watcher) as (stub, _):
            await stub.PlanEvidence(example("corroborated.json"), timeout=10, metadata=metadata)
        lines = _lines(log_stream)
        [plan_line] = [line for line in lines if line.get("method") == f"/{PLANNER}/PlanEvidence"]
        request_id = plan_line["request_id"]
        if sent is not None:
            assert request_id == sent
        assert watcher.calls
        assert watcher.request_ids == [request_id] * len(watcher.calls)
        resolver_lines = [line for line in lines if RESOLVER in str(line.get("method", ""))]
        assert [line["request_id"] for line in resolver_lines] == watcher.request_ids
        assert not [line for line in lines if "trace_id" in line]


class TestTracingSwitch:
    @pytest.mark.parametrize(
        ("env", "expected"),
        [
            ({}, None),
            ({"OTEL_TRACES_EXPORTER": "otlp"}, "otlp"),
            ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, "otlp"),
            ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}, "otlp"),
            (
                {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"},
                None,
            ),
            ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, None),
        ],
    )
    def test_the_standard_environment_turns_tracing_on(
        self, env: dict[str, str], expected: str | None, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Off unless an exporter or an OTLP endpoint is named, and the SDK not disabled."""
        for name in list(os.environ):
            if name.startswith("OTEL_"):
                monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        assert tracing.exporter_from_env() == expected

    def test_an_exporter_this_build_lacks_is_one_clear_error(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An unknown exporter stops the start with a line naming it."""
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
        with pytest.raises(SystemExit, match="zipkin"):
            tracing.exporter_from_env()

    def test_configured_from_env_installs_and_uninstalls(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An endpoint in the environment installs an OTLP provider; uninstall removes it."""
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
        monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
        monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
        try:
            assert tracing.configure_from_env("assay-test")
            assert tracing.enabled()
            assert tracing.server_interceptors()
        finally:
            tracing.uninstall()
        assert not tracing.enabled()
        assert not tracing.server_interceptors()
