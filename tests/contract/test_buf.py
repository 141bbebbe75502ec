"""The contract is pinned by buf: lint (STANDARD), format, and breaking-change detection.

``contract/assay-v1.binpb`` is the committed baseline image; ``buf breaking``
compares the working tree against it, so removing or renumbering a field fails
here until the baseline is deliberately regenerated (``just contract-baseline``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "contract" / "assay-v1.binpb"
pytestmark = pytest.mark.external


def buf() -> str:
    found = Path(sys.executable).parent / "buf"
    if found.exists():
        return str(found)
    which = shutil.which("buf")
    assert which is not None, "buf is not installed (pip install -e '.[test]' installs buf-bin)"
    return which


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [buf(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


class TestBuf:
    def test_lint_is_clean(self) -> None:
        """buf lint with the STANDARD rules reports nothing."""
        result = run("lint")
        assert result.returncode == 0, result.stdout + result.stderr

    def test_format_is_clean(self) -> None:
        """buf format would change nothing."""
        result = run("format", "--diff", "--exit-code")
        assert result.returncode == 0, result.stdout + result.stderr

    def test_no_breaking_change_against_the_baseline(self) -> None:
        """The contract is wire- and source-compatible with the committed baseline image."""
        result = run("breaking", "--against", str(BASELINE))
        assert result.returncode == 0, result.stdout + result.stderr

    def test_breaking_change_is_detected(self, tmp_path: Path) -> None:
        """Deleting a field from a copy of the contract makes buf breaking fail."""
        shutil.copytree(ROOT / "proto", tmp_path / "proto")
        shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
        claim = tmp_path / "proto" / "assay" / "v1" / "claim.proto"
        text = claim.read_text()
        assert "  double confidence = 9;\n" in text
        claim.write_text(text.replace("  double confidence = 9;\n", ""))
        result = run("breaking", "--against", str(BASELINE), cwd=tmp_path)
        assert result.returncode != 0
        assert "confidence" in result.stdout + result.stderr
