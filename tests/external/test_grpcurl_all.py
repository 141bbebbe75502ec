"""grpcurl end to end over all three services, through server reflection only:
``list`` and ``describe`` on each, one real call each, and each one's rich error
(INVALID_ARGUMENT with the ErrorInfo reason and the BadRequest field path)
decoded from grpcurl's ``-format-error`` output. The services run as real
processes wired together, as ``assay up`` runs them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.v1 import (
    adjudication_service_pb2,
    planner_service_pb2,
    resolver_service_pb2,
)
from tests.support.grpcurl import call, call_error, grpcurl, proto_field
from tests.support.stack import Stack, assay_stack

ROOT = Path(__file__).resolve().parents[2]
INVALID_ARGUMENT = 3
NOT_FOUND = 5

pytestmark = pytest.mark.external

# service name in the stack -> (fully-qualified gRPC service, its file descriptor)
SERVICES = {
    "resolver": ("assay.v1.ResolverService", resolver_service_pb2.DESCRIPTOR),
    "planner": ("assay.v1.PlannerService", planner_service_pb2.DESCRIPTOR),
    "adjudication": ("assay.v1.AdjudicationService", adjudication_service_pb2.DESCRIPTOR),
}

UNKNOWN_SOURCE_EVIDENCE = {
    "claims": [
        {
            "subject": "api:x",
            "predicate": "retries.mode",
            "value": "safe",
            "source": "no_such_source",
            "confidence": 0.5,
        }
    ]
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with assay_stack(tmp_path_factory.mktemp("grpcurl-all")) as running:
        yield running


def example(path: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / "examples" / path).read_text(encoding="utf-8"))
    return loaded


class TestReflection:
    @pytest.mark.parametrize("name", sorted(SERVICES))
    def test_list_shows_the_service_health_and_reflection(self, stack: Stack, name: str) -> None:
        """`grpcurl list` on each port shows its service beside health and reflection."""
        service, _ = SERVICES[name]
        result = grpcurl("-plaintext", stack.targets()[name], "list")
        assert result.returncode == 0, result.stderr
        listed = set(result.stdout.split())
        assert {service, "grpc.health.v1.Health"} <= listed
        assert {
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        } <= listed

    @pytest.mark.parametrize("version", ["v1", "v1alpha"])
    def test_both_reflection_protocols_describe_themselves(
        self, stack: Stack, version: str
    ) -> None:
        """Each reflection service listed is described too, with messages of its own package."""
        service = f"grpc.reflection.{version}.ServerReflection"
        result = grpcurl("-plaintext", stack.targets()["resolver"], "describe", service)
        assert result.returncode == 0, result.stderr
        assert f"stream .grpc.reflection.{version}.ServerReflectionRequest" in result.stdout

    @pytest.mark.parametrize("name", sorted(SERVICES))
    def test_describe_shows_every_rpc_of_the_contract(self, stack: Stack, name: str) -> None:
        """`grpcurl describe` shows each RPC the contract declares, with its types."""
        service, file_descriptor = SERVICES[name]
        result = grpcurl("-plaintext", stack.targets()[name], "describe", service)
        assert result.returncode == 0, result.stderr
        declared = file_descriptor.services_by_name[service.split(".")[-1]]
        assert declared.methods, "the contract declares RPCs"
        for method in declared.methods:
            assert f"rpc {method.name}" in result.stdout
            assert f".{method.input_type.full_name} )" in result.stdout

    @pytest.mark.parametrize(
        ("name", "message", "field_line"),
        [
            ("resolver", "assay.v1.Claim", ".google.protobuf.Value value = 4;"),
            ("planner", "assay.v1.EvidencePlan", "repeated .assay.v1.AcquisitionCandidate"),
            ("adjudication", "assay.v1.GoldLabelRevision", "string digest = 14;"),
        ],
    )
    def test_describe_a_shared_message(
        self, stack: Stack, name: str, message: str, field_line: str
    ) -> None:
        """Shared messages are described through each service's reflection too."""
        result = grpcurl("-plaintext", stack.targets()[name], "describe", message)
        assert result.returncode == 0, result.stderr
        assert f"message {message.split('.')[-1]} {{" in result.stdout
        assert field_line in result.stdout

    @pytest.mark.parametrize("name", sorted(SERVICES))
    def test_health_is_serving(self, stack: Stack, name: str) -> None:
        """grpc.health.v1.Health/Check answers SERVING on every service."""
        response = call(stack.targets()[name], "grpc.health.v1.Health/Check", {})
        assert response["status"] == "SERVING"


