"""The client library retries a server whose database is unavailable, after its RetryInfo delay.

A real ``grpc.aio`` server on loopback answers ``GetReviewer`` and ``RegisterReviewer``
with the status the runtime builds for STORAGE_UNAVAILABLE (``runtime.status.to_status``:
RetryInfo and pushback) for its first calls, then succeeds. The typed client's calls
succeed through more failed attempts than the channel's own retry policy makes; a
database that never comes back ends in the refusal itself after a bounded number of
attempts; a refusal without RetryInfo (a write whose commit outcome is unknown) is not
repeated by the interceptor. The delays themselves are checked on ``refusal_delay``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import pytest

from assay.client.adjudication import AdjudicationClient
from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.errors import AssayCallError
from assay.client.overload import (
    MAX_DELAY_SECONDS,
    OVERLOAD_ATTEMPTS,
    STORAGE_ATTEMPTS,
    refusal_delay,
)
from assay.errors import Reason, Unavailable, storage_unavailable
from assay.runtime.admission import refusal
from assay.runtime.status import to_status
from assay.v1 import adjudication_service_pb2 as adj

# The channel's retry policy (assay.client.channel.RETRY_POLICY) makes at most this many.
POLICY_ATTEMPTS = 4
# Small, so the bounded runs stay fast; the client still doubles it per attempt.
DELAY_SECONDS = 0.01


@dataclass
class Flaky:
    """Fails the first ``failures`` calls with ``error``, then answers; counts every call."""

    failures: int
    error: Unavailable
    calls: int = 0
    requests: set[bytes] = field(default_factory=set)

    async def answer(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.calls += 1
        self.requests.add(request)
        if self.calls <= self.failures:
            status = to_status(self.error, "rid")
            await context.abort(status.code, status.details, status.trailing_metadata)
        return adj.GetReviewerResponse(reviewer=adj.Reviewer(reviewer_id="r1")).SerializeToString()


@pytest.fixture
async def serve() -> AsyncIterator[tuple[Flaky, str]]:
    flaky = Flaky(0, storage_unavailable("the database is unavailable", DELAY_SECONDS))
    handler = grpc.unary_unary_rpc_method_handler(flaky.answer)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "assay.v1.AdjudicationService",
                {"GetReviewer": handler, "RegisterReviewer": handler},
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield flaky, f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


class TestStorageRetries:
    async def test_a_read_succeeds_through_more_failures_than_the_channel_retries(
        self, serve: tuple[Flaky, str]
    ) -> None:
        """Seven STORAGE_UNAVAILABLE answers, then the answer: the caller sees only the answer."""
        flaky, target = serve
        flaky.failures = 7
        async with AsyncAdjudicationClient(target, timeout=10) as client:
            got = await client.get_reviewer(adj.GetReviewerRequest(reviewer_id="r1"))
        assert got.reviewer.reviewer_id == "r1"
        assert flaky.calls == 8
        assert flaky.calls > POLICY_ATTEMPTS

    async def test_a_mutation_with_its_request_id_is_retried_too(
        self, serve: tuple[Flaky, str]
    ) -> None:
        """RegisterReviewer is retried the same way, every attempt carrying the one request id
        the client filled in (so the server answers a repeat from the stored response)."""
        flaky, target = serve
        flaky.failures = 5
        async with AsyncAdjudicationClient(target, timeout=10) as client:
            await client.register_reviewer(adj.RegisterReviewerRequest())
        assert flaky.calls == 6
        assert len(flaky.requests) == 1
        (sent,) = flaky.requests
        assert adj.RegisterReviewerRequest.FromString(sent).request_id

    async def test_the_blocking_client_retries_the_same_way(self, serve: tuple[Flaky, str]) -> None:
        """The generated blocking client's channel has the same interceptor."""
        flaky, target = serve
        flaky.failures = 6

        def call() -> adj.GetReviewerResponse:
            with AdjudicationClient(target, timeout=10) as client:
                return client.get_reviewer(adj.GetReviewerRequest(reviewer_id="r1"))

        got = await asyncio.to_thread(call)
        assert got.reviewer.reviewer_id == "r1"
        assert flaky.calls == 7

    async def test_a_database_that_never_returns_ends_in_the_refusal_after_bounded_attempts(
        self, serve: tuple[Flaky, str]
    ) -> None:
        """Still unavailable: the caller gets UNAVAILABLE / STORAGE_UNAVAILABLE, after at most
        the interceptor's attempts times the channel policy's."""
        flaky, target = serve
        flaky.failures = 10_000
        async with AsyncAdjudicationClient(target, timeout=20) as client:
            with pytest.raises(AssayCallError) as caught:
                await client.get_reviewer(adj.GetReviewerRequest(reviewer_id="r1"))
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE
        assert caught.value.reason == Reason.STORAGE_UNAVAILABLE
        assert STORAGE_ATTEMPTS < flaky.calls <= STORAGE_ATTEMPTS * POLICY_ATTEMPTS

    async def test_an_unknown_commit_without_retry_info_is_not_repeated_by_the_client(
        self, serve: tuple[Flaky, str]
    ) -> None:
        """No RetryInfo: the interceptor adds no attempt (only the channel policy's own)."""
        flaky, target = serve
        flaky.failures = 10_000
        flaky.error = storage_unavailable("the write may have been stored", None)
        async with AsyncAdjudicationClient(target, timeout=20) as client:
            with pytest.raises(AssayCallError) as caught:
                await client.get_reviewer(adj.GetReviewerRequest(reviewer_id="r1"))
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE
        assert flaky.calls <= POLICY_ATTEMPTS


