"""Start-up and graceful shutdown of one or more Assay services.

A ``ServiceSpec`` is everything the runtime needs to host a service: its descriptor, its
servicer, an optional ``close`` hook and an optional ``dependency`` probed for its health.
``start`` binds one ``grpc.aio`` server per spec, with health, reflection, admission
control, metrics and tracing when configured; a start that fails closes what it opened.

``stop`` drains within the grace period: health turns NOT_SERVING (open ``Watch`` streams
are told and ended); new calls are refused with UNAVAILABLE / SHUTTING_DOWN and a retry
delay, still taken off grpc's queue so none is dropped there with a bare CANCELLED;
in-flight calls get the grace period, and the drain lasts until no call has arrived for
``QUIET_SECONDS``; calls still running then get SHUTTING_DOWN and are cancelled, those still
queued refused for at most ``FLUSH_SECONDS``; then the servers stop and the close hooks run.
``run_until_signalled`` serves until SIGTERM/SIGINT, then stops that way.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from assay.runtime import tracing
from assay.runtime.admission import Admission
from assay.runtime.config import ServerConfig
from assay.runtime.handlers import ServiceHandler
from assay.runtime.health import NOT_SERVING, SERVING, Health, probe_once, watch_dependency
from assay.runtime.logging import get_logger
from assay.runtime.loop import running_loop_name
from assay.runtime.reflection import enable_reflection

if TYPE_CHECKING:  # prometheus-client is imported only when metrics are on (``start``)
    from assay.runtime.metrics import Metrics

_log = get_logger("assay.server")

HEALTH_SERVICE = "grpc.health.v1.Health"
# How long no call must arrive before a draining server stops (see the module docstring).
QUIET_SECONDS = 0.1
# At most this long past the grace, calls still queued are refused before the server stops.
FLUSH_SECONDS = 0.3
_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# grpc-core queues the calls its server has not taken yet, and past 1,000 of them it drops
# new ones at random with a bare CANCELLED that Python never sees or logs (2-9% of a
# 2,000-call burst). The server takes calls off that queue as fast as they come (admission
# refuses the excess at once, with a retry delay), and a queued call holds no message yet,
# so the queue is made long enough that it never drops.
_PENDING_CALLS = 100_000
_SERVER_OPTIONS: list[tuple[str, int]] = [
    # grpc enables SO_REUSEPORT by default, which lets a second `assay up` bind the same ports
    # silently and share the traffic; a port that is taken must be an error instead.
    ("grpc.so_reuseport", 0),
    ("grpc.server.max_pending_requests", _PENDING_CALLS),
    ("grpc.server.max_pending_requests_hard_limit", _PENDING_CALLS),
]


@dataclass(frozen=True)
class Dependency:
    """Something a service needs to answer: ``probe()`` says whether it is reachable now.

    While it is not, the service's own name reports NOT_SERVING (see ``health``)."""

    name: str
    probe: Callable[[], Awaitable[bool]]


@dataclass
class ServiceSpec:
    """One service to host: what it is, who implements it, how to release its resources,
    what it depends on, and what it adds to the metrics (when they are exported)."""

    name: str
    descriptor: ServiceDescriptor
    servicer: object
    port: int
    close: Callable[[], Awaitable[None]] | None = None
    dependency: Dependency | None = None
    instrument: Callable[[Metrics], None] | None = None
    # More services served on the same port by the same process, each (descriptor,
    # servicer): adjudication serves ApprovalService beside its own. They share its
    # admission bound, health and lifetime.
    also: tuple[tuple[ServiceDescriptor, object], ...] = ()

    @property
    def hosted(self) -> tuple[tuple[ServiceDescriptor, object], ...]:
        """Every (descriptor, servicer) this spec serves, its own first."""
        return ((self.descriptor, self.servicer), *self.also)


@dataclass
class RunningService:
    """A bound server hosting one service; ``port`` is the real port (useful with port 0)."""

    spec: ServiceSpec
    server: grpc.aio.Server
    health: Health
    port: int
    address: str = field(default="")
    admission: Admission = field(default_factory=Admission)
    monitor: asyncio.Task[None] | None = None
    stopped: bool = False
    metrics: Metrics | None = None  # shared by the services of one ``start``


