"""``grpc.health.v1.Health`` for one server, and the background probe of what a service needs.

grpc's own asyncio servicer keeps every ``Watch`` stream open until the server cancels it at
the end of the grace period, so one watching load balancer holds a shutdown for the whole
grace. Here ``drain`` turns every status ``NOT_SERVING``, each open ``Watch`` stream is sent
that and then ended, and ``Check`` answers ``NOT_SERVING`` while in-flight calls finish.

What each status means (per name; ``""`` is the server as a whole):

- ``SERVING``: the server accepts calls, and for a service's own name (``assay.v1.…Service``)
  what the service depends on answers too (the planner's resolver);
- ``NOT_SERVING``: the server is shutting down (every name), or, for a service's own name
  only, a dependency is unreachable (``watch_dependency``): its calls would fail with
  ``UNAVAILABLE`` now; the server stays up and turns ``SERVING`` again by itself;
- ``NOT_FOUND`` (a status code, not a status): the server has no service of that name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.runtime.logging import get_logger

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
Status = int  # a HealthCheckResponse.ServingStatus value

PROBE_INTERVAL_SECONDS = 1.0
PROBE_BACKOFF_SECONDS = (0.25, 0.5, 1.0, 2.0)

_log = get_logger("assay.health")


class Health:
    """Statuses by service name; ``Check``, ``List`` and ``Watch`` read them (the servicer of
    ``grpc.health.v1.Health``: ``add_to`` registers it)."""

    def __init__(self) -> None:
        self._status: dict[str, Status] = {"": SERVING}
        self._draining = False
        # Replaced on every change; the old one is set, waking the watchers of that moment.
        self._changed = asyncio.Event()

    def add_to(self, server: grpc.aio.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(self, server)

    def status(self, service: str) -> Status | None:
        return self._status.get(service)

    def set(self, service: str, status: Status) -> None:
        """Set one name's status (ignored once draining: shutdown's NOT_SERVING stands)."""
        if self._draining or self._status.get(service) == status:
            return
        self._status[service] = status
        self._notify()

    def drain(self) -> None:
        """Every name NOT_SERVING, for good; open ``Watch`` streams get it and end."""
        self._draining = True
        for service in self._status:
            self._status[service] = NOT_SERVING
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        status = self._status.get(request.service)
        if status is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=status)

    async def List(
        self, request: health_pb2.HealthListRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthListResponse:
        return health_pb2.HealthListResponse(
            statuses={
                name: health_pb2.HealthCheckResponse(status=status)
                for name, status in self._status.items()
            }
        )

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> None:
        last: Status | None = None
        while True:
            changed = self._changed
            status = self._status.get(request.service, SERVICE_UNKNOWN)
            if status != last:
                await context.write(health_pb2.HealthCheckResponse(status=status))
                last = status
                continue  # the status may have changed (a drain begun) while that was sent
            if self._draining:
                return  # the stream ends with OK once NOT_SERVING is sent
            await changed.wait()


async def watch_dependency(
    health: Health,
    service: str,
    dependency: str,
    probe: Callable[[], Awaitable[bool]],
    serving: bool,
) -> None:
    """Keep ``service``'s status in step with ``probe()`` until cancelled: ``NOT_SERVING``
    while the dependency is unreachable, ``SERVING`` again once it is back.

    It probes once a second while the probe succeeds and, while it fails, after 0.25, 0.5,
    1 and then every 2 seconds, logging each change once. ``serving`` is what the last
    probe said (start-up runs the first one)."""
    failures = 0 if serving else 1
    while True:
        delay = (
            PROBE_INTERVAL_SECONDS
            if serving
            else PROBE_BACKOFF_SECONDS[min(failures - 1, len(PROBE_BACKOFF_SECONDS) - 1)]
        )
        await asyncio.sleep(delay)
        now = await probe_once(probe)
        failures = 0 if now else failures + 1
        if now != serving:
            serving = now
            health.set(service, SERVING if now else NOT_SERVING)
            if now:
                _log.info("dependency_available", service=service, dependency=dependency)
            else:
                _log.warning("dependency_unavailable", service=service, dependency=dependency)


async def probe_once(probe: Callable[[], Awaitable[bool]]) -> bool:
    """``probe()``, with any failure of the probe itself counted as "not reachable"."""
    try:
        return await probe()
    except Exception:  # a probe that breaks must not end the watch
        _log.exception("dependency_probe_failed")
        return False
