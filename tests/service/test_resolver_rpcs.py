"""Every ResolverService RPC through a real grpc.aio server and a real client channel."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from assay.reliability_table import TableError
from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.services.registry import SERVICES, ServeOptions
from assay.services.resolver.domain.policy import TABLE_ENV
from assay.services.resolver.service import build_spec
from assay.v1 import claim_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc

SERVICE = "assay.v1.ResolverService"
SUBJECT = "api:payments.create"


def claim(value: str, **fields: Any) -> claim_pb2.Claim:
    out = claim_pb2.Claim(subject=SUBJECT, predicate="idempotency.mode", **fields)
    out.value.string_value = value
    return out


EVIDENCE = claim_pb2.Evidence(
    claims=[
        claim("key", id="c1", source="test_result", source_ref="t", confidence=0.9),
        claim("none", id="c2", source="api_spec", source_ref="s", confidence=0.9),
        claim("old", id="c3", source="documentation", confidence=0.9),
        claim(
            "new",
            id="c4",
            source="vcs_state",
            confidence=0.1,
            relation={"kind": 3, "target_claim_id": "c3"},
        ),
    ]
)


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    async with serving([await build_spec(ServeOptions(port=0))]) as running:
        options = ServerConfig().channel_options()
        async with grpc.aio.insecure_channel(running[0].address, options=options) as chan:
            yield chan


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> pb_grpc.ResolverServiceStub:
    return pb_grpc.ResolverServiceStub(channel)


class TestRpcs:
    async def test_resolve_semantic(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """A safety conflict comes back CONFLICTED, requiring review, fully explained."""
        response = await stub.ResolveSemantic(
            pb.ResolveSemanticRequest(
                evidence=EVIDENCE, subject=SUBJECT, predicate="idempotency.mode"
            ),
            timeout=10,
        )
        result = response.resolution
        assert result.status == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        assert result.requires_review
        assert [v.value_key for v in result.values] == ['"key"', '"none"', '"new"']
        assert [e.claim_ref for e in result.excluded] == ["c3"]
        assert result.values[0].claims[0].effective_weight == pytest.approx(0.9 * 0.85)
        assert result.values[1].support == pytest.approx(0.9 * 0.8)

    async def test_resolve_evidence(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """One resolution per semantic, ordered; safety conflicts listed; coverage reported."""
        evidence = claim_pb2.Evidence()
        evidence.CopyFrom(EVIDENCE)
        other = evidence.claims.add(subject="a:first", predicate="http.method", source="ci_status")
        other.value.string_value = "POST"
        other.confidence = 0.5
        response = await stub.ResolveEvidence(
            pb.ResolveEvidenceRequest(evidence=evidence), timeout=10
        )
        assert [(r.subject, r.predicate) for r in response.resolutions] == [
            ("a:first", "http.method"),
            (SUBJECT, "idempotency.mode"),
        ]
        assert [k.predicate for k in response.conflicted_safety_predicates] == ["idempotency.mode"]
        assert response.coverage_confidence == pytest.approx(0.5 * 0.85)

    async def test_resolve_hypotheses(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """The base and one resolution per hypothesis, in order, labels echoed."""
        request = pb.ResolveHypothesesRequest(
            evidence=EVIDENCE, subject=SUBJECT, predicate="idempotency.mode"
        )
        request.hypotheses.add(
            label="review says key", claims=[claim("key", source="human_review", confidence=1.0)]
        )
        request.hypotheses.add(label="nothing")
        response = await stub.ResolveHypotheses(request, timeout=10)
        assert response.base.status == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        assert [h.label for h in response.hypotheses] == ["review says key", "nothing"]
        decided = response.hypotheses[0].resolution
        assert decided.status == resolution_pb2.RESOLUTION_STATUS_RESOLVED
        assert decided.leader.value_key == '"key"'
        assert response.hypotheses[1].resolution == response.base

    async def test_resolve_hypotheses_summary(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """SUMMARY over the wire: the same judgement as FULL without the per-claim detail."""
        request = pb.ResolveHypothesesRequest(
            evidence=EVIDENCE, subject=SUBJECT, predicate="idempotency.mode"
        )
        request.hypotheses.add(
            label="review says key", claims=[claim("key", source="human_review", confidence=1.0)]
        )
        full = await stub.ResolveHypotheses(request, timeout=10)
        request.detail = pb.RESOLUTION_DETAIL_SUMMARY
        summary = await stub.ResolveHypotheses(request, timeout=10)
        for whole, short in (
            (full.base, summary.base),
            (full.hypotheses[0].resolution, summary.hypotheses[0].resolution),
        ):
            assert short.status == whole.status
            assert short.leader == whole.leader
            assert [(v.value_key, v.support) for v in short.values] == [
                (v.value_key, v.support) for v in whole.values
            ]
            assert list(short.rationale) == list(whole.rationale)
            assert all(v.claims for v in whole.values)
            assert not any(v.claims or v.groups or v.counted_claim_refs for v in short.values)
            assert [e.claim_ref for e in short.excluded] == ["c3"]
            assert whole.excluded[0].HasField("claim")
            assert not short.excluded[0].HasField("claim")
        assert summary.ByteSize() < full.ByteSize()

    async def test_empty_object_and_list_values(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """Empty objects and lists come back as themselves, top level and nested, never null."""
        cases: list[Any] = [{}, [], {"limits": {}}, {"tags": []}, [{}, []]]
        evidence = claim_pb2.Evidence()
        for i, data in enumerate(cases):
            item = evidence.claims.add(
                subject=f"s{i}", predicate="p", source="test_result", confidence=0.9
            )
            json_format.ParseDict(data, item.value)
        response = await stub.ResolveEvidence(
            pb.ResolveEvidenceRequest(evidence=evidence), timeout=10
        )
        assert len(response.resolutions) == len(cases)
        for data, resolution in zip(cases, response.resolutions, strict=True):
            assert resolution.leader.value_key == json.dumps(data, separators=(",", ":"))
            assert json_format.MessageToDict(resolution.leader.value) == data
            assert json_format.MessageToDict(resolution.values[0].value) == data
            assert resolution.values[0].value.WhichOneof("kind") == (
                "struct_value" if isinstance(data, dict) else "list_value"
            )

    async def test_reconcile(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """A proposal on a conflicted safety predicate is held for review."""
        request = pb.ReconcileRequest(
            evidence=EVIDENCE, proposals=[claim("key", id="p", source="ci_status", confidence=0.4)]
        )
        (outcome,) = (await stub.Reconcile(request, timeout=10)).outcomes
        assert outcome.claim_ref == "p"
        assert outcome.decision == pb.RECONCILE_DECISION_REQUIRES_REVIEW
        assert outcome.reason == pb.RECONCILE_REASON_SAFETY_CONFLICTED_BEFORE

    async def test_get_resolver_policy(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """The table (sorted), margin, tolerance, safety predicates and origin."""
        response = await stub.GetResolverPolicy(pb.GetResolverPolicyRequest(), timeout=10)
        table = [(r.source, r.reliability) for r in response.reliability_table]
        assert table == sorted(table)
        assert dict(table)["generated_mock"] == 0.3
        assert dict(table)["human_review"] == 1.0
        assert (response.conflict_margin, response.margin_tolerance) == (0.2, 1e-9)
        assert list(response.safety_sensitive_predicates) == sorted(
            response.safety_sensitive_predicates
        )
        assert "idempotency.mode" in response.safety_sensitive_predicates
        assert response.reliability_table_origin == "builtin"

    async def test_deterministic_bytes(self, channel: grpc.aio.Channel) -> None:
        """The same request gives byte-identical responses."""
        raw = pb.ResolveEvidenceRequest(evidence=EVIDENCE).SerializeToString()
        call = channel.unary_unary(f"/{SERVICE}/ResolveEvidence")
        first = await call(raw, timeout=10)
        second = await call(raw, timeout=10)
        assert isinstance(first, bytes)
        assert first == second
        assert pb.ResolveEvidenceResponse.FromString(first).resolutions

    async def test_request_id_is_echoed(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """x-request-id from the caller comes back in the trailing metadata."""
        call = stub.GetResolverPolicy(
            pb.GetResolverPolicyRequest(), metadata=(("x-request-id", "req-42"),), timeout=10
        )
        await call
        assert ("x-request-id", "req-42") in tuple(await call.trailing_metadata())

    async def test_large_request_fits(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """100,000 claims fit the configured message size, both ways."""
        evidence = claim_pb2.Evidence()
        for i in range(100_000):
            item = evidence.claims.add(
                id=f"claim-{i:06d}",
                subject=f"api:service-{i // 100:04d}.operation",
                predicate=f"predicate.{i % 5}",
                source="test_result",
                source_ref=f"runs/{i % 7}",
                confidence=0.75,
            )
            item.value.string_value = "a" if i % 3 else "b"
        request = pb.ResolveEvidenceRequest(evidence=evidence)
        assert request.ByteSize() > 4 * 1024 * 1024  # above grpc's default limit
        response = await stub.ResolveEvidence(request, timeout=60)
        assert len(response.resolutions) == 5000
        assert sum(len(c.claims) for r in response.resolutions for c in r.values) == 100_000


class TestServing:
    async def test_health_serving(self, channel: grpc.aio.Channel) -> None:
        """Health reports SERVING for the server and for the service."""
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

    async def test_reflection_lists_the_service(self, channel: grpc.aio.Channel) -> None:
        """Server reflection names the resolver, so grpcurl needs no proto files."""
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        async for reply in stub.ServerReflectionInfo(iter([request]), timeout=10):
            names = [s.name for s in reply.list_services_response.service]
            assert SERVICE in names
            break
        else:
            pytest.fail("no reflection reply")

    def test_registered(self) -> None:
        """The registry starts the resolver from this module."""
        assert SERVICES["resolver"].builder() is build_spec


class TestTableOption:
    async def serve_policy(self, options: ServeOptions) -> pb.GetResolverPolicyResponse:
        spec = await build_spec(options)
        async with (
            serving([spec]) as running,
            grpc.aio.insecure_channel(running[0].address) as chan,
        ):
            stub = pb_grpc.ResolverServiceStub(chan)
            response: pb.GetResolverPolicyResponse = await stub.GetResolverPolicy(
                pb.GetResolverPolicyRequest(), timeout=10
            )
            return response

    async def test_table_file_option(self, tmp_path: Path) -> None:
        """ServeOptions.reliability_table replaces the table; the origin says where from."""
        path = tmp_path / "table.json"
        path.write_text(json.dumps({"sources": {"oracle": 0.55}}))
        response = await self.serve_policy(ServeOptions(port=0, reliability_table=str(path)))
        assert [(r.source, r.reliability) for r in response.reliability_table] == [("oracle", 0.55)]
        assert response.reliability_table_origin == str(path)

    async def test_table_file_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the option, $ASSAY_RELIABILITY_TABLE is honoured."""
        path = tmp_path / "env.json"
        path.write_text(json.dumps({"sources": {"x": 0.1}}))
        monkeypatch.setenv(TABLE_ENV, str(path))
        response = await self.serve_policy(ServeOptions(port=0))
        assert response.reliability_table_origin == str(path)

    async def test_bad_table_stops_start_up(self, tmp_path: Path) -> None:
        """A bad table is a start-up error naming the file, not a server with a guess."""
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({"sources": {"x": 7}}))
        with pytest.raises(TableError, match=r"bad\.json"):
            await build_spec(ServeOptions(port=0, reliability_table=str(path)))
