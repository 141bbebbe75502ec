"""No request makes a service build far more than it was sent, and every refusal says why.

Once, a 1 MiB ResolveHypotheses request (25,000 claims, 1,024 empty hypotheses)
made the resolver build gigabytes before gRPC refused to send them, and a PlanEvidence
with a 4 MiB claim value came back INTERNAL (its ResolveHypotheses response was over
the message limit). Through real servers: each amplifying request gets
INVALID_ARGUMENT with ERROR_REASON_REQUEST_TOO_EXPENSIVE or
ERROR_REASON_RESPONSE_TOO_LARGE and the field that drives it, never INTERNAL and never
gRPC's own RESOURCE_EXHAUSTED; and the largest request that is answered gets a
response of at most 100 times its size.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest

from assay.errors import Reason
from assay.runtime.config import ServerConfig
from assay.runtime.response_budget import RESPONSE_RATIO
from assay.runtime.server import serving
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.services.planner.service import build_spec as planner_spec
from assay.services.registry import ServeOptions
from assay.services.resolver.domain.request_cost import MAX_CLAIM_RESOLUTIONS
from assay.services.resolver.service import build_spec as resolver_spec
from assay.v1 import claim_pb2
from assay.v1 import planner_service_pb2 as ppb
from assay.v1 import planner_service_pb2_grpc as ppb_grpc
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rpb_grpc

TIMEOUT = 60.0
BIG = 256 * 1024 * 1024
# A client that accepts anything: a refusal must come from the server's caps.
ROOMY = [("grpc.max_send_message_length", BIG), ("grpc.max_receive_message_length", BIG)]
SUBJECT, PREDICATE = "s", "p"


def claim(value: str = "v", subject: str = SUBJECT, **fields: Any) -> claim_pb2.Claim:
    out = claim_pb2.Claim(
        subject=subject, predicate=PREDICATE, source="test_result", confidence=0.9, **fields
    )
    out.value.string_value = value
    return out


def hypotheses_request(
    claims: list[claim_pb2.Claim],
    hypotheses: int,
    detail: rpb.ResolutionDetail.ValueType = rpb.RESOLUTION_DETAIL_FULL,
) -> rpb.ResolveHypothesesRequest:
    request = rpb.ResolveHypothesesRequest(subject=SUBJECT, predicate=PREDICATE, detail=detail)
    request.evidence.claims.extend(claims)
    for i in range(hypotheses):
        request.hypotheses.add(label=f"h{i}")
    return request


async def refusal(call: Awaitable[Any]) -> DecodedError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return decode_rpc_error(caught.value)


def assert_refused(error: DecodedError, reason: Reason, field: str) -> None:
    """INVALID_ARGUMENT with ``reason`` and a violation naming ``field``."""
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT, (error.code, error.message)
    assert error.reason == reason, error.message
    assert [v.field for v in error.violations] == [field]


@pytest.fixture
async def resolver() -> AsyncIterator[rpb_grpc.ResolverServiceStub]:
    async with (
        serving([await resolver_spec(ServeOptions(port=0))]) as running,
        grpc.aio.insecure_channel(running[0].address, options=ROOMY) as channel,
    ):
        yield rpb_grpc.ResolverServiceStub(channel)


class TestResolveHypotheses:
    async def test_hypotheses_times_claims_over_the_cap(
        self, resolver: rpb_grpc.ResolverServiceStub
    ) -> None:
        """(hypotheses + 1) x claims about the target past the cap is REQUEST_TOO_EXPENSIVE."""
        claims = [claim(source_ref=str(i)) for i in range(2_000)]
        request = hypotheses_request(claims, 1_000, rpb.RESOLUTION_DETAIL_SUMMARY)
        error = await refusal(resolver.ResolveHypotheses(request, timeout=TIMEOUT))
        assert_refused(error, Reason.REQUEST_TOO_EXPENSIVE, "hypotheses")
        assert error.metadata["limit"] == str(MAX_CLAIM_RESOLUTIONS)
        assert error.metadata["requested"] == str(1_001 * 2_000)

    async def test_the_one_mib_probe(self, resolver: rpb_grpc.ResolverServiceStub) -> None:
        """The reported shape (1 MiB of claims about the target, 1,024 empty hypotheses)."""
        claims = [claim(source_ref=str(i)) for i in range(25_000)]
        request = hypotheses_request(claims, 1_024)
        assert request.ByteSize() < 1 << 20
        error = await refusal(resolver.ResolveHypotheses(request, timeout=TIMEOUT))
        assert_refused(error, Reason.REQUEST_TOO_EXPENSIVE, "hypotheses")

    @pytest.mark.parametrize(
        "evidence",
        [
            pytest.param([claim("v" * (1 << 20))], id="a 1 MiB value"),
            pytest.param([claim(subject="s" * (1 << 20))], id="a 1 MiB subject"),
        ],
    )
    async def test_large_values_repeated_per_hypothesis(
        self, resolver: rpb_grpc.ResolverServiceStub, evidence: list[claim_pb2.Claim]
    ) -> None:
        """A large value or subject repeated in 1,024 resolutions is RESPONSE_TOO_LARGE."""
        subject = evidence[0].subject
        request = hypotheses_request(evidence, 1_024)
        request.subject = subject
        error = await refusal(resolver.ResolveHypotheses(request, timeout=TIMEOUT))
        assert_refused(error, Reason.RESPONSE_TOO_LARGE, "hypotheses")
        assert int(error.metadata["limit_bytes"]) <= RESPONSE_RATIO * request.ByteSize()

    async def test_just_under_the_cap_stays_under_a_hundred_times(
        self, resolver: rpb_grpc.ResolverServiceStub
    ) -> None:
        """The most hypotheses answered over a 16 KiB value: the response is at most 100x
        the request, and one hypothesis more is refused."""
        evidence = [claim("v" * 16_384)]

        async def answered(count: int) -> bytes | None:
            request = hypotheses_request(evidence, count)
            call = resolver.ResolveHypotheses(request, timeout=TIMEOUT)
            try:
                response = await call
            except grpc.aio.AioRpcError as error:
                assert_refused(decode_rpc_error(error), Reason.RESPONSE_TOO_LARGE, "hypotheses")
                return None
            assert len(response.hypotheses) == count
            return bytes(response.SerializeToString())

        low, high = 1, 256  # answered at `low`, refused at `high`
        assert await answered(low) is not None
        assert await answered(high) is None
        while high - low > 1:
            middle = (low + high) // 2
            if await answered(middle) is None:
                high = middle
            else:
                low = middle
        largest = hypotheses_request(evidence, low).ByteSize()
        response = await answered(low)
        assert response is not None
        assert largest * (RESPONSE_RATIO - 10) < len(response) <= largest * RESPONSE_RATIO


class TestReconcile:
    async def test_proposals_times_claims_over_the_cap(
        self, resolver: rpb_grpc.ResolverServiceStub
    ) -> None:
        """Proposals about a semantic with many claims, past the cap: REQUEST_TOO_EXPENSIVE."""
        request = rpb.ReconcileRequest()
        request.evidence.claims.extend(claim(source_ref=str(i)) for i in range(3_000))
        request.proposals.extend(claim("w", source_ref=f"p{i}") for i in range(700))
        error = await refusal(resolver.Reconcile(request, timeout=TIMEOUT))
        assert_refused(error, Reason.REQUEST_TOO_EXPENSIVE, "proposals")
        assert error.metadata["requested"] == str(700 * 3_001)

    async def test_a_large_value_judged_per_proposal(
        self, resolver: rpb_grpc.ResolverServiceStub
    ) -> None:
        """A 64 KiB value shown before and after each of 200 proposals: RESPONSE_TOO_LARGE."""
        request = rpb.ReconcileRequest()
        request.evidence.claims.append(claim("v" * 65_536))
        request.proposals.extend(claim("w", source_ref=f"p{i}") for i in range(200))
        error = await refusal(resolver.Reconcile(request, timeout=TIMEOUT))
        assert_refused(error, Reason.RESPONSE_TOO_LARGE, "proposals")


class TestMessageLimit:
    async def test_a_response_over_the_message_limit_is_refused_by_the_resolver(self) -> None:
        """ResolveEvidence answers with about twice its request: with a 1 MiB message limit,
        0.6 MiB of evidence is RESPONSE_TOO_LARGE from the resolver, not grpc's own error."""
        limit = 1 << 20
        spec = await resolver_spec(ServeOptions(port=0, max_message_bytes=limit))
        request = rpb.ResolveEvidenceRequest()
        request.evidence.claims.extend(
            claim(subject=f"s{i}", id=f"c{i}", source_ref=str(i)) for i in range(12_000)
        )
        assert request.ByteSize() < limit
        async with (
            serving([spec], ServerConfig(max_message_bytes=limit)) as running,
            grpc.aio.insecure_channel(running[0].address, options=ROOMY) as channel,
        ):
            stub = rpb_grpc.ResolverServiceStub(channel)
            error = await refusal(stub.ResolveEvidence(request, timeout=TIMEOUT))
        assert_refused(error, Reason.RESPONSE_TOO_LARGE, "evidence.claims")
        assert error.metadata["limit_bytes"] == str(limit)


