"""What the quick start writes in a checkout stays out of commits: `assay up`'s database, its
WAL and lock, the ledger's signing key, and `assay dev-credentials ./creds`. Checked with
git's own matcher (`git check-ignore`), on the paths the commands really write."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = (
    "assay.db",
    "assay.db-wal",
    "assay.db-shm",
    "assay.db.lock",
    "assay.db.ledger-key.pem",
    "creds/ca.pem",
    "creds/tokens/operator.jwt",
    "creds/server.key",
)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("path", WRITTEN)
def test_the_quick_starts_files_are_ignored(path: str) -> None:
    found = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert found.returncode == 0, f"{path} is not ignored: {found.stderr}"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_sources_are_not_ignored() -> None:
    """The rules are narrow: sources and docs are not caught by them."""
    for path in ("src/assay/__init__.py", "README.md"):
        found = subprocess.run(
            ["git", "check-ignore", "--no-index", "-q", path],
            cwd=ROOT,
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert found.returncode == 1, path
