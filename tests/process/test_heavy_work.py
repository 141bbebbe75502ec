"""Heavy resolution neither stalls the server nor outlives its caller.

The resolver once computed on the event loop, so during one large request 4 of
10 health checks failed, and a caller that gave up after 1 s left the server busy for
7.9 s more. Through a real resolver process: health checks sent every 100 ms while a
heavy request is resolved are all answered SERVING; a heavy request whose deadline
passes is stopped soon after, which the server logs (``resolver_work_stopped``, with
how long the work lingered); and, in process, small requests never leave the loop.
Only ``TestHeavyWork`` starts a process (and is marked so); ``TestInProcess`` serves in
the test's own event loop.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2

from assay.services.resolver.adapters.offload import INLINE_MAX_UNITS
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as rpb
from tests.support.eventually import eventually_async
from tests.support.heavy_calls import LINGER_BOUND_MS, LOG_WAIT, health_while, work_stopped
from tests.support.processes import AssayProcess, free_port, service_process
from tests.support.resolver_in_process import OPTIONS, resolver_in_process

RESOLVE_SEMANTIC = "/assay.v1.ResolverService/ResolveSemantic"
SERVING = health_pb2.HealthCheckResponse.SERVING


def semantic_request(claims: int) -> bytes:
    """ResolveSemantic of (s, p) over ``claims`` claims, all about other subjects, so the
    work is reading and checking every claim and the answer is small. Built from one
    1,000-claim request repeated: parsing concatenated messages merges them."""
    part = rpb.ResolveSemanticRequest()
    for i in range(1_000):
        claim = part.evidence.claims.add(
            subject=f"other-{i}", predicate="p", source="test_result", confidence=0.9
        )
        claim.value.string_value = "v"
    target = rpb.ResolveSemanticRequest(subject="s", predicate="p")
    return part.SerializeToString() * (claims // 1_000) + target.SerializeToString()


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    port = free_port()
    log = tmp_path_factory.mktemp("heavy") / "resolver.log"
    with service_process(["serve", "resolver", "--port", str(port)], log, port) as running:
        yield running


@pytest.mark.process
class TestHeavyWork:
    async def test_health_answers_throughout_a_heavy_resolve(self, resolver: AssayProcess) -> None:
        """Every health check sent while 700,000 claims are resolved answers SERVING."""
        raw = semantic_request(700_000)
        async with grpc.aio.insecure_channel(resolver.target, options=OPTIONS) as channel:
            heavy = asyncio.ensure_future(channel.unary_unary(RESOLVE_SEMANTIC)(raw, timeout=120))
            answers = await health_while(channel, heavy)
            response = rpb.ResolveSemanticResponse.FromString(await heavy)
        assert response.resolution.subject == "s"
        assert len(answers) >= 5, "the heavy call ended too soon to check much"
        assert answers == [SERVING] * len(answers)

    async def test_work_stops_soon_after_the_callers_deadline(self, resolver: AssayProcess) -> None:
        """A million claims (seconds of work) with a 1.5 s deadline: the caller gets
        DEADLINE_EXCEEDED, the server logs that it stopped the work shortly after, and answers
        the next call. The deadline leaves room for the request to arrive on a loaded machine:
        a call cancelled before its handler starts leaves no work to stop."""
        raw = semantic_request(1_000_000)
        async with grpc.aio.insecure_channel(resolver.target, options=OPTIONS) as channel:
            call = channel.unary_unary(RESOLVE_SEMANTIC)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call(raw, timeout=1.5)
            assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            await work_stopped(resolver, "ResolveSemantic")
            small = await call(semantic_request(1_000), timeout=30)
        assert rpb.ResolveSemanticResponse.FromString(small).resolution.subject == "s"


@pytest.fixture
async def in_process() -> AsyncIterator[tuple[ResolverServicer, grpc.aio.Channel]]:
    async with resolver_in_process() as pair:
        yield pair


class TestInProcess:
    async def test_small_requests_stay_on_the_loop(
        self, in_process: tuple[ResolverServicer, grpc.aio.Channel]
    ) -> None:
        """Ten claims are resolved on the loop; past the threshold, on a worker thread."""
        servicer, channel = in_process
        call = channel.unary_unary(RESOLVE_SEMANTIC)
        await call(semantic_request(1_000), timeout=30)
        await call(semantic_request(INLINE_MAX_UNITS), timeout=30)
        assert servicer.offload.started == 0
        await call(semantic_request(INLINE_MAX_UNITS + 1_000), timeout=30)
        assert servicer.offload.started == 1

    async def test_a_cancelled_heavy_call_stops_its_work(
        self, in_process: tuple[ResolverServicer, grpc.aio.Channel]
    ) -> None:
        """Cancelling a heavy call stops its work, counted by the servicer."""
        servicer, channel = in_process
        heavy = channel.unary_unary(RESOLVE_SEMANTIC)(semantic_request(1_000_000), timeout=60)
        await eventually_async(
            lambda: servicer.offload.started > 0,
            message="the heavy work under way on a worker",
            timeout=LOG_WAIT,
        )
        heavy.cancel()
        await eventually_async(
            lambda: servicer.offload.stopped > 0, message="the work to stop", timeout=LOG_WAIT
        )
        assert servicer.offload.lingered[-1] * 1000 < LINGER_BOUND_MS

    async def test_a_heavy_rejection_leaves_no_cycle(
        self, in_process: tuple[ResolverServicer, grpc.aio.Channel]
    ) -> None:
        """A heavy request rejected on a worker is freed by reference counting: nothing of
        it (request, reader, error) waits for the cyclic collector."""
        _, channel = in_process
        request = rpb.ResolveEvidenceRequest()
        request.evidence.claims.extend(
            claim_pb2.Claim(subject="s", predicate="p", source="no-such-kind", confidence=0.5)
            for _ in range(INLINE_MAX_UNITS + 1)
        )
        call = channel.unary_unary("/assay.v1.ResolverService/ResolveEvidence")
        gc.collect()
        gc.disable()
        try:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call(request.SerializeToString(), timeout=30)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            kept = {type(o).__name__ for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert not kept & {"ResolveEvidenceRequest", "Reader", "InvalidArgument", "Future"}
