"""Serving the console: uvicorn on the running event loop, beside the gRPC services.

``start`` binds the console's socket itself (a taken port is an ``OSError`` naming it, not
uvicorn's exit), serves, and ``RunningConsole.stop`` lets in-flight requests finish within
the grace period and closes the channels to the services. The process's own SIGTERM/SIGINT
handling decides when: uvicorn installs no signal handlers of its own here. HTTPS when the
settings carry a certificate; the access log is ``observe``'s one line per request, never
with a cookie or a query string that could hold a code.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn

from assay.console.app import build_app
from assay.console.observe import Observer
from assay.console.settings import ConsoleSettings
from assay.runtime.logging import get_logger

_log = get_logger("assay.console")


class ConsoleServer(uvicorn.Server):
    """uvicorn's server, leaving the signals to the process that hosts it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def server(
    settings: ConsoleSettings, grace: float = 5.0, observer: Observer | None = None
) -> uvicorn.Server:
    """An unstarted uvicorn server for the console (``await server.serve()`` runs it;
    ``server.should_exit = True`` stops it)."""
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    config = uvicorn.Config(
        build_app(settings, observer=observer),
        host=settings.host,
        port=settings.port,
        ssl_certfile=str(settings.tls_cert) if settings.tls_cert else None,
        ssl_keyfile=str(settings.tls_key) if settings.tls_key else None,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(grace) or 1,
        server_header=False,
        proxy_headers=False,
    )
    return ConsoleServer(config)


@dataclass
class RunningConsole:
    """A started console: where it listens, and how to stop it."""

    server: uvicorn.Server
    task: asyncio.Task[None]
    address: str

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish (within the grace), close."""
        self.server.should_exit = True
        await self.task
        _log.info("console_stopped", address=self.address)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; ``OSError`` naming them when it cannot be."""
    try:
        info = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise OSError(f"could not bind {host}:{port} for console: {error.strerror}") from None
    sock = socket.socket(info[0], info[1], info[2])
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
        sock.listen(2048)
    except OSError as error:
        sock.close()
        reason = "the port is in use" if error.errno == errno.EADDRINUSE else error.strerror
        raise OSError(f"could not bind {host}:{port} for console: {reason}") from None
    sock.setblocking(False)
    return sock


async def start(
    settings: ConsoleSettings, grace: float = 5.0, observer: Observer | None = None
) -> RunningConsole:
    """Bind and serve the console; returns once it accepts requests."""
    running = server(settings, grace, observer)
    running.config.load()  # an unreadable certificate or key fails here, before binding
    sock = bind(settings.host, settings.port)
    task = asyncio.create_task(running.serve(sockets=[sock]), name="console")
    while not running.started:
        if task.done():
            sock.close()
            task.result()  # a start that failed raises here
            raise OSError("the console stopped while starting")
        await asyncio.sleep(0.01)
    port = sock.getsockname()[1]
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    scheme = "https" if settings.https else "http"
    return RunningConsole(running, task, f"{scheme}://{host}:{port}")


async def serve_until(settings: ConsoleSettings, stop: asyncio.Event, grace: float = 5.0) -> None:
    """Serve until ``stop`` is set, then shut down gracefully."""
    running = await start(settings, grace)
    await stop.wait()
    await running.stop()
