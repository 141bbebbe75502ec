"""``assay demo`` and ``assay executor`` as real processes: the newcomer's first commands."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import assay_command

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
DEMO_BOUND_SECONDS = 60
# ``assay executor run`` on the example plan, before the flags a test adds.
EXAMPLE_RUN = (
    "executor",
    "run",
    "examples/executor/idempotency-conflict.json",
    "--subject",
    "api:checkout.submit",
    "--predicate",
    "idempotency.mode",
)


def run(*args: str, timeout: float = DEMO_BOUND_SECONDS) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen(
        assay_command(*args),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def demo_run() -> subprocess.CompletedProcess[str]:
    """One ``assay demo`` run, shared: each test reads a different part of its output."""
    return run("demo")


@pytest.fixture
def demo(demo_run: subprocess.CompletedProcess[str]) -> str:
    assert demo_run.returncode == 0, demo_run.stderr
    return demo_run.stdout


class TestDemo:
    def test_the_demo_walks_the_loop_to_a_resolved_conflict(
        self, demo_run: subprocess.CompletedProcess[str]
    ) -> None:
        """Exit 0 within the bound, the stages in order, and the outcome RESOLVED."""
        done = demo_run
        assert done.returncode == 0, done.stderr
        out = done.stdout
        stages = [
            "1. Evidence",
            "2. Executor",
            "3. Review",
            "4. Executor again",
            "5. Outcome",
            "6. Asking before acting",
        ]
        positions = [out.index(stage) for stage in stages]
        assert positions == sorted(positions)
        assert "CASE_ENQUEUED" in out
        assert 'labels "none" -> AWAITING_RESOLUTION' in out
        assert "operator reads the round -> DISAGREED" in out
        assert "ADJUDICATOR_DECISION" in out
        assert "GOLD_LABEL_RETURNED" in out
        assert 'is RESOLVED = "idempotency-key"' in out
        assert "Traceback" not in done.stderr

    def test_the_demo_is_honest_about_its_reviewers(self, demo: str) -> None:
        """It says the reviewers are test fixtures and the label is SYNTHETIC_MECHANISM_TEST."""
        out = demo
        assert "MECHANISM_TEST_FIXTURE test fixtures" in out
        assert "not people" in out
        assert "provenance SYNTHETIC_MECHANISM_TEST" in out
        assert "source mechanism_test_fixture" in out
        assert "source human_review" not in out
        assert "HUMAN_ADJUDICATED" not in out

    def test_each_role_acts_with_its_own_token_over_tls(self, demo: str) -> None:
        """TLS and tokens on; the operator runs the executor and registers and freezes,
        alice and bob review, carol adjudicates, each under their own name."""
        out = demo
        assert "TLS on" in out
        assert "2. Executor as operator, for tenant acme" in out
        registered = "operator registers alice (bound to alice), bob (bound to bob), carol "
        assert registered + "(bound to carol) as MECHANISM_TEST_FIXTURE reviewers" in out
        assert 'alice (fixture, own token) labels "idempotency-key"' in out
        assert 'bob (fixture, own token) labels "none" -> AWAITING_RESOLUTION' in out
        assert 'carol (fixture, own token) decides "idempotency-key" -> RESOLVED' in out
        assert "operator freezes: gold label r1" in out

    def test_the_boundary_refuses_an_outsider_and_a_missing_role(self, demo: str) -> None:
        """mallory of globex cannot see the acme case (NOT_FOUND, no existence leak); alice,
        a reviewer, cannot freeze (PERMISSION_DENIED ROLE_REQUIRED)."""
        assert (
            "refused: mallory (tenant globex) reads the acme case -> NOT_FOUND CASE_NOT_FOUND"
        ) in demo
        assert (
            "refused: alice (a reviewer) tries to freeze it -> PERMISSION_DENIED ROLE_REQUIRED"
        ) in demo
        assert "NOT refused" not in demo

    def test_the_ledger_names_who_did_each_step(self, demo: str) -> None:
        """The audit events carry the token subjects as actors, in the order they acted."""
        actors = re.findall(r"#\d+\s+(\w+)\s+by (\w+)", demo)
        assert actors[:8] == [
            ("CASE_ENQUEUED", "operator"),
            ("REVIEWER_REGISTERED", "operator"),
            ("REVIEWER_REGISTERED", "operator"),
            ("REVIEWER_REGISTERED", "operator"),
            ("REVIEW_SUBMITTED", "alice"),
            ("REVIEW_SUBMITTED", "bob"),
            ("CASE_RESOLVED", "carol"),
            ("GOLD_LABEL_FROZEN", "operator"),
        ]
        assert "audit chain verified (8 events)" in demo
        assert actors[8:] == [
            ("APPROVAL_REQUESTED", "oscar"),
            ("APPROVAL_DECIDED", "dave"),
            ("APPROVAL_GRANTED", "dave"),
            ("APPROVAL_CONSUMED", "oscar"),
        ]
        assert "audit chain verified (12 events)" in demo

    def test_the_executor_asks_before_acting_and_acts_only_on_the_grant(self, demo: str) -> None:
        """Stage 6: the request with its id and who must decide, the requester refused his own
        approval by rule (not by role), dave's grant, and the rerun under that approval."""
        stage = demo[demo.index("6. Asking before acting") :]
        asked = re.search(r"approval (approval_\w+) requested for RERUN_TEST", stage)
        assert asked is not None
        approval_id = asked.group(1)
        assert "waiting up to 60s for 1 approver of tenant acme" in stage
        assert "not oscar, the requester" in stage
        assert "nothing runs until it has consumed a grant" in stage
        assert f"dave's pending approvals: {approval_id}, asked by oscar" in stage
        assert (
            "refused: oscar approves his own request -> PERMISSION_DENIED APPROVER_IS_REQUESTER"
        ) in stage
        assert "dave (approver, own token) approves -> GRANTED" in stage
        assert f"approval {approval_id} GRANTED by dave, consumed by this run" in stage
        assert "RERUN_TEST OBSERVED" in stage
        assert f"under approval {approval_id} (consumed)" in stage
        positions = [
            stage.index(line)
            for line in ("requested for", "refused: oscar", "dave (approver", "RERUN_TEST OBSERVED")
        ]
        assert positions == sorted(positions)
        assert "stopped: RESOLVED; final: RESOLVED leader true" in stage


