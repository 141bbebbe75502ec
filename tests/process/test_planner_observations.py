"""Measured costs across real processes: ``assay executor run --observations FILE`` records
an acquisition, the ``assay serve planner --observations FILE`` process re-reads the file
and ``assay probes`` shows declared beside observed and the judgement; bad lines are named
in the planner's log and skipped; a file others may write stops the planner at start."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from assay.executor import observations
from assay.executor.model import Acquisition, Outcome
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, assay_command, assay_process, free_port

pytestmark = pytest.mark.process

TARGET = ["--subject", "artifact:build", "--predicate", "artifact.sha256"]


def serve(path: Path, port: int, resolver: str = "127.0.0.1:1") -> list[str]:
    return [
        "serve", "planner", "--port", str(port), "--resolver", resolver,
        "--observations", str(path),
    ]  # fmt: skip


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[dict[str, str], AssayProcess, Path]]:
    """A resolver and a planner reading ``obs.jsonl`` (which starts with one good line and
    three bad ones), each its own process. Nothing listens at the adjudication address: the
    runs here act through local probes only."""
    path = tmp_path / "obs.jsonl"
    good = observations.record(
        Acquisition("RERUN_TEST", "rerun_test/x", Outcome.FAILED, "", 2.0, "MINUTES")
    )
    bad = [
        "{torn",
        json.dumps({**json.loads(good), "probe": "PROBE_KIND_TELEPATHY"}),
        json.dumps({**json.loads(good), "pad": "x" * 2000}),
    ]
    path.write_text("\n".join([good, *bad]) + "\n")
    path.chmod(0o600)
    ports = {name: free_port() for name in ("resolver", "planner", "adjudication")}
    resolver = f"127.0.0.1:{ports['resolver']}"
    with ExitStack() as stack:
        stack.enter_context(
            assay_process(
                ["serve", "resolver", "--port", str(ports["resolver"])],
                tmp_path / "resolver.log",
                ports["resolver"],
            )
        )
        planner = stack.enter_context(
            assay_process(
                serve(path, ports["planner"], resolver), tmp_path / "planner.log", ports["planner"]
            )
        )
        yield {name: f"127.0.0.1:{port}" for name, port in ports.items()}, planner, path


def probes_json(planner: str, *args: str) -> dict[str, Any]:
    done = run("probes", "--target", planner, "-o", "json", *args)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return {p["kind"].removeprefix("PROBE_KIND_"): p for p in data["probes"]}


class TestAcrossProcesses:
    def test_bad_lines_are_named_in_the_log_and_skipped(
        self, stack: tuple[dict[str, str], AssayProcess, Path]
    ) -> None:
        """One log line names each bad line (file, line number, why); the good one counts."""
        targets, planner, path = stack
        line = eventually(
            lambda: planner.log_line(event="observations_skipped"),
            message="the planner names the skipped lines",
        )
        assert line["skipped"] == 3
        assert line["lines"][0].startswith(f"{path}:2: not JSON")
        assert line["lines"][1] == f"{path}:3: probe: unknown probe kind 'PROBE_KIND_TELEPATHY'"
        assert line["lines"][2] == f"{path}:4: longer than 1024 bytes"
        rerun = probes_json(targets["planner"])["RERUN_TEST"]["observedCost"]
        assert rerun["acquisitions"] == 1
        assert rerun["minimumAcquisitions"] == 20
        assert "measured" not in rerun  # false: proto JSON leaves it out

    def test_an_executor_run_is_recorded_read_and_shown(
        self, stack: tuple[dict[str, str], AssayProcess, Path], tmp_path: Path
    ) -> None:
        """A hash check settles a conflicted digest; its line reaches the running planner
        without a restart; ``assay probes`` prints declared beside observed and
        ``--judgement`` the HIGH row as insufficient (one acquisition)."""
        targets, _, path = stack
        artifact = tmp_path / "build.bin"
        artifact.write_bytes(b"the build")
        digest = hashlib.sha256(b"the build").hexdigest()
        evidence = tmp_path / "evidence.json"
        evidence.write_text(
            json.dumps(
                [
                    {"id": c, "subject": "artifact:build", "predicate": "artifact.sha256",
                     "value": v, "source": s, "confidence": conf, "correlationGroup": c}
                    for c, v, s, conf in (
                        ("doc", digest, "documentation", 0.6),
                        ("llm", "0" * 64, "llm_inference", 0.9),
                    )
                ]
            )
        )  # fmt: skip
        done = run(
            "executor", "run", str(evidence), *TARGET, "--json",
            *(f"--{name}={target}" for name, target in targets.items()),
            "--grant", "FILESYSTEM_READ", "--artifact", str(artifact),
            "--observations", str(path), "--timeout", "10",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["steps"][0]["acquisition"]["probe"] == "VERIFY_ARTIFACT_HASH"
        assert report["stopReason"] == "RESOLVED"
        recorded = json.loads(path.read_text().splitlines()[-1])
        assert recorded["probe"] == "VERIFY_ARTIFACT_HASH"
        assert recorded["decisionChanged"] is True

        def counted() -> dict[str, Any] | None:
            found = probes_json(targets["planner"])["VERIFY_ARTIFACT_HASH"]
            return found if found["observedCost"].get("acquisitions") == 1 else None

        spec = eventually(counted, message="the running planner reads the new line")
        (high, *_) = spec["discriminationChecks"]
        assert recorded["predicted"] == "HIGH"
        assert high["predicted"] == "DISCRIMINATION_HIGH"
        assert high["acquisitions"] == 1
        assert high["decisionChanges"] == 1
        assert "decisionChangeRate" not in high

        table = run("probes", "--target", targets["planner"])
        assert table.returncode == 0, table.stderr
        assert "latency declared and observed" in table.stdout
        assert "insufficient" in table.stdout
        judged = run("probes", "--target", targets["planner"], "--judgement")
        assert judged.returncode == 0, judged.stderr
        rows = [line for line in judged.stdout.splitlines() if "verify_artifact_hash" in line]
        assert len(rows) == 1
        assert rows[0].split() == ["verify_artifact_hash", "high", "1", "1", "insufficient"]


class TestRefused:
    def test_a_file_others_may_write_stops_the_planner_with_exit_2(self, tmp_path: Path) -> None:
        """Group-writable: one line naming the file and its mode, exit 2, nothing listens."""
        path = tmp_path / "obs.jsonl"
        path.write_text("")
        path.chmod(0o664)
        done = run(*serve(path, free_port()))
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        lines = [x for x in done.stderr.splitlines() if not x.startswith("assay: WARNING")]
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("assay: cannot start planner: --observations ")
        assert f"{path}: mode 0664" in lines[0]
