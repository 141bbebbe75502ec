"""``assay executor run`` as a real process against three real ``assay serve`` processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from assay.client.approvals import ApprovalClient
from assay.client.credentials import Credentials
from assay.runtime.auth.dev_credentials import DevCredentials, write_dev_credentials
from assay.v1 import approval_service_pb2 as approval_pb
from tests.support.eventually import eventually
from tests.support.processes import assay_command, assay_process, free_port
from tests.support.stack import Stack, assay_stack

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "executor" / "idempotency-conflict.json"
TARGET = ["--subject", "api:checkout.submit", "--predicate", "idempotency.mode"]


@pytest.fixture
def services(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Resolver, planner (pointed at it) and adjudication, each its own process."""
    ports = {name: free_port() for name in ("resolver", "planner", "adjudication")}
    resolver = f"127.0.0.1:{ports['resolver']}"
    extra = {
        "resolver": [],
        "planner": ["--resolver", resolver],
        "adjudication": ["--db", str(tmp_path / "assay.db")],
    }
    with ExitStack() as stack:
        for name, port in ports.items():
            args = ["serve", name, "--port", str(port), *extra[name]]
            stack.enter_context(assay_process(args, tmp_path / f"{name}.log", port))
        yield {name: f"127.0.0.1:{port}" for name, port in ports.items()}


def executor(services: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = assay_command(
        "executor",
        "run",
        str(EXAMPLE),
        *TARGET,
        *(f"--{name}={target}" for name, target in services.items()),
        "--timeout",
        "10",
        *args,
    )
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def _keys(data: object) -> list[str]:
    """Every key of a JSON document, nested ones included."""
    if isinstance(data, dict):
        return [*data, *(key for value in data.values() for key in _keys(value))]
    if isinstance(data, list):
        return [key for value in data for key in _keys(value)]
    return []


class TestExecutorRun:
    def test_json_report_of_an_enqueued_review(self, services: dict[str, str]) -> None:
        """--json prints the report, keys in camelCase as proto JSON: the step, its skips,
        the enqueued case, the stop reason."""
        done = executor(services, "--json", "--tenant", "process-test")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["stopReason"] == "AWAITING_REVIEW"
        step = report["steps"][0]
        assert step["status"] == "CONFLICTED"
        assert step["acquisition"]["probe"] == "HUMAN_REVIEW"
        assert step["acquisition"]["outcome"] == "CASE_ENQUEUED"
        assert step["acquisition"]["declaredLatency"] == "HOURS"
        # The safety conflict requires review, so HUMAN_REVIEW ranks first: the
        # executor reaches it without skipping the probes that would need approval.
        assert step["skipped"] == []
        assert report["pendingCases"] == [step["acquisition"]["caseId"]]
        assert report["approvalsUsed"] == []
        assert "withinDeclaredLatency" in step["acquisition"]
        assert not [key for key in _keys(report) if "_" in key]

    def test_human_readable_steps_and_the_written_evidence(
        self, services: dict[str, str], tmp_path: Path
    ) -> None:
        """Tables by default; --write-evidence saves the evidence the run ended with."""
        out = tmp_path / "after.json"
        done = executor(services, "--write-evidence", str(out))
        assert done.returncode == 0, done.stderr
        assert "step 1" in done.stdout
        assert "CASE_ENQUEUED" in done.stdout
        assert "stopped: AWAITING_REVIEW" in done.stdout
        written = json.loads(out.read_text())
        assert [c["id"] for c in written["claims"]] == ["spec-idem", "trace-idem"]


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[Stack, DevCredentials]]:
    """The three services as processes served ``--credentials`` (TLS, tokens, approvals)."""
    creds = write_dev_credentials(tmp_path / "creds")
    with assay_stack(tmp_path, creds) as stack:
        yield stack, creds


def asking_executor(
    stack: Stack, creds: DevCredentials, tmp_path: Path, *args: str
) -> subprocess.Popen[str]:
    """``assay executor run`` as operator on a tests.pass conflict whose best candidate, a
    test rerun, needs approval (nothing granted)."""
    evidence = tmp_path / "suite.json"
    claims = [
        {"id": "doc", "value": True, "source": "documentation", "confidence": 0.6},
        {"id": "llm", "value": False, "source": "llm_inference", "confidence": 0.9},
    ]
    for claim in claims:
        claim.update(subject="suite:unit", predicate="tests.pass", correlationGroup=claim["id"])
    evidence.write_text(json.dumps({"claims": claims}), encoding="utf-8")
    worktree = tmp_path / "suite"
    worktree.mkdir()
    command = assay_command(
        "executor",
        "run",
        str(evidence),
        "--subject",
        "suite:unit",
        "--predicate",
        "tests.pass",
        *(f"--{name}={target}" for name, target in stack.targets().items()),
        "--ca",
        str(creds.ca),
        "--token-file",
        str(creds.root / "tokens" / "operator.jwt"),
        "--tenant",
        "acme",
        "--test-command",
        f"{sys.executable} -c pass",
        "--worktree",
        str(worktree),
        "--approval-wait",
        "60",
        *args,
    )
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def decide_when_pending(
    stack: Stack, creds: DevCredentials, process: subprocess.Popen[str], approve: bool, why: str
) -> tuple[approval_pb.Approval, str, str]:
    """As dave: wait for the executor's request, check it is still waiting, decide; then the
    executor's output."""
    try:
        dave = Credentials.from_folder(creds.root, "dave")
        with ApprovalClient(stack.adjudication.target, timeout=10, credentials=dave) as client:
            pending: list[approval_pb.Approval] = eventually(
                lambda: list(client.list_all("acme", "PENDING")),
                message="the executor's approval request is PENDING",
                timeout=30,
            )
            assert process.poll() is None, "the executor must wait for the decision"
            client.decide(pending[0].approval_id, approve, why)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return pending[0], stdout, stderr


class TestExecutorAsksForApprovals:
    def test_a_run_with_a_token_waits_for_the_grant_and_reports_its_id(
        self, secured: tuple[Stack, DevCredentials], tmp_path: Path
    ) -> None:
        """With a token the run asks ApprovalService, waits, and after dave's grant reruns
        the test; its JSON report carries the approval id."""
        stack, creds = secured
        process = asking_executor(stack, creds, tmp_path, "--json")
        asked, stdout, stderr = decide_when_pending(stack, creds, process, True, "fine")
        assert process.returncode == 0, stderr
        report = json.loads(stdout)
        acquisition = report["steps"][0]["acquisition"]
        assert acquisition["probe"] == "RERUN_TEST"
        assert acquisition["approvalId"] == asked.approval_id
        assert report["steps"][0]["approval"]["outcome"] == "CONSUMED"
        assert report["stopReason"] == "RESOLVED"
        assert asked.requester.subject == "operator"

    def test_a_denial_stops_the_run_and_shows_the_reason(
        self, secured: tuple[Stack, DevCredentials], tmp_path: Path
    ) -> None:
        """The request's id and who must decide are printed while it waits; dave's denial
        ends it APPROVAL_DENIED with his reason, and nothing ran."""
        stack, creds = secured
        process = asking_executor(stack, creds, tmp_path)
        asked, stdout, stderr = decide_when_pending(
            stack, creds, process, False, "not during the release freeze"
        )
        assert process.returncode == 0, stderr
        text = " ".join(stdout.split())
        assert f"approval {asked.approval_id} requested for RERUN_TEST" in text
        assert "1 approver of tenant acme" in text
        assert 'DENIED by dave: "not during the release freeze"' in text
        assert "stopped: APPROVAL_DENIED" in text
        assert "RERUN_TEST OBSERVED" not in text
