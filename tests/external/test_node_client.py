"""The Node client (clients/node, Connect-ES over HTTP/2 gRPC) against the
three services running as real processes: the polyglot proof that the
contract, the rich error details and the wire format work outside Python.

The assertions live in clients/node/test/*.test.js (Node's built-in test
runner); this test installs the packages from the lockfile, generates the
code from proto/, starts the services, and requires node's run to pass.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import node
from tests.support.stack import Stack, assay_stack

pytestmark = [pytest.mark.external, pytest.mark.timeout(900)]

NODE_TEST_TIMEOUT_SECONDS = 180
DOC = node.ROOT / "docs" / "using-node-and-grpcurl.md"
# The number of tests in clients/node/test/client.test.js, services.test.js, listing.test.js
# and approvals.test.js, at least (secure.test.js and the approvals round trip are skipped
# here; tests/external/test_node_secure.py runs them).
MINIMUM_NODE_TESTS = 24


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with assay_stack(tmp_path_factory.mktemp("node-stack")) as running:
        yield running


class TestNodeClient:
    def test_node_suite_passes_against_real_servers(self, stack: Stack) -> None:
        """`node --test` calls all three services and decodes their error details."""
        node.ensure_generated()
        targets = stack.targets()
        result = node.run(
            [node.tool("node"), "--test", "--test-reporter=tap", "test/"],
            timeout=NODE_TEST_TIMEOUT_SECONDS,
            env={
                "ASSAY_RESOLVER_TARGET": targets["resolver"],
                "ASSAY_PLANNER_TARGET": targets["planner"],
                "ASSAY_ADJUDICATION_TARGET": targets["adjudication"],
                # This stack is plaintext: the secured suite must not aim at it.
                "ASSAY_SECURE_CREDENTIALS": "",
            },
        )
        report = node.describe(result) + "\n" + stack.logs()
        assert result.returncode == 0, report
        # A runner that found nothing also exits 0: require the suites and a count.
        counts = dict(
            line[2:].split(" ", 1) for line in result.stdout.splitlines() if line.startswith("# ")
        )
        assert counts.get("fail") == "0", report
        assert int(counts.get("pass", "0")) >= MINIMUM_NODE_TESTS, report
        for suite in (
            "ResolverService",
            "PlannerService",
            "AdjudicationService",
            "ApprovalService",
        ):
            assert suite in result.stdout, report
        # And the servers saw the calls (one structured log line per RPC).
        methods = {
            str(line.get("method", ""))
            for proc in (stack.resolver, stack.planner, stack.adjudication)
            for line in proc.log_lines()
        }
        for rpc in (
            "ResolveSemantic",
            "PlanEvidence",
            "RegisterReviewer",
            "GetBlindedCase",
            "ListCases",
            "AmendReview",
            "WithdrawReview",
        ):
            assert any(m.endswith(rpc) for m in methods), sorted(methods)

    def test_the_documented_node_snippet_runs(self, stack: Stack) -> None:
        """The pasteable script in docs/using-node-and-grpcurl.md works as printed."""
        node.ensure_generated()
        script = documented_node_script()
        targets = stack.targets()
        result = node.run(
            [node.tool("node"), "--input-type=module"],
            timeout=NODE_TEST_TIMEOUT_SECONDS,
            env={
                "ASSAY_RESOLVER_TARGET": targets["resolver"],
                "ASSAY_PLANNER_TARGET": targets["planner"],
                "ASSAY_ADJUDICATION_TARGET": targets["adjudication"],
            },
            stdin=script,
        )
        assert result.returncode == 0, node.describe(result) + "\n" + stack.logs()
        assert "status: CONFLICTED | requires review: true" in result.stdout
        assert "HUMAN_REVIEW" in result.stdout
        assert (
            "refused: InvalidArgument ERROR_REASON_HUMAN_REVIEWER_REQUIRES_ATTESTATION "
            "reviewer.attested_by" in result.stdout
        )


def documented_node_script() -> str:
    """The body of the doc's `node --input-type=module <<'JS'` heredoc."""
    text = DOC.read_text(encoding="utf-8")
    opener = "node --input-type=module <<'JS'\n"
    assert opener in text, f"{DOC} lost its Node example"
    return text.split(opener, 1)[1].split("\nJS\n", 1)[0]
