"""A resolver served in the test's own event loop, with a channel that takes large messages.

For tests that look inside the servicer (its offload counters) while calling it over a
real loopback socket.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from assay.runtime.server import serving
from assay.services.registry import ServeOptions
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.service import build_spec

BIG = 256 * 1024 * 1024
OPTIONS = [("grpc.max_send_message_length", BIG), ("grpc.max_receive_message_length", BIG)]


@contextlib.asynccontextmanager
async def resolver_in_process() -> AsyncIterator[tuple[ResolverServicer, grpc.aio.Channel]]:
    """The servicer and a channel to it, both closed on exit."""
    spec = await build_spec(ServeOptions(port=0))
    assert isinstance(spec.servicer, ResolverServicer)
    async with (
        serving([spec]) as running,
        grpc.aio.insecure_channel(running[0].address, options=OPTIONS) as channel,
    ):
        yield spec.servicer, channel
