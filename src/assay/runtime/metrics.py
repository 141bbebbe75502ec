"""Prometheus metrics: what every service counts, and the HTTP endpoint that serves them.

Off unless ``--metrics-port`` is given: then each ``start`` (one ``assay serve`` or ``assay
up`` process) builds one ``Metrics`` with its own ``CollectorRegistry`` and serves it on the
services' own ``--host``, from the event loop with a bounded number of connections
(``metrics_http``). Every series carries the service it is about (``grpc_service``), so
``assay up``'s three services share the process's one endpoint.

The RPC series follow go-grpc-prometheus's names, which existing dashboards read
(``grpc_server_handled_total``, ``grpc_server_handling_seconds``), plus
``assay_rpc_in_flight`` and adjudication's group-commit series
(``assay_adjudication_writer_*``); docs/observability.md lists them. Recording is on every
call's path, so each method's label children are bound once, at start (``RpcMeter``): a call
pays a dict lookup, one counter increment and one histogram observation, and nothing at all
when metrics are off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.process_collector import ProcessCollector

from assay.runtime.metrics_http import MetricsEndpoint

# From half a millisecond (a no-op resolver call) to half a minute (a large plan).
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


class BatchSource(Protocol):
    """What the metrics need of a group-committing writer (``storage.group_commit``)."""

    on_batch: Callable[[int, float], None]

    def queue_depth(self) -> int: ...


class RpcMeter:
    """One method's pre-bound series: ``record`` is the whole per-call cost."""

    __slots__ = ("_handled", "_labels", "_seconds", "_service_method")

    def __init__(self, handled: Counter, seconds: Histogram, service: str, method: str) -> None:
        self._labels = handled
        self._service_method = (service, method)
        self._seconds = seconds.labels(service, method)
        # OK bound up front: a method's first call, usually OK, then finds its child.
        self._handled: dict[grpc.StatusCode, Counter] = {}
        self._bind(grpc.StatusCode.OK)

    def record(self, code: grpc.StatusCode, seconds: float) -> None:
        child = self._handled.get(code)
        if child is None:  # a code this method has not ended with yet
            child = self._bind(code)
        child.inc()
        self._seconds.observe(seconds)

    def _bind(self, code: grpc.StatusCode) -> Counter:
        child = self._handled[code] = self._labels.labels(*self._service_method, code.name)
        return child


class Metrics:
    """One process's collectors and, once ``serve`` has run, the HTTP server exposing them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._handled = Counter(
            "grpc_server_handled",
            "RPCs ended on the server, by service, method and status code.",
            ("grpc_service", "grpc_method", "grpc_code"),
            registry=self.registry,
        )
        self._seconds = Histogram(
            "grpc_server_handling_seconds",
            "Time from an RPC reaching its handler to its status, in seconds.",
            ("grpc_service", "grpc_method"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._in_flight = Gauge(
            "assay_rpc_in_flight",
            "RPCs admitted and not yet ended, by service.",
            ("grpc_service",),
            registry=self.registry,
        )
        self._batch_size = Histogram(
            "assay_adjudication_writer_batch_size",
            "Jobs in one group-committed transaction of the adjudication writer.",
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )
        self._commit_seconds = Histogram(
            "assay_adjudication_writer_commit_seconds",
            "One writer batch's transaction, BEGIN IMMEDIATE to COMMIT returned, in seconds.",
            buckets=COMMIT_BUCKETS,
            registry=self.registry,
        )
        self._queue_depth = Gauge(
            "assay_adjudication_writer_queue_depth",
            "Jobs waiting for the adjudication writer's next batch.",
            registry=self.registry,
        )
        self._endpoint: MetricsEndpoint | None = None
        self.port = 0

    def meter(self, service: str, method: str) -> RpcMeter:
        """The series of ``service``'s ``method`` (the bare name, e.g. ``PlanEvidence``)."""
        return RpcMeter(self._handled, self._seconds, service, method)

    def watch_in_flight(self, service: str, in_flight: Callable[[], int]) -> None:
        """Report ``in_flight()`` as ``service``'s calls in flight, read at each scrape."""
        self._in_flight.labels(service).set_function(in_flight)

    def watch_writer(self, writer: BatchSource) -> None:
        """Record ``writer``'s batches and report its queue depth at each scrape."""
        size, seconds = self._batch_size, self._commit_seconds

        def on_batch(jobs: int, elapsed: float) -> None:
            size.observe(jobs)
            seconds.observe(elapsed)

        writer.on_batch = on_batch
        self._queue_depth.set_function(writer.queue_depth)

    @property
    def endpoint(self) -> MetricsEndpoint | None:
        """The HTTP endpoint, once ``serve`` has run."""
        return self._endpoint

    async def serve(self, host: str, port: int) -> None:
        """Expose ``/metrics`` on ``host:port`` (0: any free port; ``self.port`` says which)
        from the running loop. ``OSError`` naming the address when it cannot bind."""
        endpoint = MetricsEndpoint(self.registry)
        try:
            await endpoint.start(host, port)
        except OSError as error:
            await endpoint.close()
            raise OSError(f"could not bind {host}:{port} for metrics: {error.strerror}") from None
        self._endpoint = endpoint
        self.port = endpoint.port

    async def close(self) -> None:
        """Stop serving: the port and every open connection are closed."""
        endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            await endpoint.close()
