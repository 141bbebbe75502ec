"""The ``/metrics`` endpoint under idle and malformed connections, on real loopback sockets:
no thread per connection, a bounded number open, idle ones closed, each request answered
with its HTTP status."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from assay.runtime.config import ServerConfig
from assay.runtime.metrics_http import MAX_CONNECTIONS, MAX_HEAD_BYTES, MetricsEndpoint
from assay.runtime.server import serving
from tests.service.planner_harness import resolver_spec
from tests.service.test_observability import RESOLVER, sample, scrape
from tests.support.eventually import eventually_async

Streams = list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]


async def connect(port: int, count: int) -> Streams:
    return [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]


def close_all(streams: Streams) -> None:
    for _, writer in streams:
        writer.close()


@pytest.fixture
async def endpoint() -> AsyncIterator[MetricsEndpoint]:
    """An endpoint on a free loopback port with one counter in its registry and a short
    idle timeout."""
    registry = CollectorRegistry()
    Counter("assay_test_events", "Events.", registry=registry).inc(3)
    served = MetricsEndpoint(registry, max_connections=8, idle_seconds=0.5)
    await served.start("127.0.0.1", 0)
    yield served
    await served.close()


async def answer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[str, bytes]:
    """Send ``request``; the response's status line and body, read whole."""
    writer.write(request)
    await writer.drain()
    async with asyncio.timeout(10):
        status = (await reader.readline()).decode().strip()
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(":", 1)[1])
            for line in head.decode().split("\r\n")
            if line.lower().startswith("content-length:")
        )
        body = b"" if request.startswith(b"HEAD") else await reader.readexactly(length)
    return status, body


async def exchange(port: int, request: bytes) -> tuple[str, bytes]:
    """Send ``request`` on a new connection; the response's status line and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await answer(reader, writer, request)
    finally:
        writer.close()


class TestIdleConnections:
    async def test_300_idle_connections_add_no_thread_and_scrapes_still_answer(self) -> None:
        """300 idle connections to a serving process's endpoint: no thread is started, at
        most the cap stay open (the longest idle closed for newcomers), and a scrape made
        while they are held answers."""
        async with serving([resolver_spec()], ServerConfig(metrics_port=0)) as running:
            metrics = running[0].metrics
            assert metrics is not None
            assert metrics.endpoint is not None
            served = metrics.endpoint
            await scrape(metrics.port)  # the rendering thread and the test's fetch thread
            threads = threading.active_count()
            held = await connect(metrics.port, 300)
            try:
                evicted = 300 - MAX_CONNECTIONS
                await eventually_async(
                    lambda: sum(r.at_eof() for r, _ in held) == evicted,
                    message=f"{evicted} connections closed by the server",
                    timeout=20,
                )
                assert served.connections == MAX_CONNECTIONS
                assert threading.active_count() <= threads
                got = await scrape(metrics.port)
                assert sample(got, "assay_rpc_in_flight", grpc_service=RESOLVER) == 0
                assert threading.active_count() <= threads
            finally:
                close_all(held)

    async def test_idle_connections_are_closed_after_the_timeout(
        self, endpoint: MetricsEndpoint
    ) -> None:
        """Silent connections, half-sent request heads and a kept-alive connection after
        its answer are all closed by the server once idle for the timeout."""
        silent = await connect(endpoint.port, 3)
        partial = await connect(endpoint.port, 3)
        for _, writer in partial:
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        kept = await connect(endpoint.port, 1)
        streams = silent + partial + kept
        try:
            status, _ = await answer(*kept[0], b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status == "HTTP/1.1 200 OK"
            await eventually_async(
                lambda: all(reader.at_eof() for reader, _ in streams),
                message="every idle connection closed by the server",
                timeout=20,
            )
            assert endpoint.connections == 0
        finally:
            close_all(streams)


class TestRequests:
    @pytest.mark.parametrize(
        ("request_bytes", "status"),
        [
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"),
            (b"GET /metrics?name[]=x HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK"),
            (b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"),
            (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK"),
            (b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed"),
            (b"GET /secrets HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found"),
            (
                b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
                "HTTP/1.1 413 Content Too Large",
            ),
            (b"NONSENSE\r\n\r\n", "HTTP/1.1 400 Bad Request"),
            (
                b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"x" * MAX_HEAD_BYTES + b"\r\n\r\n",
                "HTTP/1.1 431 Request Header Fields Too Large",
            ),
        ],
        ids=["get", "http/1.0", "head", "root", "post", "other path", "body", "garbage", "huge"],
    )
    async def test_each_request_gets_its_status(
        self, endpoint: MetricsEndpoint, request_bytes: bytes, status: str
    ) -> None:
        """A scrape gets the exposition; anything else its HTTP refusal."""
        got, body = await exchange(endpoint.port, request_bytes)
        assert got == status
        if status.endswith("200 OK") and not request_bytes.startswith(b"HEAD"):
            assert b"assay_test_events_total 3.0" in body
