"""grpcurl against a secured deployment, through reflection only: the three services as
``assay serve NAME --credentials DIR`` processes (TLS from the folder's CA, bearer tokens, its
auth policy) and a resolver that also requires a client certificate. ``-cacert`` and
``-H 'authorization: Bearer …'`` open every RPC to a principal holding its role; reflection and
health stay open; plaintext and an untrusted certificate never get a connection. The commands
in docs/using-node-and-grpcurl.md's secured section run here as printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from assay.candidate_digest import candidate_digest
from assay.v1 import plan_pb2
from tests.support.grpcurl import GRPCURL_TIMEOUT_SECONDS, decode_status, grpcurl, proto_field
from tests.support.secure_processes import (
    CERTIFICATE_SUBJECT,
    SecureDeployment,
    secure_deployment,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "using-node-and-grpcurl.md"
UNAUTHENTICATED = 16
PERMISSION_DENIED = 7
FAILED_PRECONDITION = 9
# Bounds the dial of a connection that cannot succeed (grpcurl's default is 10 s).
CONNECT_TIMEOUT = "3"

pytestmark = pytest.mark.external


class Deployment(SecureDeployment):
    """The secured deployment, called as grpcurl's user calls it."""

    def target(self, service: str) -> str:
        """``localhost:PORT`` (the name the server certificate carries, as a user types it)."""
        return "localhost:" + self.stack.targets()[service].rsplit(":", 1)[1]

    def trusted(
        self, *args: str, token: str | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """grpcurl trusting the folder's CA, with principal ``token``'s bearer token if given."""
        header = ["-H", f"authorization: Bearer {self.creds.token(token)}"] if token else []
        return grpcurl("-cacert", str(self.creds.ca), *header, *args, stdin=stdin)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with secure_deployment(tmp_path_factory.mktemp("grpcurl-secure"), Deployment) as running:
        yield running


class TestGrpcurlSecure:
    def test_token_and_ca_open_a_call(self, deployment: Deployment) -> None:
        """-cacert plus alice's bearer token calls GetResolverPolicy."""
        result = deployment.trusted(
            deployment.target("resolver"),
            "assay.v1.ResolverService/GetResolverPolicy",
            token="alice",
        )
        assert result.returncode == 0, result.stderr
        assert proto_field(json.loads(result.stdout), "conflict_margin") == 0.2

    def test_no_token_is_unauthenticated(self, deployment: Deployment) -> None:
        """Without -H the call is Unauthenticated with ERROR_REASON_CREDENTIALS_MISSING."""
        method = "assay.v1.ResolverService/GetResolverPolicy"
        result = deployment.trusted(deployment.target("resolver"), method)
        assert result.returncode != 0
        assert "Code: Unauthenticated" in result.stderr, result.stderr
        assert "ERROR_REASON_CREDENTIALS_MISSING" in result.stderr
        status = decode_status(
            deployment.trusted("-format-error", deployment.target("resolver"), method)
        )
        assert (status.code, status.reason, status.domain) == (
            UNAUTHENTICATED,
            "ERROR_REASON_CREDENTIALS_MISSING",
            "assay.v1",
        )

    def test_a_forged_token_is_invalid(self, deployment: Deployment) -> None:
        """A token that does not verify is Unauthenticated with CREDENTIALS_INVALID."""
        header, payload, signature = deployment.creds.token("alice").split(".")
        tampered = ("B" if signature[0] == "A" else "A") + signature[1:]
        forged = f"{header}.{payload}.{tampered}"
        status = decode_status(
            grpcurl(
                "-cacert",
                str(deployment.creds.ca),
                "-format-error",
                "-H",
                f"authorization: Bearer {forged}",
                deployment.target("resolver"),
                "assay.v1.ResolverService/GetResolverPolicy",
            )
        )
        assert (status.code, status.reason) == (UNAUTHENTICATED, "ERROR_REASON_CREDENTIALS_INVALID")

    def test_a_role_not_allowed_is_permission_denied(self, deployment: Deployment) -> None:
        """alice (reviewer, reader) may not ListReviewers; the operator may."""
        args = ("-d", "{}", deployment.target("adjudication"))
        method = "assay.v1.AdjudicationService/ListReviewers"
        status = decode_status(deployment.trusted("-format-error", *args, method, token="alice"))
        assert (status.code, status.reason) == (PERMISSION_DENIED, "ERROR_REASON_ROLE_REQUIRED")
        assert "operator" in status.message
        allowed = deployment.trusted(*args, method, token="operator")
        assert allowed.returncode == 0, allowed.stderr

    def test_the_planner_reaches_the_resolver_with_its_own_token(
        self, deployment: Deployment
    ) -> None:
        """PlanEvidence with alice's token plans (the planner calls the resolver as planner)."""
        request = (ROOT / "examples/plan/safety-conflict-read-only.json").read_text()
        result = grpcurl(
            "-cacert",
            str(deployment.creds.ca),
            "-H",
            f"authorization: Bearer {deployment.creds.token('alice')}",
            "-d",
            "@",
            deployment.target("planner"),
            "assay.v1.PlannerService/PlanEvidence",
            stdin=request,
        )
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout)["plan"]
        assert plan["outcome"] == "PLAN_OUTCOME_ACQUISITION_RECOMMENDED"
        callers = {line.get("caller") for line in deployment.stack.resolver.log_lines()}
        assert "planner" in callers

    @pytest.mark.parametrize(
        ("service", "name"),
        [
            ("resolver", "assay.v1.ResolverService"),
            ("planner", "assay.v1.PlannerService"),
            ("adjudication", "assay.v1.AdjudicationService"),
            ("adjudication", "assay.v1.ApprovalService"),
        ],
    )
    def test_reflection_and_health_need_no_token(
        self, deployment: Deployment, service: str, name: str
    ) -> None:
        """`list`, `describe` (showing each RPC's roles) and Health/Check work without -H."""
        target = deployment.target(service)
        listed = deployment.trusted(target, "list")
        assert listed.returncode == 0, listed.stderr
        assert {name, "grpc.health.v1.Health"} <= set(listed.stdout.split())
        described = deployment.trusted(target, "describe", name)
        assert described.returncode == 0, described.stderr
        assert "option (.assay.v1.access) = { roles:ROLE_" in described.stdout
        health = deployment.trusted(target, "grpc.health.v1.Health/Check")
        assert health.returncode == 0, health.stderr
        assert json.loads(health.stdout)["status"] == "SERVING"

    def test_an_approval_round_trip(self, deployment: Deployment) -> None:
        """ApprovalService on the adjudication port: the operator asks for a candidate (its
        digest computed as the planner computes it), may not decide it (no approver role);
        dave approves; the operator consumes it once; a finished approval's WatchApproval
        sends it once and ends; every step names its actor."""
        target = deployment.target("adjudication")
        service = "assay.v1.ApprovalService"

        def rpc(method: str, body: dict[str, Any], who: str) -> subprocess.CompletedProcess[str]:
            args = ("-format-error", "-d", "@", target, f"{service}/{method}")
            return deployment.trusted(*args, token=who, stdin=json.dumps(body))

        def ok(method: str, body: dict[str, Any], who: str) -> dict[str, Any]:
            result = rpc(method, body, who)
            assert result.returncode == 0, f"{method}: {result.stderr}"
            reply: dict[str, Any] = json.loads(result.stdout)
            return reply

        subject, predicate = "api:payments.create", "idempotency.mode"
        asked = ok(
            "RequestApproval",
            {
                "tenant": "acme",
                "subject": subject,
                "predicate": predicate,
                "candidate": approvable_candidate(subject, predicate),
                "reason": "grpcurl round trip",
                "request_id": "grpcurl-ask-1",
            },
            "operator",
        )["approval"]
        approval_id = proto_field(asked, "approval_id")
        assert asked["state"] == "APPROVAL_STATE_PENDING"
        decide = {"approval_id": approval_id, "decision": "APPROVAL_DECISION_APPROVE"}
        refused = decode_status(
            rpc("DecideApproval", {**decide, "reason": "mine", "request_id": "g-1"}, "operator")
        )
        assert (refused.code, refused.reason) == (PERMISSION_DENIED, "ERROR_REASON_ROLE_REQUIRED")
        granted = ok("DecideApproval", {**decide, "reason": "ok", "request_id": "g-2"}, "dave")
        assert granted["approval"]["state"] == "APPROVAL_STATE_GRANTED"
        digest = proto_field(asked["candidate"], "candidate_digest")
        consume = {"approval_id": approval_id, "candidate_digest": digest}
        used = ok("ConsumeApproval", {**consume, "request_id": "g-3"}, "operator")
        assert used["approval"]["state"] == "APPROVAL_STATE_CONSUMED"
        again = decode_status(rpc("ConsumeApproval", {**consume, "request_id": "g-4"}, "operator"))
        assert (again.code, again.reason) == (
            FAILED_PRECONDITION,
            "ERROR_REASON_APPROVAL_ALREADY_CONSUMED",
        )
        watched = ok("WatchApproval", {"approval_id": approval_id}, "dave")
        assert watched["approval"]["state"] == "APPROVAL_STATE_CONSUMED"
        actors = [s["actor"]["subject"] for s in watched["approval"]["steps"]]
        assert actors == ["dave", "operator"]
        no_token = decode_status(
            deployment.trusted("-format-error", "-d", "{}", target, f"{service}/ListApprovals")
        )
        assert (no_token.code, no_token.reason) == (
            UNAUTHENTICATED,
            "ERROR_REASON_CREDENTIALS_MISSING",
        )

    def test_plaintext_against_tls_fails(self, deployment: Deployment) -> None:
        """-plaintext never gets a connection to the TLS server."""
        result = grpcurl(
            "-plaintext", "-connect-timeout", CONNECT_TIMEOUT, deployment.target("resolver"), "list"
        )
        assert result.returncode != 0
        assert "Failed to dial target host" in result.stderr, result.stderr

    def test_an_untrusted_certificate_fails(self, deployment: Deployment) -> None:
        """Without -cacert the system roots do not know the server's CA."""
        result = grpcurl(
            "-connect-timeout",
            CONNECT_TIMEOUT,
            "-H",
            f"authorization: Bearer {deployment.creds.token('alice')}",
            deployment.target("resolver"),
            "assay.v1.ResolverService/GetResolverPolicy",
        )
        assert result.returncode != 0
        assert "certificate signed by unknown authority" in result.stderr, result.stderr

    def test_mutual_tls_with_a_client_certificate(self, deployment: Deployment) -> None:
        """-cert/-key open the mutual TLS resolver without a token (the CN is the caller);
        without them there is no connection."""
        cert, key = deployment.client
        target = "localhost:" + deployment.mtls_resolver.target.rsplit(":", 1)[1]
        method = "assay.v1.ResolverService/GetResolverPolicy"
        with_cert = deployment.trusted("-cert", str(cert), "-key", str(key), target, method)
        assert with_cert.returncode == 0, with_cert.stderr
        assert proto_field(json.loads(with_cert.stdout), "conflict_margin") == 0.2
        without = deployment.trusted("-connect-timeout", CONNECT_TIMEOUT, target, method)
        assert without.returncode != 0
        assert "Failed to dial target host" in without.stderr, without.stderr
        callers = [line.get("caller") for line in deployment.mtls_resolver.log_lines()]
        assert CERTIFICATE_SUBJECT in callers

    def test_the_documented_commands_run(self, deployment: Deployment) -> None:
        """The secured section's grpcurl block runs as printed, against this deployment."""
        script = documented_grpcurl_script(deployment)
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        result = subprocess.run(
            ["bash", "-euo", "pipefail"],
            input=script,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=GRPCURL_TIMEOUT_SECONDS * 4,
            check=False,
        )
        assert result.returncode == 0, f"{script}\n--- stdout ---\n{result.stdout}\n{result.stderr}"
        out = result.stdout
        assert "assay.v1.ResolverService" in out
        assert "option (.assay.v1.access)" in out
        assert '"status": "SERVING"' in out
        # GetResolverPolicy twice: with -H "…$(cat …)" and with -expand-headers.
        margins = out.count('"conflict_margin": 0.2') + out.count('"conflictMargin": 0.2')
        assert margins == 2, out
        assert "PLAN_OUTCOME_ACQUISITION_RECOMMENDED" in out


