"""A failed call leaves nothing for the garbage collector: what it held is freed as it ends.

The serving process runs full collections rarely (``gc_tuning``), so anything a failed
call leaves in a reference cycle -- its frames, and through them the request -- stays
until one comes (ten rejected 40 MiB requests once held 1.3 GB). Here the
collector is off; a servicer keeps a weak reference to an object in its own frame, and
the test waits for it to die with the call.
"""

from __future__ import annotations

import asyncio
import gc
import io
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import grpc
import pytest

from assay import errors
from assay.runtime.config import ServerConfig
from assay.runtime.logging import configure_logging
from assay.runtime.server import RunningService, ServiceSpec, serving
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from tests.support.eventually import eventually_async

SERVICE = adj.DESCRIPTOR.services_by_name["AdjudicationService"]
FREED_WITHIN_SECONDS = 2.0


class Held:
    """Stands for what a call holds (its request, its rows) in the servicer's frame."""


class FailingServicer:
    """Each method fails one way, holding a ``Held`` in its frame when it does."""

    def __init__(self) -> None:
        self.held: list[weakref.ref[Held]] = []
        self.waiting = asyncio.Event()

    def hold(self) -> Held:
        held = Held()
        self.held.append(weakref.ref(held))
        return held

    async def GetCase(self, request: Any, context: Any) -> Any:
        held = self.hold()  # noqa: F841 - in the frame, as a request would be
        raise errors.InvalidArgument(
            errors.Reason.MALFORMED_REQUEST,
            "case_id: too long",
            [errors.FieldViolation("case_id", "too long")],
        )

    async def GetReviewer(self, request: Any, context: Any) -> Any:
        held = self.hold()  # noqa: F841
        raise RuntimeError("a bug")

    async def GetCaseState(self, request: Any, context: Any) -> Any:
        held = self.hold()  # noqa: F841
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "aborted by the servicer")

    async def ListQueue(self, request: Any, context: Any) -> Any:
        held = self.hold()  # noqa: F841
        self.waiting.set()
        await asyncio.Event().wait()  # until the caller cancels

    async def ExportCorpus(self, request: Any, context: Any) -> AsyncIterator[Any]:
        held = self.hold()  # noqa: F841
        yield adj.ExportCorpusResponse()
        raise errors.InvalidArgument(
            errors.Reason.MALFORMED_REQUEST, "page_token: bad", [errors.FieldViolation("x", "y")]
        )

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def unused(request: Any, context: Any) -> Any:
            raise AssertionError(f"{name} is not part of this test")

        return unused


@pytest.fixture
def collector_off() -> Iterator[None]:
    # As a server logs: the development renderer structlog uses unconfigured shows a
    # traceback's locals and keeps what it shows.
    configure_logging("info", io.StringIO())
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
async def server(collector_off: None) -> AsyncIterator[tuple[RunningService, FailingServicer]]:
    servicer = FailingServicer()
    spec = ServiceSpec("failing", SERVICE, servicer, port=0)
    async with serving([spec], ServerConfig(grace_seconds=1)) as running:
        yield running[0], servicer


async def freed(servicer: FailingServicer) -> None:
    """Wait until everything the servicer held is gone: the server side of the call may
    still be finishing when the caller hears the status."""
    assert servicer.held, "the servicer held nothing to watch"
    await eventually_async(
        lambda: all(ref() is None for ref in servicer.held),
        message="what the failed call held to be freed",
        timeout=FREED_WITHIN_SECONDS,
    )


class TestFailedCallsFreeWhatTheyHeld:
    @pytest.mark.parametrize(
        ("method", "request_message", "code"),
        [
            ("GetCase", adj.GetCaseRequest(), grpc.StatusCode.INVALID_ARGUMENT),
            ("GetReviewer", adj.GetReviewerRequest(), grpc.StatusCode.INTERNAL),
            ("GetCaseState", adj.GetCaseStateRequest(), grpc.StatusCode.FAILED_PRECONDITION),
        ],
    )
    async def test_unary_failure(
        self,
        server: tuple[RunningService, FailingServicer],
        method: str,
        request_message: Any,
        code: grpc.StatusCode,
    ) -> None:
        """A domain error, an unexpected exception and the servicer's own abort each end
        the call with their status and free the frame's contents without a collection."""
        running, servicer = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = adj_grpc.AdjudicationServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await getattr(stub, method)(request_message, timeout=5)
        assert caught.value.code() == code
        await freed(servicer)

    async def test_stream_failure_after_a_message(
        self, server: tuple[RunningService, FailingServicer]
    ) -> None:
        """A server stream that fails after its first message: the caller gets the message
        and the status, and the frame's contents are freed."""
        running, servicer = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = adj_grpc.AdjudicationServiceStub(channel)
            call = stub.ExportCorpus(adj.ExportCorpusRequest(), timeout=5)
            assert await call.read() == adj.ExportCorpusResponse()
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call.read()
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        await freed(servicer)

    async def test_cancelled_call(self, server: tuple[RunningService, FailingServicer]) -> None:
        """A call the caller cancels mid-way frees the frame's contents."""
        running, servicer = server
        async with grpc.aio.insecure_channel(running.address) as channel:
            stub = adj_grpc.AdjudicationServiceStub(channel)
            call = stub.ListQueue(adj.ListQueueRequest(), timeout=5)
            await asyncio.wait_for(servicer.waiting.wait(), 5)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        await freed(servicer)
