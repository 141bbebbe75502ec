"""``assay serve planner --probes FILE`` with a bad file: refused at start, before listening,
with one line naming the file, the entry and the field."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import assay_command, free_port

pytestmark = pytest.mark.process

BAD = """\
[[probe]]
kind = "PROBE_KIND_RERUN_TEST"
targets = ["SIGNAL_CLASS_PROCESS_RESULT"]
side_effects = ["SIDE_EFFECT_CLASS_PROCESS_SPAWN"]
gaps = ["GAP_KIND_UNRESOLVED_CONFLICT"]
expected_source = "test_result"
cost = "COST_BAND_CHEAP"
latency = "LATENCY_BAND_SECONDS"
privacy = "PRIVACY_EXPOSURE_LOCAL_ONLY"
"""


def serve_with(path: Path, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(
            "serve", "planner", "--port", str(port), "--resolver", "127.0.0.1:1",
            "--probes", str(path),
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the dev-mode warning every unauthenticated start prints."""
    return [line for line in done.stderr.splitlines() if not line.startswith("assay: WARNING")]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class TestBadProbeFile:
    def test_one_line_names_the_file_entry_and_field(self, tmp_path: Path) -> None:
        """An unknown cost band: the process stops before listening, with one line naming
        ``probe[0].cost`` and the value, and no traceback."""
        path = tmp_path / "probes.toml"
        path.write_text(BAD, encoding="utf-8")
        port = free_port()
        done = serve_with(path, port)
        assert done.returncode != 0
        assert "Traceback" not in done.stderr, done.stderr
        lines = error_lines(done)
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("assay: cannot start planner: ")
        assert f"{path}: probe[0].cost: unknown value 'COST_BAND_CHEAP'" in lines[0]
        assert not listening(port)

    def test_a_good_file_is_accepted_by_the_same_command_line(self, tmp_path: Path) -> None:
        """Control: the same file with a valid cost gets past validation (so the failure
        above is the field's), here to the planner's start-up."""
        path = tmp_path / "probes.toml"
        path.write_text(BAD.replace("COST_BAND_CHEAP", "COST_BAND_LOW"), encoding="utf-8")
        port = free_port()
        proc = subprocess.Popen(
            assay_command(
                "serve", "planner", "--port", str(port), "--resolver", "127.0.0.1:1",
                "--probes", str(path),
            ),
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            # Until it says it serves, or stderr closes because it exited.
            for line in proc.stderr:
                assert "probe[" not in line, line
                if '"event": "serving"' in line:
                    break
            assert proc.poll() is None
            assert listening(port)
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    def test_exits_with_code_2(self, tmp_path: Path) -> None:
        """A configuration error is exit code 2, as docs/planner.md says."""
        path = tmp_path / "probes.toml"
        path.write_text(BAD, encoding="utf-8")
        assert serve_with(path, free_port()).returncode == 2