class TestExecutorCli:
    @pytest.mark.parametrize(
        ("flag", "value"), [("--grant", "TELEPATHY"), ("--approve", "ASK_THE_ORACLE")]
    )
    def test_unknown_grant_or_probe_names_are_one_line_errors(self, flag: str, value: str) -> None:
        """A typo in a policy flag is refused before anything runs: one line, exit 1."""
        done = run(
            *EXAMPLE_RUN,
            flag,
            value,
            timeout=30,
        )
        assert done.returncode == 1
        assert done.stderr.strip().count("\n") == 0
        assert value in done.stderr

    def test_a_local_approval_is_refused_on_a_run_with_an_identity(self) -> None:
        """--approve is dev mode only: with a token the run must ask the approval service,
        so the two are never combined; refused before anything runs."""
        done = run(
            *EXAMPLE_RUN,
            "--approve",
            "RERUN_TEST",
            "--token",
            "header.payload.signature",
            timeout=30,
        )
        assert done.returncode == 1
        assert "--approve is a local, dev-mode approval" in done.stderr
        assert "ApprovalService" in done.stderr

    def test_the_local_approval_says_what_it_is(self) -> None:
        """The help says --approve is local, unrecorded, and names the wait flag's env twin."""
        done = run("executor", "run", "--help", timeout=30)
        text = " ".join(done.stdout.split())
        assert "not recorded in the ledger" in text
        assert "ASSAY_APPROVAL_WAIT" in text

    def test_no_services_running_is_a_one_line_error(self) -> None:
        """Against nothing listening, the executor says which service is unreachable."""
        done = run(
            *EXAMPLE_RUN,
            "--resolver",
            "127.0.0.1:1",
            "--timeout",
            "2",
            timeout=30,
        )
        assert done.returncode == 1
        assert "not reachable" in done.stderr
        assert "Traceback" not in done.stderr
