"""Serving the console: uvicorn on the running event loop, beside the gRPC services.

``serve`` binds, serves until ``stop`` is set, then lets in-flight requests finish within
the grace period and closes the channels to the services. HTTPS when the settings carry a
certificate; the access log goes through the services' structured logging, never with a
cookie or a query string that could hold a code.
"""

from __future__ import annotations

import asyncio
import logging

import uvicorn

from assay.console.app import build_app
from assay.console.settings import ConsoleSettings


def server(settings: ConsoleSettings, grace: float = 5.0) -> uvicorn.Server:
    """An unstarted uvicorn server for the console (``await server.serve()`` runs it;
    ``server.should_exit = True`` stops it)."""
    config = uvicorn.Config(
        build_app(settings),
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
    return uvicorn.Server(config)


async def serve_until(settings: ConsoleSettings, stop: asyncio.Event, grace: float = 5.0) -> None:
    """Serve until ``stop`` is set, then shut down gracefully."""
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    running = server(settings, grace)
    task = asyncio.create_task(running.serve(), name="console")
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    running.should_exit = True
    stopper.cancel()
    await task