@pytest.fixture
async def planner() -> AsyncIterator[Callable[[ppb.PlanEvidenceRequest], Awaitable[Any]]]:
    """A real planner and resolver at the default limits, and a client accepting anything."""
    async with serving([await resolver_spec(ServeOptions(port=0))]) as resolvers:
        options = ServeOptions(port=0, resolver_target=resolvers[0].address)
        async with (
            serving([await planner_spec(options)]) as planners,
            grpc.aio.insecure_channel(planners[0].address, options=ROOMY) as channel,
        ):
            stub = ppb_grpc.PlannerServiceStub(channel)
            yield lambda request: stub.PlanEvidence(request, timeout=TIMEOUT)


class TestPlanEvidence:
    async def test_a_four_mib_value_is_too_expensive_not_internal(
        self, planner: Callable[[ppb.PlanEvidenceRequest], Awaitable[Any]]
    ) -> None:
        """The reported probe: the plan would repeat the value per outcome past the resolver's
        caps; the caller hears REQUEST_TOO_EXPENSIVE on `evidence`, not INTERNAL."""
        request = ppb.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
        request.evidence.claims.append(claim("v" * (4 << 20)))
        error = await refusal(planner(request))
        assert_refused(error, Reason.REQUEST_TOO_EXPENSIVE, "evidence")

    async def test_a_large_value_under_the_caps_is_planned(
        self, planner: Callable[[ppb.PlanEvidenceRequest], Awaitable[Any]]
    ) -> None:
        """A 256 KiB value is planned over, and the plan stays under 100x its request."""
        request = ppb.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
        request.evidence.claims.append(claim("v" * (256 << 10)))
        response = await planner(request)
        assert response.plan.candidates
        assert response.ByteSize() <= RESPONSE_RATIO * request.ByteSize()

    async def test_the_planners_own_message_limit(self) -> None:
        """A planner whose message limit is below what the hypotheses call returns refuses
        with REQUEST_TOO_EXPENSIVE (grpc's own limit on its channel, translated)."""
        request = ppb.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
        request.evidence.claims.append(claim("v" * (200 << 10)))
        limit = 1 << 20
        async with serving([await resolver_spec(ServeOptions(port=0))]) as resolvers:
            options = ServeOptions(
                port=0, resolver_target=resolvers[0].address, max_message_bytes=limit
            )
            async with (
                serving(
                    [await planner_spec(options)], ServerConfig(max_message_bytes=limit)
                ) as planners,
                grpc.aio.insecure_channel(planners[0].address, options=ROOMY) as channel,
            ):
                stub = ppb_grpc.PlannerServiceStub(channel)
                error = await refusal(stub.PlanEvidence(request, timeout=TIMEOUT))
        assert_refused(error, Reason.REQUEST_TOO_EXPENSIVE, "evidence")
