"""The transparency log from an auditor's shell: ``assay audit public-key``, ``checkpoint``,
``verify --since`` and ``verify-export`` against real ``assay serve`` processes — including a
second server that holds the same key but another history, which ``verify --since`` refuses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from assay.tlog.checkpoint import load_or_create_signing_key
from tests.support.processes import assay_command, assay_process, free_port

pytestmark = pytest.mark.process


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args), capture_output=True, text=True, timeout=60, check=False
    )


def ok(*args: str) -> str:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def failed_line(done: subprocess.CompletedProcess[str]) -> str:
    """A failed verification: exit 3 (not 2, a usage error) and one line, no traceback."""
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def serve(tmp_path: Path, db: str, key: Path) -> tuple[list[str], Path, int]:
    port = free_port()
    args = ["serve", "adjudication", "--port", str(port), "--db", str(tmp_path / db)]
    return [*args, "--ledger-signing-key", str(key)], tmp_path / f"{db}.log", port


def add_reviewers(target: str, *names: str) -> None:
    for name in names:
        ok("reviewer", "add", name, "--kind", "fixture", "--target", target)


class TestAuditorWorkflow:
    def test_checkpoint_verify_since_export_and_a_rewritten_history(self, tmp_path: Path) -> None:
        """Consistent growth verifies; the same key over other events fails in one line."""
        key = tmp_path / "ledger-key.pem"
        saved = tmp_path / "saved.checkpoint"
        pub = tmp_path / "ledger.pub.pem"
        with assay_process(*serve(tmp_path, "a.db", key)) as proc:
            target = proc.target
            add_reviewers(target, "fx-a", "fx-b")
            pub.write_text(ok("audit", "public-key", "--key", str(key)))
            assert ok("audit", "public-key", "--target", target) == pub.read_text()
            assert "BEGIN PUBLIC KEY" in pub.read_text()

            ok("audit", "checkpoint", "--out", str(saved), "--target", target)
            assert saved.read_text().startswith("assay.v1/adjudication/")
            add_reviewers(target, "fx-c", "fx-d")
            since = ("audit", "verify", "--since", str(saved), "--public-key", str(pub))
            report = json.loads(ok(*since, "--target", target, "--json"))
            assert report["ok"] is True
            assert report["to_size"] > report["from_size"] == 2

            corpus = tmp_path / "corpus.jsonl"
            ok("export", "--out", str(corpus), "--target", target)
            assert "export verified" in ok(
                "audit", "verify-export", str(corpus), "--public-key", str(pub)
            )

        manifest_path = tmp_path / "corpus.jsonl.manifest.json"
        manifest = json.loads(manifest_path.read_text())
        lines = manifest["checkpoint"].split("\n")
        lines[1] = str(int(lines[1]) - 1)  # claim a shorter log under the same signature
        manifest["checkpoint"] = "\n".join(lines)
        manifest_path.write_text(json.dumps(manifest))
        forged = run("audit", "verify-export", str(corpus), "--public-key", str(pub))
        assert "does not verify" in failed_line(forged)

        with assay_process(*serve(tmp_path, "b.db", key)) as proc:
            add_reviewers(proc.target, "fx-x", "fx-y", "fx-z")
            line = failed_line(run(*since, "--target", proc.target))
            assert "rewritten" in line

    def test_a_checkpoint_under_another_key_is_refused(self, tmp_path: Path) -> None:
        """A pinned key that did not sign the saved checkpoint fails verification."""
        saved = tmp_path / "saved.checkpoint"
        stranger = tmp_path / "stranger.pem"
        load_or_create_signing_key(stranger)
        other = tmp_path / "stranger.pub.pem"
        other.write_text(ok("audit", "public-key", "--key", str(stranger)))
        with assay_process(*serve(tmp_path, "a.db", tmp_path / "key.pem")) as proc:
            add_reviewers(proc.target, "fx-a")
            ok("audit", "checkpoint", "--out", str(saved), "--target", proc.target)
            done = run(
                "audit", "verify", "--since", str(saved), "--public-key", str(other),
                "--target", proc.target,
            )  # fmt: skip
        assert "no signature" in failed_line(done)
