"""``assay demo`` and ``assay executor`` as real processes: the newcomer's first commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.processes import assay_command

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
DEMO_BOUND_SECONDS = 60


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


class TestDemo:
    def test_the_demo_walks_the_loop_to_a_resolved_conflict(self) -> None:
        """Exit 0 within the bound, the stages in order, and the outcome RESOLVED."""
        done = run("demo")
        assert done.returncode == 0, done.stderr
        out = done.stdout
        stages = ["1. Evidence", "2. Executor", "3. Review", "4. Executor again", "5. Outcome"]
        positions = [out.index(stage) for stage in stages]
        assert positions == sorted(positions)
        assert "CASE_ENQUEUED" in out
        assert "DISAGREED" in out
        assert "ADJUDICATOR_DECISION" in out
        assert "GOLD_LABEL_RETURNED" in out
        assert 'is RESOLVED = "idempotency-key"' in out
        assert "Traceback" not in done.stderr

    def test_the_demo_is_honest_about_its_reviewers(self) -> None:
        """It says the reviewers are test fixtures and the label is SYNTHETIC_MECHANISM_TEST."""
        out = run("demo").stdout
        assert "MECHANISM_TEST_FIXTURE test fixtures" in out
        assert "not people" in out
        assert "provenance SYNTHETIC_MECHANISM_TEST" in out
        assert "source mechanism_test_fixture" in out
        assert "source human_review" not in out


class TestExecutorCli:
    @pytest.mark.parametrize(
        ("flag", "value"), [("--grant", "TELEPATHY"), ("--approve", "ASK_THE_ORACLE")]
    )
    def test_unknown_grant_or_probe_names_are_one_line_errors(self, flag: str, value: str) -> None:
        """A typo in a policy flag is refused before anything runs: one line, exit 1."""
        done = run(
            "executor",
            "run",
            "examples/executor/idempotency-conflict.json",
            "--subject",
            "api:checkout.submit",
            "--predicate",
            "idempotency.mode",
            flag,
            value,
            timeout=30,
        )
        assert done.returncode == 1
        assert done.stderr.strip().count("\n") == 0
        assert value in done.stderr

    def test_no_services_running_is_a_one_line_error(self) -> None:
        """Against nothing listening, the executor says which service is unreachable."""
        done = run(
            "executor",
            "run",
            "examples/executor/idempotency-conflict.json",
            "--subject",
            "api:checkout.submit",
            "--predicate",
            "idempotency.mode",
            "--resolver",
            "127.0.0.1:1",
            "--timeout",
            "2",
            timeout=30,
        )
        assert done.returncode == 1
        assert "not reachable" in done.stderr
        assert "Traceback" not in done.stderr
