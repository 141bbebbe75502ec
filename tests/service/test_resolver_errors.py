"""Every resolver error reason over the wire: code, ErrorInfo reason and BadRequest path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest

from assay.errors import ERROR_DOMAIN, Reason
from assay.runtime.server import serving
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.services.registry import ServeOptions
from assay.services.resolver.service import build_spec
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc

SERVICE = "assay.v1.ResolverService"


def claim(**fields: Any) -> claim_pb2.Claim:
    base: dict[str, Any] = {
        "subject": "s",
        "predicate": "p",
        "source": "test_result",
        "confidence": 0.5,
    }
    base.update(fields)
    out = claim_pb2.Claim(**base)
    out.value.string_value = "v"
    return out


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    spec = await build_spec(ServeOptions(port=0))
    async with serving([spec]) as running, grpc.aio.insecure_channel(running[0].address) as chan:
        yield chan


async def failure(call: Awaitable[Any]) -> DecodedError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return decode_rpc_error(caught.value)


def evidence(*claims: claim_pb2.Claim) -> claim_pb2.Evidence:
    return claim_pb2.Evidence(claims=claims)


CASES: list[tuple[str, claim_pb2.Claim, Reason, str]] = [
    ("unknown source", claim(source="oracle"), Reason.UNKNOWN_SOURCE, "source"),
    ("NaN confidence", claim(confidence=float("nan")), Reason.INVALID_CLAIM, "confidence"),
    (
        "relation without id",
        claim(relation={"kind": 3, "target_claim_id": "x"}),
        Reason.RELATION_WITHOUT_ID,
        "id",
    ),
    ("empty subject", claim(subject=""), Reason.INVALID_CLAIM, "subject"),
]


class TestClaimErrors:
    @pytest.mark.parametrize(
        ("bad", "reason", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
    )
    async def test_resolve_evidence(
        self, channel: grpc.aio.Channel, bad: claim_pb2.Claim, reason: Reason, path: str
    ) -> None:
        """INVALID_ARGUMENT, the reason, and the field path of the bad claim."""
        stub = pb_grpc.ResolverServiceStub(channel)
        error = await failure(
            stub.ResolveEvidence(
                pb.ResolveEvidenceRequest(evidence=evidence(claim(), bad)), timeout=10
            )
        )
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.reason, error.domain) == (reason, ERROR_DOMAIN)
        assert [v.field for v in error.violations] == [f"evidence.claims[1].{path}"]

    async def test_duplicate_claim_id(self, channel: grpc.aio.Channel) -> None:
        """DUPLICATE_CLAIM_ID names the second use."""
        stub = pb_grpc.ResolverServiceStub(channel)
        request = pb.ResolveSemanticRequest(
            evidence=evidence(claim(id="x"), claim(id="x")), subject="s", predicate="p"
        )
        error = await failure(stub.ResolveSemantic(request, timeout=10))
        assert error.reason == Reason.DUPLICATE_CLAIM_ID
        assert [v.field for v in error.violations] == ["evidence.claims[1].id"]

    async def test_hypothesis_path(self, channel: grpc.aio.Channel) -> None:
        """Hypothesis claims are named hypotheses[i].claims[j]."""
        stub = pb_grpc.ResolverServiceStub(channel)
        request = pb.ResolveHypothesesRequest(
            evidence=evidence(claim()), subject="s", predicate="p"
        )
        request.hypotheses.add(claims=[claim()])
        request.hypotheses.add(claims=[claim(source="oracle")])
        error = await failure(stub.ResolveHypotheses(request, timeout=10))
        assert error.reason == Reason.UNKNOWN_SOURCE
        assert [v.field for v in error.violations] == ["hypotheses[1].claims[0].source"]

    async def test_proposal_path(self, channel: grpc.aio.Channel) -> None:
        """Proposals are named proposals[i]."""
        stub = pb_grpc.ResolverServiceStub(channel)
        request = pb.ReconcileRequest(
            evidence=evidence(claim()),
            proposals=[claim(), claim(), claim(id="p", relation={"kind": 3})],
        )
        error = await failure(stub.Reconcile(request, timeout=10))
        assert error.reason == Reason.INVALID_CLAIM
        assert [v.field for v in error.violations] == ["proposals[2].relation.target_claim_id"]


class TestFieldErrors:
    async def test_missing_subject(self, channel: grpc.aio.Channel) -> None:
        """ResolveSemantic without a subject is INVALID_FIELD at `subject`."""
        stub = pb_grpc.ResolverServiceStub(channel)
        error = await failure(
            stub.ResolveSemantic(pb.ResolveSemanticRequest(predicate="p"), timeout=10)
        )
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == Reason.INVALID_FIELD
        assert [v.field for v in error.violations] == ["subject"]

    async def test_as_of_without_stale_after(self, channel: grpc.aio.Channel) -> None:
        """as_of alone is INVALID_FIELD at `stale_after`."""
        stub = pb_grpc.ResolverServiceStub(channel)
        request = pb.ResolveEvidenceRequest()
        request.as_of.seconds = 5
        error = await failure(stub.ResolveEvidence(request, timeout=10))
        assert error.reason == Reason.INVALID_FIELD
        assert [v.field for v in error.violations] == ["stale_after"]

    async def test_unknown_detail(self, channel: grpc.aio.Channel) -> None:
        """ResolveHypotheses with an unknown ResolutionDetail is INVALID_FIELD at `detail`."""
        stub = pb_grpc.ResolverServiceStub(channel)
        request = pb.ResolveHypothesesRequest(
            evidence=evidence(claim()), subject="s", predicate="p"
        )
        request.detail = pb.ResolutionDetail.ValueType(5)
        error = await failure(stub.ResolveHypotheses(request, timeout=10))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == Reason.INVALID_FIELD
        assert [v.field for v in error.violations] == ["detail"]

    async def test_reconcile_without_proposals(self, channel: grpc.aio.Channel) -> None:
        """Reconcile needs at least one proposal."""
        stub = pb_grpc.ResolverServiceStub(channel)
        error = await failure(stub.Reconcile(pb.ReconcileRequest(), timeout=10))
        assert error.reason == Reason.INVALID_FIELD
        assert [v.field for v in error.violations] == ["proposals"]


class TestMalformedBytes:
    @pytest.mark.parametrize(
        "method",
        [
            "ResolveSemantic",
            "ResolveEvidence",
            "ResolveHypotheses",
            "Reconcile",
            "GetResolverPolicy",
        ],
    )
    async def test_garbage_is_invalid_argument(
        self, channel: grpc.aio.Channel, method: str
    ) -> None:
        """Bytes that are not the request message: INVALID_ARGUMENT, MALFORMED_REQUEST."""
        call: Callable[..., Awaitable[Any]] = channel.unary_unary(f"/{SERVICE}/{method}")
        error = await failure(call(b"\xff\xff\xff\xff not a protobuf", timeout=10))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == Reason.MALFORMED_REQUEST
