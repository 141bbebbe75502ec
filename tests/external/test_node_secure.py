"""The Node client (clients/node) against a secured deployment: the three services as
``assay serve NAME --credentials DIR`` processes (TLS from the folder's CA, bearer tokens
verified against its JWKS, its auth policy) and a resolver that also requires a client
certificate. The assertions live in clients/node/test/: secure.test.js (tokens, roles, mutual
TLS, a plaintext client told the server wants TLS), approvals.test.js (a planned candidate
asked for, approved by dave while the operator watches, consumed once), and the whole services
suite, which with ``ASSAY_SECURE_CREDENTIALS`` calls as the example person each RPC's role
needs. This test writes the credentials, starts the servers, and requires every Node test to
run and pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.support import node
from tests.support.secure_processes import (
    CERTIFICATE_SUBJECT,
    SecureDeployment,
    secure_deployment,
)

DOC = node.ROOT / "docs" / "using-node-and-grpcurl.md"
SECURE_SNIPPET_OPENER = "DIR=~/.assay-dev node --input-type=module <<'JS'\n"

pytestmark = [pytest.mark.external, pytest.mark.timeout(900)]

NODE_TEST_TIMEOUT_SECONDS = 180
# The number of tests in clients/node/test/*.test.js (secure.test.js's included).
SECURE_NODE_TESTS = 34


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureDeployment]:
    with secure_deployment(tmp_path_factory.mktemp("node-secure"), SecureDeployment) as running:
        yield running


def tap_counts(stdout: str) -> dict[str, str]:
    """The summary lines (``# pass 11``) of a TAP report."""
    return dict(line[2:].split(" ", 1) for line in stdout.splitlines() if line.startswith("# "))


class TestNodeSecure:
    def test_node_calls_a_secured_deployment(self, deployment: SecureDeployment) -> None:
        """TLS + token resolves; no token is CREDENTIALS_MISSING; a wrong role is ROLE_REQUIRED;
        a client certificate opens the mutual TLS resolver, its absence does not."""
        node.ensure_generated()
        targets = deployment.stack.targets()
        cert, key = deployment.client
        result = node.run(
            [node.tool("node"), "--test", "--test-reporter=tap", "test/"],
            timeout=NODE_TEST_TIMEOUT_SECONDS,
            env={
                "ASSAY_RESOLVER_TARGET": targets["resolver"],
                "ASSAY_PLANNER_TARGET": targets["planner"],
                "ASSAY_ADJUDICATION_TARGET": targets["adjudication"],
                "ASSAY_SECURE_CREDENTIALS": str(deployment.creds.root),
                "ASSAY_SECURE_RESOLVER_TARGET": targets["resolver"],
                "ASSAY_SECURE_PLANNER_TARGET": targets["planner"],
                "ASSAY_SECURE_ADJUDICATION_TARGET": targets["adjudication"],
                "ASSAY_MTLS_RESOLVER_TARGET": deployment.mtls_resolver.target,
                "ASSAY_MTLS_CLIENT_CERT": str(cert),
                "ASSAY_MTLS_CLIENT_KEY": str(key),
            },
        )
        report = node.describe(result) + "\n" + deployment.logs()
        assert result.returncode == 0, report
        counts = tap_counts(result.stdout)
        # Skipped suites also exit 0: require every secure test to have run and passed.
        assert counts.get("fail") == "0", report
        assert counts.get("skipped") == "0", report
        assert "# SKIP" not in result.stdout, report
        assert int(counts.get("pass", "0")) >= SECURE_NODE_TESTS, report
        # The servers saw the authenticated callers (the RPC log names the subject, the
        # client certificate's CN included) and never logged a credential.
        callers = {
            str(line.get("caller", ""))
            for proc in (
                deployment.stack.resolver,
                deployment.stack.planner,
                deployment.stack.adjudication,
                deployment.mtls_resolver,
            )
            for line in proc.log_lines()
        }
        assert {"alice", "bob", "operator", "planner"} <= callers, sorted(callers)
        # The mutual TLS resolver answered the call with a certificate only: the one without
        # never got past the handshake.
        mtls_calls = [line for line in deployment.mtls_resolver.log_lines() if "method" in line]
        assert [line.get("caller") for line in mtls_calls] == [CERTIFICATE_SUBJECT], mtls_calls
        logs = deployment.logs()
        for name in ("alice", "operator", "planner"):
            assert deployment.creds.token(name) not in logs

    def test_the_documented_secure_snippet_runs(self, deployment: SecureDeployment) -> None:
        """The secured section's Node script prints what the doc says it prints."""
        node.ensure_generated()
        text = DOC.read_text(encoding="utf-8")
        assert SECURE_SNIPPET_OPENER in text, f"{DOC} lost its secured Node example"
        script = text.split(SECURE_SNIPPET_OPENER, 1)[1].split("\nJS\n", 1)[0]
        targets = deployment.stack.targets()
        result = node.run(
            [node.tool("node"), "--input-type=module"],
            timeout=NODE_TEST_TIMEOUT_SECONDS,
            env={
                "DIR": str(deployment.creds.root),
                "ASSAY_RESOLVER_TARGET": targets["resolver"],
                "ASSAY_PLANNER_TARGET": targets["planner"],
                "ASSAY_ADJUDICATION_TARGET": targets["adjudication"],
            },
            stdin=script,
        )
        assert result.returncode == 0, node.describe(result) + "\n" + deployment.logs()
        lines = result.stdout.splitlines()
        assert lines[:3] == [
            "alice reads the policy: conflict margin 0.2",
            "no token: Unauthenticated ERROR_REASON_CREDENTIALS_MISSING",
            "alice lists reviewers: PermissionDenied ERROR_REASON_ROLE_REQUIRED"
            " | needs: auditor, operator",
        ], result.stdout
        assert re.fullmatch(r"the operator lists \d+ reviewers", lines[3]), result.stdout
