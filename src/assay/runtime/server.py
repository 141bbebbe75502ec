"""Start-up and graceful shutdown of one or more Assay services.

A ``ServiceSpec`` is everything the runtime needs to host a service: its
descriptor, its servicer, and an optional ``close`` hook (a database to close).
``start`` binds one ``grpc.aio`` server per spec, each with health and
reflection; ``run_until_signalled`` serves until SIGTERM/SIGINT, then marks
health NOT_SERVING, lets in-flight calls finish within the grace period,
runs the close hooks and returns, so the process exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from assay.runtime.config import ServerConfig
from assay.runtime.handlers import ServiceHandler
from assay.runtime.logging import get_logger
from assay.runtime.loop import running_loop_name

_log = get_logger("assay.server")


@dataclass
class ServiceSpec:
    """One service to host: what it is, who implements it, and how to release its resources."""

    name: str
    descriptor: ServiceDescriptor
    servicer: object
    port: int
    close: Callable[[], Awaitable[None]] | None = None


@dataclass
class RunningService:
    """A bound server hosting one service; ``port`` is the real port (useful with port 0)."""

    spec: ServiceSpec
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    port: int
    address: str = field(default="")


async def start_service(spec: ServiceSpec, config: ServerConfig) -> RunningService:
    """Bind and start one server for ``spec``; health reports SERVING once it listens."""
    # grpc enables SO_REUSEPORT by default, which lets a second `assay up` bind the same ports
    # silently and share the traffic; a port that is taken must be an error instead.
    server = grpc.aio.server(options=[*config.channel_options(), ("grpc.so_reuseport", 0)])
    handler = ServiceHandler(spec.descriptor, spec.servicer, config.gate)
    server.add_generic_rpc_handlers((handler,))
    server.add_registered_method_handlers(handler.service_name, handler.method_handlers())
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (spec.descriptor.full_name, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    address = f"{config.host}:{spec.port}"
    try:
        if config.tls is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, config.tls.credentials())
    except RuntimeError as error:  # grpc raises RuntimeError("Failed to bind ...")
        raise OSError(f"could not bind {address}: {error}") from None
    if port == 0:
        raise OSError(f"could not bind {address}")
    await server.start()
    serving = health_pb2.HealthCheckResponse.SERVING
    await health_servicer.set("", serving)
    await health_servicer.set(spec.descriptor.full_name, serving)
    _log.info(
        "serving",
        service=spec.name,
        address=f"{config.host}:{port}",
        loop=running_loop_name(),
        transport="mtls"
        if config.tls and config.tls.client_ca
        else "tls"
        if config.tls
        else "plaintext",
        authentication="on" if config.gate.enabled else "off",
    )
    return RunningService(spec, server, health_servicer, port, f"{config.host}:{port}")


async def start(specs: Sequence[ServiceSpec], config: ServerConfig) -> list[RunningService]:
    """Start every spec; on a failure, stop those already started and re-raise."""
    running: list[RunningService] = []
    try:
        for spec in specs:
            running.append(await start_service(spec, config))
    except BaseException:
        await stop(running, grace=0)
        raise
    return running


async def stop(running: Sequence[RunningService], grace: float) -> None:
    """Drain: NOT_SERVING first (balancers move away), then finish in-flight calls, then close."""
    for service in running:
        await service.health.enter_graceful_shutdown()
    await asyncio.gather(*(service.server.stop(grace) for service in running))
    for service in running:
        if service.spec.close is not None:
            await service.spec.close()
        _log.info("stopped", service=service.spec.name)


async def run_until_signalled(
    specs: Sequence[ServiceSpec],
    config: ServerConfig,
    on_started: Callable[[list[RunningService]], None] | None = None,
) -> None:
    """Serve ``specs`` until SIGTERM or SIGINT, then shut down gracefully."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    running = await start(specs, config)
    if on_started is not None:
        on_started(running)
    try:
        await stopping.wait()
        _log.info("shutdown_requested", grace_seconds=config.grace_seconds)
    finally:
        await stop(running, config.grace_seconds)
        for sig in (signal.SIGTERM, signal.SIGINT):
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
