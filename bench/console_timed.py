"""The console as ``bench/console.py`` runs it: its own process, timing every request.

Not a test: started by ``bench/console.py`` (``python bench/console_timed.py SETTINGS.json
RECORDS.jsonl``). It serves the console exactly as ``assay serve console`` builds it
(``assay.console.server.server`` and ``bind``, the assay event loop, its request log at
info), and adds, in this process only, an outermost ASGI wrapper and a gRPC client
interceptor on the console's channels: per request, the server's own time (from the
request's arrival in the application to its last byte handed to uvicorn) and the time
spent inside each gRPC call it made. The console's own overhead is the difference. The
records are written as JSON lines when SIGTERM stops the process, so no file is written
while the pages are measured.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from assay.console import server as console_server
from assay.console.observe import route_of
from assay.console.settings import ConsoleSettings
from assay.runtime import loop
from assay.runtime.logging import configure_logging


@dataclass
class Spent:
    """The gRPC calls one request made: (method, seconds) in the order they finished."""

    calls: list[tuple[str, float]] = field(default_factory=list)


CURRENT: contextvars.ContextVar[Spent | None] = contextvars.ContextVar("spent", default=None)


class GrpcTimer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Times each unary call until its reply (or error) arrives, into the request's Spent."""

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        spent = CURRENT.get()
        started = time.perf_counter()
        call = await continuation(details, request)
        try:
            await call
        except grpc.RpcError:
            pass  # the caller awaits the same call and sees the error itself
        finally:
            if spent is not None:
                method = details.method
                name = method.decode() if isinstance(method, bytes) else str(method)
                spent.calls.append((name.rsplit("/", 1)[-1], time.perf_counter() - started))
        return call


def with_timer(make: Callable[..., grpc.aio.Channel]) -> Callable[..., grpc.aio.Channel]:
    """``make`` (grpc.aio's channel constructor) with the timer among its interceptors."""

    def made(*args: Any, **kwargs: Any) -> grpc.aio.Channel:
        kwargs["interceptors"] = [*(kwargs.get("interceptors") or ()), GrpcTimer()]
        return make(*args, **kwargs)

    return made


class Timed:
    """Outermost ASGI wrapper: one record per HTTP request."""

    def __init__(self, app: Any, records: list[dict[str, Any]]) -> None:
        self.app = app
        self.records = records

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        spent = Spent()
        CURRENT.set(spent)
        status = 0

        async def noting(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        at = time.time()
        started = time.perf_counter()
        try:
            await self.app(scope, receive, noting)
        finally:
            self.records.append(
                {
                    "at": at,
                    "method": scope.get("method", ""),
                    "route": route_of(scope),
                    "status": status,
                    "seconds": time.perf_counter() - started,
                    "grpc": spent.calls,
                }
            )


async def serve(settings: ConsoleSettings, out: Path) -> None:
    records: list[dict[str, Any]] = []
    running = console_server.server(settings, grace=2.0)
    running.config.app = Timed(running.config.app, records)
    running.config.load()
    sock = console_server.bind(settings.host, settings.port)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    task = asyncio.create_task(running.serve(sockets=[sock]))
    await stop.wait()
    running.should_exit = True
    await task
    with out.open("w", encoding="utf-8") as file:
        for record in records:
            file.write(json.dumps(record) + "\n")


def settings_from(raw: dict[str, Any]) -> ConsoleSettings:
    """The console's settings from what ``bench/console.py`` wrote (JSON)."""
    return ConsoleSettings(
        host=str(raw["host"]),
        port=int(raw["port"]),
        adjudication=str(raw["adjudication"]),
        ca=Path(raw["ca"]),
        dev_credentials=Path(raw["dev_credentials"]),
    )


def main() -> int:
    settings = settings_from(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))
    configure_logging("info")  # as `assay serve console` runs by default: a line per request
    grpc.aio.secure_channel = with_timer(grpc.aio.secure_channel)
    grpc.aio.insecure_channel = with_timer(grpc.aio.insecure_channel)
    loop.run(serve(settings, Path(sys.argv[2])), "auto")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