def refuse_taken_port(host: str, port: int, service: str) -> None:
    """``OSError`` naming the port when something listens on ``host:port`` already.

    grpc would find it too, but print a line of its own first, and by then a service may have
    opened its database: ``assay serve`` checks every port before it builds anything. A port
    taken in between is still reported, by ``start_service``, after grpc's own line."""
    if port == 0:
        return
    try:
        addresses = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror:
        return  # grpc reports an address it cannot resolve
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as grpc binds
            try:
                probe.bind(address)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    raise OSError(
                        f"could not bind {host}:{port} for {service}: the port is in use"
                    ) from None


async def start_service(
    spec: ServiceSpec, config: ServerConfig, metrics: Metrics | None = None
) -> RunningService:
    """Bind and start one server for ``spec``; health reports SERVING once it listens (for the
    service's own name: once its dependency, if any, answers too). ``metrics``: where its
    calls are counted (None: nowhere)."""
    refuse_taken_port(config.host, spec.port, spec.name)
    server = grpc.aio.server(
        interceptors=tracing.server_interceptors(),
        options=[*config.channel_options(), *_SERVER_OPTIONS],
    )
    admission = Admission(config.max_concurrent_rpcs, spec.name)
    for descriptor, servicer in spec.hosted:
        handler = ServiceHandler(descriptor, servicer, config.gate, admission, metrics)
        server.add_generic_rpc_handlers((handler,))
        server.add_registered_method_handlers(handler.service_name, handler.method_handlers())
    if metrics is not None and spec.instrument is not None:
        spec.instrument(metrics)
    health = Health()
    health.add_to(server)
    enable_reflection((*(d.full_name for d, _ in spec.hosted), HEALTH_SERVICE), server)
    address = f"{config.host}:{spec.port}"
    try:
        if config.tls is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, config.tls.credentials())
    except RuntimeError as error:  # grpc raises RuntimeError("Failed to bind ...")
        raise OSError(f"could not bind {address} for {spec.name}: {error}") from None
    if port == 0:
        raise OSError(f"could not bind {address} for {spec.name}")
    await server.start()
    running = RunningService(
        spec, server, health, port, f"{config.host}:{port}", admission, metrics=metrics
    )
    available = True
    if spec.dependency is not None:
        dependency = spec.dependency
        available = await probe_once(dependency.probe)
        running.monitor = asyncio.create_task(
            watch_dependency(
                health, spec.descriptor.full_name, dependency.name, dependency.probe, available
            ),
            name=f"health of {spec.name}",
        )
    health.set(spec.descriptor.full_name, SERVING if available else NOT_SERVING)
    for descriptor, _ in spec.also:
        health.set(descriptor.full_name, SERVING)
    _log.info(
        "serving",
        service=spec.name,
        address=running.address,
        loop=running_loop_name(),
        transport="mtls"
        if config.tls and config.tls.client_ca
        else "tls"
        if config.tls
        else "plaintext",
        authentication="on" if config.gate.enabled else "off",
        max_concurrent_rpcs=admission.limit,
        tracing="on" if tracing.enabled() else "off",
        **({} if metrics is None else {"metrics": f"{config.host}:{metrics.port}"}),
        **({} if spec.dependency is None else {"dependency_available": available}),
    )
    return running


async def start(specs: Sequence[ServiceSpec], config: ServerConfig) -> list[RunningService]:
    """Start every spec (and the metrics endpoint, when ``config.metrics_port`` is set); on a
    failure, stop those already started, close the rest, re-raise."""
    running: list[RunningService] = []
    metrics: Metrics | None = None
    try:
        if config.metrics_port is not None:
            from assay.runtime.metrics import Metrics

            metrics = Metrics()
            await metrics.serve(config.host, config.metrics_port)
        for spec in specs:
            running.append(await start_service(spec, config, metrics))
    except BaseException:
        await stop(running, grace=0)
        await close_specs(specs[len(running) :])
        if metrics is not None:
            await metrics.close()
        raise
    return running


