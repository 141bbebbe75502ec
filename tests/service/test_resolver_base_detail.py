"""ResolveHypotheses' ``base_detail`` through a real server: the base at its own detail.

The planner's one-call plan asks for the base in full (it echoes it) and the hypotheses in
summary. The oracles: the base at FULL is ResolveSemantic's resolution byte for byte, and
a SUMMARY resolution is ``summary_of`` its FULL one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.services.planner.adapters.resolver_client import summary_of
from assay.services.registry import ServeOptions
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.service import build_spec
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc
from tests.service.test_resolver_detail_rpcs import (
    PREDICATES,
    bad_request_fields,
    generated,
    reason_of,
)

FULL = pb.RESOLUTION_DETAIL_FULL
SUMMARY = pb.RESOLUTION_DETAIL_SUMMARY
UNSPECIFIED = pb.RESOLUTION_DETAIL_UNSPECIFIED


def hypotheses_request(seed: int, subject: str, predicate: str) -> pb.ResolveHypothesesRequest:
    """Generated evidence and three hypotheses: a new value, an old one, a supersession."""
    request = pb.ResolveHypothesesRequest(
        evidence=generated(seed), subject=subject, predicate=predicate
    )
    if seed % 2:
        request.as_of.seconds = 1500
        request.stale_after.seconds = 600
    for i, value in enumerate(("key", "fresh-value")):
        claim = request.hypotheses.add(label=f"h{i}").claims.add(
            subject=subject, predicate=predicate, source="vcs_state", confidence=0.9
        )
        claim.value.string_value = value
    targets = [c.id for c in request.evidence.claims if c.id]
    if targets:
        claim = request.hypotheses.add(label="supersede").claims.add(
            id="h-new", subject=subject, predicate=predicate, source="test_result", confidence=0.9
        )
        claim.value.string_value = "none"
        claim.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
        claim.relation.target_claim_id = targets[0]
    return request


def wire(message: object) -> bytes:
    data: bytes = message.SerializeToString(deterministic=True)  # type: ignore[attr-defined]
    return data


@pytest.fixture
async def stub() -> AsyncIterator[pb_grpc.ResolverServiceStub]:
    async with (
        serving([await build_spec(ServeOptions(port=0))]) as running,
        grpc.aio.insecure_channel(
            running[0].address, options=ServerConfig().channel_options()
        ) as channel,
    ):
        yield pb_grpc.ResolverServiceStub(channel)


class TestBaseDetail:
    async def test_full_base_with_summary_hypotheses(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """base_detail FULL + detail SUMMARY: the base is ResolveSemantic's FULL resolution
        byte for byte, each hypothesis ``summary_of`` its FULL one; and the reverse pair."""
        compared = 0
        for seed in range(20):
            for subject in ("s0", "s1"):
                request = hypotheses_request(seed, subject, PREDICATES[seed % 2])
                semantic = pb.ResolveSemanticRequest(
                    evidence=request.evidence, subject=request.subject, predicate=request.predicate
                )
                if request.HasField("as_of"):
                    semantic.as_of.CopyFrom(request.as_of)
                    semantic.stale_after.CopyFrom(request.stale_after)
                direct = (await stub.ResolveSemantic(semantic, timeout=10)).resolution
                request.detail = FULL
                full = await stub.ResolveHypotheses(request, timeout=10)
                request.detail, request.base_detail = SUMMARY, FULL
                mixed = await stub.ResolveHypotheses(request, timeout=10)
                assert wire(mixed.base) == wire(direct) == wire(full.base)
                assert [wire(h) for h in mixed.hypotheses] == [
                    wire(h.__class__(label=h.label, resolution=summary_of(h.resolution)))
                    for h in full.hypotheses
                ]
                request.detail, request.base_detail = FULL, SUMMARY
                reverse = await stub.ResolveHypotheses(request, timeout=10)
                assert wire(reverse.base) == wire(summary_of(direct))
                assert [wire(h) for h in reverse.hypotheses] == [wire(h) for h in full.hypotheses]
                compared += sum(len(v.claims) for v in direct.values)
        assert compared  # the FULL base had per-claim detail to lose

    async def test_unspecified_base_detail_follows_detail(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        request = hypotheses_request(4, "s0", PREDICATES[0])
        for detail in (FULL, SUMMARY):
            request.detail = detail
            request.base_detail = UNSPECIFIED
            default = await stub.ResolveHypotheses(request, timeout=10)
            request.base_detail = detail
            explicit = await stub.ResolveHypotheses(request, timeout=10)
            assert wire(default) == wire(explicit)
        assert wire(default.base) == wire(summary_of(default.base))

    async def test_unknown_base_detail_is_invalid_field(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """An unknown number is INVALID_ARGUMENT naming `base_detail`, with the request's
        other violations (here an unknown `detail` and a bad claim) in the same answer."""
        request = hypotheses_request(3, "s0", PREDICATES[0])
        request.base_detail = 7  # type: ignore[assignment]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ResolveHypotheses(request, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason_of(caught.value) == "ERROR_REASON_INVALID_FIELD"
        assert bad_request_fields(caught.value) == ["base_detail"]
        request.detail = 9  # type: ignore[assignment]
        request.evidence.claims[0].source = "oracle"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ResolveHypotheses(request, timeout=10)
        fields = bad_request_fields(caught.value)
        assert {"detail", "base_detail", "evidence.claims[0].source"} <= set(fields)


def one_target(claims: int) -> pb.ResolveHypothesesRequest:
    """Many claims about one target, each its own group: a FULL base much larger than a
    SUMMARY one."""
    request = pb.ResolveHypothesesRequest(subject="s", predicate="p", detail=SUMMARY)
    for i in range(claims):
        claim = request.evidence.claims.add(
            id=f"c{i}", subject="s", predicate="p", source="test_result", source_ref=f"r{i}"
        )
        claim.confidence = 0.6
        claim.value.string_value = "a" if i % 3 else "b"
    request.hypotheses.add(label="h").claims.add(
        subject="s", predicate="p", source="vcs_state", confidence=0.9
    ).value.string_value = "a"
    return request


class TestBaseDetailBudget:
    async def test_the_full_base_counts_against_the_response_budget(self) -> None:
        """With the message limit between the SUMMARY and the FULL response's size (the
        request well under it), base_detail FULL is RESPONSE_TOO_LARGE naming `hypotheses`;
        SUMMARY fits."""
        request = one_target(3000)
        local = ResolverServicer(Policy())
        summary_size = (await local.ResolveHypotheses(request, None)).ByteSize()  # type: ignore[union-attr]
        request.base_detail = FULL
        full_size = (await local.ResolveHypotheses(request, None)).ByteSize()  # type: ignore[union-attr]
        limit = (max(summary_size, request.ByteSize()) + full_size) // 2
        assert request.ByteSize() < limit < full_size
        options = ServeOptions(port=0, max_message_bytes=limit)
        config = ServerConfig(max_message_bytes=limit)
        async with (
            serving([await build_spec(options)], config) as running,
            grpc.aio.insecure_channel(
                running[0].address, options=config.channel_options()
            ) as channel,
        ):
            resolver = pb_grpc.ResolverServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await resolver.ResolveHypotheses(request, timeout=30)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert reason_of(caught.value) == "ERROR_REASON_RESPONSE_TOO_LARGE"
            assert bad_request_fields(caught.value) == ["hypotheses"]
            request.base_detail = SUMMARY
            answer = await resolver.ResolveHypotheses(request, timeout=30)
            assert len(answer.hypotheses) == 1
