"""ruff and mypy --strict over the hand-written code, run in the suite so CI enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.external


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


class TestQualityGates:
    def test_ruff_lint(self) -> None:
        """ruff check finds nothing."""
        result = run(str(BIN / "ruff"), "check", ".")
        assert result.returncode == 0, result.stdout + result.stderr

    def test_ruff_format(self) -> None:
        """ruff format would change nothing."""
        result = run(str(BIN / "ruff"), "format", "--check", ".")
        assert result.returncode == 0, result.stdout + result.stderr

    def test_mypy_strict(self) -> None:
        """mypy --strict is clean on src, tests, bench and tools (generated code excluded)."""
        result = run(str(BIN / "mypy"), "--strict")
        assert result.returncode == 0, result.stdout + result.stderr