def trailers_of(error: Unavailable) -> tuple[grpc.StatusCode, tuple[tuple[str, object], ...]]:
    status = to_status(error, "rid")
    return status.code, tuple(status.trailing_metadata)


class TestRefusalDelay:
    @pytest.mark.parametrize("attempt", [1, 2, 3, 4, 5, 12])
    def test_storage_delays_double_per_attempt_jittered_and_capped(self, attempt: int) -> None:
        """The RetryInfo delay doubled per attempt, jittered to 50-100%, never below the
        server's delay nor above the cap; at most STORAGE_ATTEMPTS in all."""
        code, trailers = trailers_of(storage_unavailable("down", 0.25))
        ceiling = min(MAX_DELAY_SECONDS, 0.25 * 2 ** (attempt - 1))
        for seed in range(20):
            found = refusal_delay(code, trailers, attempt, random.Random(seed))
            assert found is not None
            delay, attempts = found
            assert attempts == STORAGE_ATTEMPTS
            assert max(0.25, ceiling / 2) <= delay <= ceiling

    def test_an_overload_refusal_waits_the_servers_delay(self) -> None:
        """OVERLOADED: the server's own delay (it already grows with the attempts it is told)."""
        refused = refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.OVERLOADED, "busy", 0.3, {})
        found = refusal_delay(refused.code, refused.trailing_metadata, 3)
        assert found is not None
        delay, attempts = found
        assert delay == pytest.approx(0.3)
        assert attempts == OVERLOAD_ATTEMPTS

    @pytest.mark.parametrize(
        ("code", "reason", "delay"),
        [
            (grpc.StatusCode.UNAVAILABLE, Reason.SHUTTING_DOWN, 0.5),  # the channel policy's
            (grpc.StatusCode.UNAVAILABLE, Reason.STORAGE_UNAVAILABLE, None),  # commit unknown
            (grpc.StatusCode.INTERNAL, Reason.INTERNAL, 0.5),
            (grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.RESPONSE_TOO_LARGE, 0.5),
        ],
    )
    def test_other_refusals_are_not_retried_here(
        self, code: grpc.StatusCode, reason: Reason, delay: float | None
    ) -> None:
        """Anything but OVERLOADED or STORAGE_UNAVAILABLE with RetryInfo gets no delay."""
        if delay is None:
            _, trailers = trailers_of(storage_unavailable("maybe stored", None))
        else:
            trailers = refusal(code, reason, "no", delay, {}).trailing_metadata
        assert refusal_delay(code, trailers, 1) is None
