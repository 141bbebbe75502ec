"""The local probes against real things: files to hash, git repositories, commands to run."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from assay.executor.local_probes import inspect_vcs_state, rerun_test, verify_artifact_hash
from assay.executor.model import Outcome

TARGET = ("c1", "subject:x", "predicate.y")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=15
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.org")
    git(path, "config", "user.name", "Test")
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "first")
    return path


class TestVerifyArtifactHash:
    def test_the_claim_asserts_the_observed_digest_and_reports_a_match(
        self, tmp_path: Path
    ) -> None:
        """The claim's value is sha256 of the file; the detail says it matches the claimed one."""
        artifact = tmp_path / "app.tar.gz"
        artifact.write_bytes(b"release bytes")
        digest = "sha256:" + hashlib.sha256(b"release bytes").hexdigest()
        result = verify_artifact_hash(artifact, [f'"{digest}"', '"sha256:00"'], *TARGET)
        assert result.outcome is Outcome.OBSERVED
        assert result.claims[0].value.string_value == digest
        assert result.claims[0].source == "artifact_hash"
        assert "matches the claimed digest" in result.detail

    def test_a_different_file_matches_no_claim(self, tmp_path: Path) -> None:
        """A file whose bytes changed observes a digest no claim asserted."""
        artifact = tmp_path / "app.tar.gz"
        artifact.write_bytes(b"tampered")
        result = verify_artifact_hash(artifact, ['"sha256:00"'], *TARGET)
        assert "matches no claimed digest" in result.detail
        assert result.claims[0].value.string_value.startswith("sha256:")

    def test_a_missing_file_is_a_failed_observation(self, tmp_path: Path) -> None:
        """No file, no claim: the probe never guesses."""
        result = verify_artifact_hash(tmp_path / "absent", [], *TARGET)
        assert result.outcome is Outcome.FAILED
        assert result.claims == ()


class TestInspectVcsState:
    def test_a_clean_repository(self, repo: Path) -> None:
        """Head, branch and cleanliness come from git; the claim asserts the chosen field."""
        result = inspect_vcs_state(repo, "head", *TARGET)
        assert result.outcome is Outcome.OBSERVED
        assert result.claims[0].value.string_value == git(repo, "rev-parse", "HEAD")
        assert result.claims[0].source == "vcs_state"
        assert "main" in result.detail
        assert "clean" in result.detail

    @pytest.mark.parametrize("change", ["modify", "untracked"])
    def test_changes_make_it_unclean(self, repo: Path, change: str) -> None:
        """A modified tracked file or a new untracked file makes ``clean`` false."""
        if change == "modify":
            (repo / "README").write_text("changed\n")
        else:
            (repo / "new.txt").write_text("new\n")
        result = inspect_vcs_state(repo, "clean", *TARGET)
        assert result.claims[0].value.bool_value is False

    def test_inspection_does_not_touch_the_index(self, repo: Path) -> None:
        """Read-only: the index file is byte-identical after an inspection."""
        (repo / "README").write_text("changed\n")
        before = (repo / ".git" / "index").read_bytes()
        inspect_vcs_state(repo, "clean", *TARGET)
        assert (repo / ".git" / "index").read_bytes() == before

    def test_not_a_repository_is_a_failed_observation(self, tmp_path: Path) -> None:
        """A directory that is not a git work tree yields no claim."""
        result = inspect_vcs_state(tmp_path, "head", *TARGET)
        assert result.outcome is Outcome.FAILED
        assert result.claims == ()


class TestRerunTest:
    def test_a_passing_command_asserts_true(self, tmp_path: Path) -> None:
        """Exit 0 is a pass; the claim's source is test_result."""
        result = rerun_test((sys.executable, "-c", "print('ok')"), tmp_path, 30, *TARGET)
        assert result.outcome is Outcome.OBSERVED
        assert result.claims[0].value.bool_value is True
        assert result.claims[0].source == "test_result"

    def test_a_failing_command_asserts_false(self, tmp_path: Path) -> None:
        """A non-zero exit is a failed test, observed: the claim says false."""
        code = "import sys; print('boom'); sys.exit(3)"
        result = rerun_test((sys.executable, "-c", code), tmp_path, 30, *TARGET)
        assert result.claims[0].value.bool_value is False
        assert "exit 3" in result.detail

    def test_a_timeout_is_a_failed_observation_not_a_failed_test(self, tmp_path: Path) -> None:
        """A command that outlives its timeout is stopped and yields no claim."""
        code = "import time; time.sleep(30)"
        result = rerun_test((sys.executable, "-c", code), tmp_path, 0.5, *TARGET)
        assert result.outcome is Outcome.FAILED
        assert "timed out" in result.detail
        assert result.claims == ()

    def test_it_runs_in_a_copy_of_the_worktree(self, tmp_path: Path) -> None:
        """The command sees the worktree's files but its writes never reach the original."""
        (tmp_path / "input.txt").write_text("data")
        code = (
            "import pathlib, sys; p = pathlib.Path('input.txt'); "
            "pathlib.Path('output.txt').write_text('x'); sys.exit(0 if p.read_text() == 'data' "
            "else 1)"
        )
        result = rerun_test((sys.executable, "-c", code), tmp_path, 30, *TARGET)
        assert result.claims[0].value.bool_value is True
        assert not (tmp_path / "output.txt").exists()

    def test_a_command_that_cannot_start_is_a_failed_observation(self, tmp_path: Path) -> None:
        """A missing executable yields no claim."""
        result = rerun_test(("/nonexistent/assay-test-binary",), tmp_path, 5, *TARGET)
        assert result.outcome is Outcome.FAILED
