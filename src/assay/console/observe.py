"""One structured log line per console request, and its count in the process's metrics.

The line names the method, the route's template (``/review/{case_id}``, never the path a
person typed, so no case id, query string, cookie or token reaches the log), the status and
the duration, through the services' structured logging. With ``--metrics-port`` the same
request is counted in the process's Prometheus registry, beside the services' series:
``assay_console_requests_total`` and ``assay_console_request_seconds``, by method, route
and status.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.runtime.logging import get_logger

_log = get_logger("assay.console")
# Anything no route matched (a 404): one label value, not the path.
UNMATCHED = "unmatched"
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class RequestMeter:
    """The console's series in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("method", "route", "status")
        self._requests = Counter(
            "assay_console_requests",
            "Console HTTP requests answered, by method, route template and status.",
            labels,
            registry=registry,
        )
        self._seconds = Histogram(
            "assay_console_request_seconds",
            "Time to answer a console HTTP request, in seconds.",
            labels,
            buckets=SECONDS_BUCKETS,
            registry=registry,
        )

    def record(self, method: str, route: str, status: int, seconds: float) -> None:
        self._requests.labels(method, route, str(status)).inc()
        self._seconds.labels(method, route, str(status)).observe(seconds)


@dataclass
class Observer:
    """Where requests are reported: always the log; the metrics once ``meter`` is set (the
    process's registry may exist only after the services started)."""

    meter: RequestMeter | None = field(default=None)

    def attach(self, registry: CollectorRegistry) -> None:
        self.meter = RequestMeter(registry)


def route_of(scope: Scope) -> str:
    """The template of the route that answered (set by the router on the scope)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else UNMATCHED


class RequestLog:
    """ASGI middleware writing the line and recording the metrics for each HTTP request."""

    def __init__(self, app: ASGIApp, observer: Observer) -> None:
        self.app = app
        self.observer = observer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees if the app raises before answering

        async def noting(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noting)
        finally:
            seconds = time.perf_counter() - started
            method, route = str(scope.get("method", "")), route_of(scope)
            _log.info(
                "http_request",
                method=method,
                route=route,
                status=status,
                duration_ms=round(seconds * 1000, 3),
            )
            if self.observer.meter is not None:
                self.observer.meter.record(method, route, status, seconds)
