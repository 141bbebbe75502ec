"""The ``/metrics`` endpoint: a small HTTP/1.1 responder on the event loop.

prometheus_client's ``start_http_server`` keeps a thread per open connection, so anyone who
reaches the port can make the process hold a thread per idle socket. Here one costs a coroutine:

- at most ``MAX_CONNECTIONS`` are open at once: one more closes the connection that has
  waited longest for a request (idle sockets cannot lock out a scraper, which sends its
  request as it connects), or, when every one is busy answering, itself;
- a connection silent for ``IDLE_SECONDS`` before a complete request head (or after an
  answer), or too slow to take an answer within it, is closed;
- a head is at most ``MAX_HEAD_BYTES``; only ``GET``/``HEAD`` of ``/metrics`` (or ``/``) is
  answered, anything else refused with its HTTP status, a request with a body also closed.

The exposition (OpenMetrics when asked for, gzip when accepted) is built on one worker thread:
a scrape never stalls the loop, and metrics hold one thread however many clients connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

MAX_CONNECTIONS = 64
IDLE_SECONDS = 10.0
MAX_HEAD_BYTES = 8 * 1024
CLOSE_SECONDS = 1.0
_PATHS = frozenset({"/metrics", "/"})


class MetricsEndpoint:
    """Serves one registry over HTTP on the running loop (``start``, then ``close``)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        max_connections: int = MAX_CONNECTIONS,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self.registry = registry
        self.max_connections = max_connections
        self.idle_seconds = idle_seconds
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        # Connections waiting for a request head, longest-waiting first.
        self._idle: dict[asyncio.StreamWriter, None] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._render = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-metrics")

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._open)

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host:port`` (0: any free port; ``self.port`` says which)."""
        self._server = await asyncio.start_server(
            self._serve, host.strip("[]") or None, port, limit=MAX_HEAD_BYTES
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening, close every connection and wait (briefly) for each one's task to
        see its end, so none is left for the loop to cancel; end the worker thread."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            for writer in list(self._open):
                writer.close()
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=CLOSE_SECONDS)
            await server.wait_closed()
        self._render.shutdown(wait=False, cancel_futures=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if self._server is None or len(self._open) >= self.max_connections:
            if self._server is None or not self._idle:
                writer.close()
                return
            oldest = next(iter(self._idle))
            del self._idle[oldest]
            self._open.discard(oldest)
            oldest.close()  # its reader sees the end and its task finishes
        self._open.add(writer)
        try:
            while await self._answer_one(reader, writer):
                pass
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass  # idle, too slow, or gone: the connection just ends
        except asyncio.LimitOverrunError:
            await self._quietly(writer, _response(431, b"request head too large\n", close=True))
        finally:
            self._open.discard(writer)
            self._idle.pop(writer, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request head and answer it; whether the connection stays open."""
        self._idle[writer] = None
        try:
            async with asyncio.timeout(self.idle_seconds):
                head = await reader.readuntil(b"\r\n\r\n")
        finally:
            self._idle.pop(writer, None)
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = _headers(header_lines)
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await self._send(writer, _response(400, b"bad request\n", close=True))
            return False
        method, target, version = parts
        if headers.get("content-length", "0") != "0" or "transfer-encoding" in headers:
            refusal = _response(413, b"a request body is not accepted\n", close=True)
            await self._send(writer, refusal)
            return False
        keep = _keeps_alive(version, headers)
        if target.split("?", 1)[0] not in _PATHS:
            await self._send(writer, _response(404, b"not found: try /metrics\n", close=not keep))
        elif method not in ("GET", "HEAD"):
            answer = _response(405, b"GET or HEAD only\n", close=not keep, allow=True)
            await self._send(writer, answer)
        else:
            loop = asyncio.get_running_loop()
            body, extra = await loop.run_in_executor(
                self._render, self._exposition, headers.get("accept", ""), headers
            )
            answer = _response(200, body, close=not keep, extra=extra, head=method == "HEAD")
            await self._send(writer, answer)
        return keep

    def _exposition(self, accept: str, headers: dict[str, str]) -> tuple[bytes, list[str]]:
        encoder, content_type = choose_encoder(accept)
        body = encoder(self.registry)
        extra = [f"Content-Type: {content_type}"]
        if gzip_accepted(headers.get("accept-encoding", "")):
            body = gzip.compress(body)
            extra.append("Content-Encoding: gzip")
        return body, extra

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        async with asyncio.timeout(self.idle_seconds):
            await writer.drain()

    async def _quietly(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        with contextlib.suppress(TimeoutError, ConnectionError):
            await self._send(writer, data)


def _headers(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            found[name.strip().lower()] = value.strip()
    return found


def _keeps_alive(version: str, headers: dict[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if version == "HTTP/1.0":
        return connection == "keep-alive"
    return connection != "close"


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
}


def _response(
    status: int,
    body: bytes,
    *,
    close: bool,
    extra: list[str] | None = None,
    allow: bool = False,
    head: bool = False,
) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS[status]}", f"Content-Length: {len(body)}"]
    lines += extra if extra is not None else ["Content-Type: text/plain; charset=utf-8"]
    if allow:
        lines.append("Allow: GET, HEAD")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head else body)
