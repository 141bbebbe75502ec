"""ResolveSemantic and ResolveEvidence at SUMMARY detail, through a real server and client.

SUMMARY must be FULL with exactly the contract's per-claim fields cleared (each claim
weight, group, counted ref, excluded claim body and warning; for ResolveEvidence also
the response's top-level warnings) and nothing else: the oracle is the planner's own
``summary_of``, which already pins that for ResolveHypotheses.
"""

from __future__ import annotations

import random
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from assay.client.resolver import AsyncResolverClient
from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.services.planner.adapters.resolver_client import summary_of
from assay.services.registry import ServeOptions
from assay.services.resolver.service import build_spec
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc

FULL = pb.RESOLUTION_DETAIL_FULL
SUMMARY = pb.RESOLUTION_DETAIL_SUMMARY
SOURCES = ("test_result", "api_spec", "documentation", "ci_status", "generated_mock")
PREDICATES = ("idempotency.mode", "http.method")
VALUES = ("key", "none", 1.5, True)


def generated(seed: int) -> claim_pb2.Evidence:
    """Evidence with every per-claim feature: declared and defaulted groups, capped
    reliabilities, reviewed-out claims, supersession (some dangling), observe times."""
    rng = random.Random(seed)
    evidence = claim_pb2.Evidence()
    size = rng.randrange(1, 60)
    for i in range(size):
        claim = evidence.claims.add(
            subject=f"s{rng.randrange(3)}",
            predicate=rng.choice(PREDICATES),
            source=rng.choice(SOURCES),
            source_ref=rng.choice(("", "r1", "r2")),
            confidence=rng.random(),
        )
        if rng.random() < 0.7:
            claim.id = f"c{i}"
        value = rng.choice(VALUES)
        if isinstance(value, str):
            claim.value.string_value = value
        elif isinstance(value, bool):
            claim.value.bool_value = value
        else:
            claim.value.number_value = value
        if rng.random() < 0.3:
            claim.reliability = rng.random()
        if rng.random() < 0.3:
            claim.correlation_group = rng.choice(("g1", "g2"))
        if rng.random() < 0.5:
            claim.observe_time.seconds = rng.randrange(2000)
        if rng.random() < 0.1:
            claim.review_status = claim_pb2.REVIEW_STATUS_REJECTED
        elif claim.id and rng.random() < 0.15:
            claim.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
            claim.relation.target_claim_id = f"c{rng.randrange(size + 2)}"
    return evidence


def stale(request: pb.ResolveEvidenceRequest | pb.ResolveSemanticRequest) -> None:
    request.as_of.seconds = 1500
    request.stale_after.seconds = 600


@pytest.fixture
async def address() -> AsyncIterator[str]:
    async with serving([await build_spec(ServeOptions(port=0))]) as running:
        yield running[0].address


@pytest.fixture
async def stub(address: str) -> AsyncIterator[pb_grpc.ResolverServiceStub]:
    options = ServerConfig().channel_options()
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        yield pb_grpc.ResolverServiceStub(channel)