def approvable_candidate(subject: str, predicate: str) -> dict[str, Any]:
    """A QUERY_CI_STATUS candidate as the planner writes it (the network not granted), as
    the proto JSON grpcurl sends, its digest computed by the planner's rule."""
    candidate = plan_pb2.AcquisitionCandidate(
        candidate_id="query_ci_status/process_result",
        probe=plan_pb2.PROBE_KIND_QUERY_CI_STATUS,
        target_signal_class=plan_pb2.SIGNAL_CLASS_PROCESS_RESULT,
        availability=plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
        required_side_effects=[plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL],
        missing_grants=[plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL],
        blocking_reasons=[plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED],
    )
    candidate.candidate_digest = candidate_digest(subject, predicate, candidate)
    as_json: dict[str, Any] = json_format.MessageToDict(candidate)
    return as_json


def documented_grpcurl_script(deployment: Deployment) -> str:
    """The doc's secured grpcurl block, pointed at ``deployment`` (folder and ports)."""
    text = DOC.read_text(encoding="utf-8")
    opener = "```bash\nDIR=~/.assay-dev\n"
    assert opener in text, f"{DOC} lost its secured grpcurl example"
    script = "DIR=~/.assay-dev\n" + text.split(opener, 1)[1].split("\n```", 1)[0] + "\n"
    script = script.replace("DIR=~/.assay-dev", f"DIR={deployment.creds.root}")
    for service, default in (("resolver", 50051), ("planner", 50052), ("adjudication", 50053)):
        script = script.replace(f"localhost:{default}", deployment.target(service))
    return script