async def close_specs(specs: Sequence[ServiceSpec]) -> None:
    """Run the close hooks of ``specs`` (built, never started or already stopped); one that
    fails is logged and the others still run."""
    for spec in specs:
        if spec.close is None:
            continue
        try:
            await spec.close()
        except Exception:
            _log.exception("close_failed", service=spec.name)


async def stop(running: Sequence[RunningService], grace: float) -> None:
    """Drain within ``grace`` seconds as the module docstring says, then close (a service
    stopped already is left alone)."""
    running = [service for service in running if not service.stopped]
    for service in running:
        service.stopped = True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    for service in running:
        if service.monitor is not None:
            service.monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await service.monitor
        service.health.drain()
        service.admission.drain()
        _log.info(
            "draining",
            service=service.spec.name,
            in_flight=service.admission.in_flight,
            grace_seconds=grace,
        )
    finished = await asyncio.gather(
        *(_finished(service.admission, deadline) for service in running)
    )
    for service, idle in zip(running, finished, strict=True):
        if not idle:
            ended = await service.admission.abandon()
            _log.warning("grace_period_over", service=service.spec.name, calls_ended=ended)
    # Calls that arrived while abandoned work held the process (a heavy resolve on worker
    # threads) still wait in grpc's queue, and stopping would cancel them with a bare
    # CANCELLED: give the loop, now free, a bounded moment to refuse them UNAVAILABLE.
    await asyncio.gather(*(_flush(service.admission) for service in running))
    remaining = max(0.0, deadline - loop.time())
    await asyncio.gather(*(service.server.stop(remaining) for service in running))
    for service in running:
        await close_specs([service.spec])
        _log.info(
            "stopped",
            service=service.spec.name,
            refused_overloaded=service.admission.refused_overloaded,
            refused_shutting_down=service.admission.refused_shutting_down,
        )
    # Last, so the drain shows in a scrape; one endpoint may serve several services.
    for metrics in {id(s.metrics): s.metrics for s in running if s.metrics}.values():
        await metrics.close()


async def _flush(admission: Admission) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(FLUSH_SECONDS):
            await admission.quiet(QUIET_SECONDS)


async def _finished(admission: Admission, deadline: float) -> bool:
    """Whether the admitted calls all end before ``deadline`` (the loop's clock); then wait
    for the calls still arriving to stop, as long as the deadline allows."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout_at(deadline):
            await admission.idle()
            await admission.quiet(QUIET_SECONDS)
    return admission.in_flight == 0


async def run_until_signalled(
    specs: Sequence[ServiceSpec],
    config: ServerConfig,
    on_started: Callable[[list[RunningService]], None] | None = None,
    on_stopping: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve ``specs`` until SIGTERM or SIGINT, then shut down gracefully.

    ``on_stopping`` runs on the signal, beside the services' own drain (the console hosted
    in the same process stops with them, within the same grace). A start that fails has
    closed what it opened and re-raises (``OSError`` for a port)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in _SIGNALS:
        loop.add_signal_handler(sig, stopping.set)
    try:
        running = await start(specs, config)
        if on_started is not None:
            on_started(running)
        try:
            await stopping.wait()
            _log.info("shutdown_requested", grace_seconds=config.grace_seconds)
        finally:
            await asyncio.gather(
                stop(running, config.grace_seconds),
                *([] if on_stopping is None else [on_stopping()]),
            )
    finally:
        for sig in _SIGNALS:
            loop.remove_signal_handler(sig)


@contextlib.asynccontextmanager
async def serving(
    specs: Sequence[ServiceSpec], config: ServerConfig | None = None
) -> AsyncIterator[list[RunningService]]:
    """Host ``specs`` for the body of an ``async with`` (tests, the demo, benchmarks)."""
    running = await start(specs, config or ServerConfig())
    try:
        yield running
    finally:
        await stop(running, grace=(config or ServerConfig()).grace_seconds)