class TestSummaryOverTheWire:
    async def test_evidence_summary_is_full_minus_the_documented_fields(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """For 60 generated evidences: every resolution at SUMMARY is ``summary_of`` its FULL
        one, the top-level warnings are empty, and everything else is identical."""
        warned = excluded = 0
        for seed in range(60):
            request = pb.ResolveEvidenceRequest(evidence=generated(seed))
            if seed % 2:
                stale(request)
            full = await stub.ResolveEvidence(request, timeout=10)
            request.detail = SUMMARY
            summary = await stub.ResolveEvidence(request, timeout=10)
            request.detail = pb.RESOLUTION_DETAIL_UNSPECIFIED
            default = await stub.ResolveEvidence(request, timeout=10)
            assert default == full
            assert not summary.warnings
            expected = pb.ResolveEvidenceResponse()
            expected.CopyFrom(full)
            expected.ClearField("warnings")
            for i, resolution in enumerate(full.resolutions):
                expected.resolutions[i].CopyFrom(summary_of(resolution))
            assert summary.SerializeToString(deterministic=True) == expected.SerializeToString(
                deterministic=True
            )
            warned += len(full.warnings)
            excluded += sum(len(r.excluded) for r in full.resolutions)
        assert warned  # the comparison left something out
        assert excluded

    async def test_semantic_summary_is_full_minus_the_documented_fields(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """The same for ResolveSemantic, over each semantic of 30 generated evidences."""
        for seed in range(30):
            evidence = generated(seed)
            for subject in ("s0", "s1"):
                for predicate in PREDICATES:
                    request = pb.ResolveSemanticRequest(
                        evidence=evidence, subject=subject, predicate=predicate, detail=FULL
                    )
                    if seed % 2:
                        stale(request)
                    full = await stub.ResolveSemantic(request, timeout=10)
                    request.detail = SUMMARY
                    summary = await stub.ResolveSemantic(request, timeout=10)
                    assert summary.resolution.SerializeToString(deterministic=True) == summary_of(
                        full.resolution
                    ).SerializeToString(deterministic=True)

    async def test_summary_is_smaller(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """The point of SUMMARY: no per-claim cost in the response."""
        evidence = claim_pb2.Evidence()
        for i in range(2000):
            claim = evidence.claims.add(
                id=f"c{i}",
                subject="s",
                predicate="http.method",
                source="test_result",
                source_ref=f"r{i}",
                confidence=0.6,
            )
            claim.value.string_value = "POST" if i % 3 else "PUT"
        request = pb.ResolveEvidenceRequest(evidence=evidence)
        full = await stub.ResolveEvidence(request, timeout=30)
        request.detail = SUMMARY
        summary = await stub.ResolveEvidence(request, timeout=30)
        assert summary.ByteSize() * 1000 < full.ByteSize()


def bad_request_fields(error: grpc.aio.AioRpcError) -> list[str]:
    """The BadRequest field paths in the error's google.rpc.Status."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                assert isinstance(detail, any_pb2.Any)
                if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    return [v.field for v in bad.field_violations]
    return []


def reason_of(error: grpc.aio.AioRpcError) -> str:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    return str(info.reason)
    return ""


class TestUnknownDetail:
    @pytest.mark.parametrize("method", ["ResolveSemantic", "ResolveEvidence"])
    async def test_unknown_detail_is_invalid_field(
        self, stub: pb_grpc.ResolverServiceStub, method: str
    ) -> None:
        """An unknown ResolutionDetail number is INVALID_ARGUMENT naming `detail`, reported
        with the request's other violations."""
        evidence = generated(3)
        evidence.claims[0].source = "oracle"
        request: pb.ResolveSemanticRequest | pb.ResolveEvidenceRequest
        if method == "ResolveSemantic":
            request = pb.ResolveSemanticRequest(
                evidence=evidence, subject="s0", predicate="http.method"
            )
        else:
            request = pb.ResolveEvidenceRequest(evidence=evidence)
        request.detail = 7  # type: ignore[assignment]
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await getattr(stub, method)(request, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason_of(caught.value) == "ERROR_REASON_INVALID_FIELD"
        assert bad_request_fields(caught.value) == ["detail", "evidence.claims[0].source"]


class TestClient:
    async def test_detail_by_name(self, address: str) -> None:
        """The async client's ``detail="summary"`` reaches the server; "full" is the default."""
        evidence = generated(5)
        async with AsyncResolverClient(address, timeout=10) as client:
            full = await client.resolve_all(evidence)
            summary = await client.resolve_all(evidence, detail="summary")
            one = await client.resolve(evidence, "s0", "http.method", detail="summary")
            request = pb.ResolveSemanticRequest(
                evidence=evidence, subject="s1", predicate="http.method"
            )
            semantic = await client.resolve_semantic(request, detail="summary")
        assert any(v.claims for r in full.resolutions for v in r.values)
        assert not any(v.claims for r in summary.resolutions for v in r.values)
        assert [r.leader for r in summary.resolutions] == [r.leader for r in full.resolutions]
        assert one.HasField("leader")
        assert not any(v.claims for v in one.values)
        assert request.detail == SUMMARY
        assert not any(v.claims for v in semantic.resolution.values)


GRPCURL = Path(sys.executable).parent / "grpcurl"


class TestReflection:
    @pytest.mark.skipif(
        not GRPCURL.exists() and not shutil.which("grpcurl"), reason="grpcurl is not installed"
    )
    async def test_detail_is_described(self, address: str) -> None:
        """grpcurl sees `detail` on both requests through reflection, without proto files."""
        import asyncio

        tool = str(GRPCURL) if GRPCURL.exists() else str(shutil.which("grpcurl"))
        for symbol in ("assay.v1.ResolveSemanticRequest", "assay.v1.ResolveEvidenceRequest"):
            proc = await asyncio.create_subprocess_exec(
                tool,
                "-plaintext",
                address,
                "describe",
                symbol,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), 20)
            assert proc.returncode == 0, err.decode()
            assert ".assay.v1.ResolutionDetail detail" in out.decode()
