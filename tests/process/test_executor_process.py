"""``assay executor run`` as a real process against three real ``assay serve`` processes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.processes import assay_command, assay_process, free_port

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