class TestCalls:
    def test_resolve_evidence(self, stack: Stack) -> None:
        """ResolveEvidence names the conflicted safety predicate of the example."""
        response = call(
            stack.resolver.target,
            "assay.v1.ResolverService/ResolveEvidence",
            {"evidence": example("evidence/safety-conflict.json")},
        )
        conflicted = proto_field(response, "conflicted_safety_predicates")
        assert {"subject": "api:payments.create", "predicate": "idempotency.mode"} in conflicted
        statuses = {r["predicate"]: r["status"] for r in proto_field(response, "resolutions")}
        assert statuses["idempotency.mode"] == "RESOLUTION_STATUS_CONFLICTED"

    def test_plan_evidence(self, stack: Stack) -> None:
        """PlanEvidence through the planner (and its resolver) recommends acquisition."""
        response = call(
            stack.planner.target,
            "assay.v1.PlannerService/PlanEvidence",
            example("plan/safety-conflict-read-only.json"),
        )
        plan = response["plan"]
        assert plan["outcome"] == "PLAN_OUTCOME_ACQUISITION_RECOMMENDED"
        assert proto_field(plan, "requires_review") is True
        probes = {c["probe"] for c in plan["candidates"]}
        assert "PROBE_KIND_HUMAN_REVIEW" in probes

    def test_register_then_list_reviewers(self, stack: Stack) -> None:
        """RegisterReviewer stores a reviewer that ListReviewers then returns."""
        registered = call(
            stack.adjudication.target,
            "assay.v1.AdjudicationService/RegisterReviewer",
            {
                "request_id": "grpcurl-register-1",
                "reviewer": {
                    "reviewer_id": "grpcurl-fixture",
                    "kind": "REVIEWER_KIND_MECHANISM_TEST_FIXTURE",
                },
            },
        )
        assert proto_field(registered["reviewer"], "register_time")
        listed = call(stack.adjudication.target, "assay.v1.AdjudicationService/ListReviewers", {})
        ids = [proto_field(r, "reviewer_id") for r in listed["reviewers"]]
        assert "grpcurl-fixture" in ids

    def test_enqueue_then_blinded_view_has_no_verdict(self, stack: Stack) -> None:
        """A case enqueued with a verdict comes back blinded without it."""
        enqueued = call(
            stack.adjudication.target,
            "assay.v1.AdjudicationService/EnqueueCase",
            {
                "case": {
                    "tenant": "grpcurl",
                    "subject": "api:payments.create",
                    "predicate": "idempotency.mode",
                    "candidate_values": ["idempotency-key", "none"],
                    "local_verdict": "none",
                    "lineage": {"origin": "grpcurl-test"},
                }
            },
        )
        case_id = proto_field(enqueued["case"], "case_id")
        blinded = call(
            stack.adjudication.target,
            "assay.v1.AdjudicationService/GetBlindedCase",
            {"case_id": case_id},
        )["case"]
        assert proto_field(blinded, "candidate_values") == ["idempotency-key", "none"]
        assert "verdict" not in json.dumps(blinded).lower()


class TestErrorDetails:
    def test_resolver_bad_claim(self, stack: Stack) -> None:
        """The resolver names the bad claim's source field, reason UNKNOWN_SOURCE."""
        status = call_error(
            stack.resolver.target,
            "assay.v1.ResolverService/ResolveEvidence",
            {"evidence": UNKNOWN_SOURCE_EVIDENCE},
        )
        assert status.code == INVALID_ARGUMENT
        assert (status.reason, status.domain) == ("ERROR_REASON_UNKNOWN_SOURCE", "assay.v1")
        assert list(status.violations) == ["evidence.claims[0].source"]

    def test_planner_bad_subject(self, stack: Stack) -> None:
        """The planner names its own bad field, reason INVALID_FIELD."""
        status = call_error(
            stack.planner.target,
            "assay.v1.PlannerService/PlanEvidence",
            {"subject": "", "predicate": "idempotency.mode", "evidence": {}},
        )
        assert status.code == INVALID_ARGUMENT
        assert status.reason == "ERROR_REASON_INVALID_FIELD"
        assert "subject" in status.violations

    def test_planner_forwards_the_resolvers_field_path(self, stack: Stack) -> None:
        """A bad claim found by the resolver keeps its reason and path through the planner."""
        status = call_error(
            stack.planner.target,
            "assay.v1.PlannerService/PlanEvidence",
            {
                "subject": "api:x",
                "predicate": "retries.mode",
                "evidence": UNKNOWN_SOURCE_EVIDENCE,
            },
        )
        assert status.code == INVALID_ARGUMENT
        assert status.reason == "ERROR_REASON_UNKNOWN_SOURCE"
        assert "evidence.claims[0].source" in status.violations

    def test_adjudication_human_without_attestation(self, stack: Stack) -> None:
        """Adjudication refuses an unattested human reviewer, naming reviewer.attested_by."""
        status = call_error(
            stack.adjudication.target,
            "assay.v1.AdjudicationService/RegisterReviewer",
            {"reviewer": {"reviewer_id": "grpcurl-human", "kind": "REVIEWER_KIND_HUMAN"}},
        )
        assert status.code == INVALID_ARGUMENT
        assert status.reason == "ERROR_REASON_HUMAN_REVIEWER_REQUIRES_ATTESTATION"
        assert list(status.violations) == ["reviewer.attested_by"]

    def test_adjudication_unknown_case(self, stack: Stack) -> None:
        """An unknown case id is NOT_FOUND with reason CASE_NOT_FOUND and no violations."""
        status = call_error(
            stack.adjudication.target,
            "assay.v1.AdjudicationService/GetBlindedCase",
            {"case_id": "no-such-case"},
        )
        assert status.code == NOT_FOUND
        assert status.reason == "ERROR_REASON_CASE_NOT_FOUND"
        assert status.violations == {}
