"""``assay plan`` and ``assay probes`` against real resolver and planner processes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import AssayProcess, assay_command, assay_process, free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plan"
pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def planner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    logs = tmp_path_factory.mktemp("planner-cli")
    resolver_port, planner_port = free_port(), free_port()
    with (
        assay_process(
            ["serve", "resolver", "--port", str(resolver_port)],
            logs / "resolver.log",
            resolver_port,
        ) as resolver,
        assay_process(
            [
                "serve",
                "planner",
                "--port",
                str(planner_port),
                "--resolver",
                resolver.target,
            ],
            logs / "planner.log",
            planner_port,
        ) as proc,
    ):
        yield proc
        proc.terminate()
        resolver.terminate()


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"},
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


class TestPlanCommand:
    @pytest.mark.parametrize(
        ("example", "expected"),
        [
            ("safety-conflict-read-only.json", ["REQUIRES REVIEW", "grant filesystem_write"]),
            ("capability-gap.json", ["unobservable_signal/process_result", "signal unsupported"]),
            ("empty-graph.json", ["no_evidence_at_all", "candidates, best first"]),
            ("corroborated.json", ["no_gap_identified"]),
        ],
    )
    def test_each_example_renders(
        self, planner: AssayProcess, example: str, expected: list[str]
    ) -> None:
        """Every shipped example plans and prints its gaps and candidates as tables."""
        result = assay("plan", str(EXAMPLES / example), "--target", planner.target)
        assert result.returncode == 0, result.stderr
        for text in expected:
            assert text in result.stdout

    def test_json_is_the_response(self, planner: AssayProcess) -> None:
        """--json prints the PlanEvidenceResponse as proto JSON."""
        result = assay(
            "plan", str(EXAMPLES / "corroborated.json"), "--json", "--target", planner.target
        )
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["plan"]["outcome"] == "PLAN_OUTCOME_NO_GAP_IDENTIFIED"
        assert data["resolution"]["status"] == "RESOLUTION_STATUS_RESOLVED"

    def test_a_bad_file_is_one_line_naming_it(self, planner: AssayProcess, tmp_path: Path) -> None:
        """A file that is not a PlanEvidenceRequest: one line with the file name."""
        bad = tmp_path / "bad.json"
        bad.write_text('{"subject": "s", "bogus": 1}', encoding="utf-8")
        line = one_line_error(assay("plan", str(bad), "--target", planner.target))
        assert str(bad) in line

    def test_invalid_evidence_is_one_line_naming_the_field(
        self, planner: AssayProcess, tmp_path: Path
    ) -> None:
        """The resolver's violation comes back with the planner request's field path."""
        data = json.loads((EXAMPLES / "safety-conflict-read-only.json").read_text())
        data["evidence"]["claims"][1]["confidence"] = 7
        bad = tmp_path / "bad-claim.json"
        bad.write_text(json.dumps(data), encoding="utf-8")
        line = one_line_error(assay("plan", str(bad), "--target", planner.target))
        assert "evidence.claims[1].confidence" in line
        assert "INVALID_ARGUMENT" in line

    def test_no_planner_is_one_line(self) -> None:
        """Nothing listening: one line saying the planner is not reachable."""
        port = free_port()
        line = one_line_error(
            assay("plan", str(EXAMPLES / "empty-graph.json"), "--target", f"127.0.0.1:{port}")
        )
        assert "planner" in line


class TestProbesCommand:
    def test_table_lists_every_probe(self, planner: AssayProcess) -> None:
        """The catalogue table names all six probes."""
        result = assay("probes", "--target", planner.target)
        assert result.returncode == 0, result.stderr
        for name in ("rerun_test", "inspect_vcs_state", "query_ci_status", "human_review"):
            assert name in result.stdout

    def test_json(self, planner: AssayProcess) -> None:
        """--json prints the ListProbesResponse."""
        result = assay("probes", "--json", "--target", planner.target)
        assert result.returncode == 0, result.stderr
        assert len(json.loads(result.stdout)["probes"]) == 6
