"""The whole adjudication path through real processes: ``assay serve`` plus ``assay`` commands.

Register two human reviewers, enqueue, review blinded, disagree, adjudicate by a
third, freeze, export, verify. The "human" reviewers are explicit test data:
their attestation says so, and nothing here ships.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import TargetCli, assay_command, assay_process, free_port

pytestmark = pytest.mark.process
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "adjudication" / "case-idempotency.json"
ATTESTATION = "assay test suite (test data, not a person)"


class TestFullPath:
    def test_humans_disagree_third_adjudicates_freeze_export_verify(self, tmp_path: Path) -> None:
        """The documented walk-through, with every step through the real CLI and server."""
        port = free_port()
        db = tmp_path / "assay.db"
        args = ["serve", "adjudication", "--port", str(port), "--db", str(db)]
        with assay_process(args, tmp_path / "server.log", port) as proc:
            cli = TargetCli(proc.target)
            for name in ("h-ann", "h-bob", "h-cy"):
                cli.run("reviewer", "add", name, "--kind", "human", "--attested-by", ATTESTATION)
            refused = cli.run("reviewer", "add", "h-dan", "--kind", "human", ok=False)
            assert refused.returncode == 1
            assert "ERROR_REASON_HUMAN_REVIEWER_REQUIRES_ATTESTATION" in refused.stderr
            assert "Traceback" not in refused.stderr

            case_id = cli.json("case", "enqueue", str(EXAMPLE))["caseId"]
            queue = cli.json("queue", "--reviewer", "h-ann")
            assert [c["caseId"] for c in queue["cases"]] == [case_id]
            assert "localVerdict" not in json.dumps(queue), "the queue is blinded"

            cli.run("review", case_id, "--reviewer", "h-ann", "--label", "key")
            first = cli.json("review", case_id, "--reviewer", "h-bob", "--label", "key")
            assert first["state"] == "CASE_STATE_AGREED"
            # h-bob looks again before anyone decides: a new record replaces the first.
            state = cli.json(
                "amend", first["review"]["reviewId"], "--label", "none",
                "--rationale", "the v2 changelog says otherwise",
            )  # fmt: skip
            assert state["review"]["supersedesReviewId"] == first["review"]["reviewId"]
            assert state["state"] == "CASE_STATE_DISAGREED"
            again = cli.run("amend", first["review"]["reviewId"], "--label", "key", ok=False)
            assert "ERROR_REASON_REVIEW_SUPERSEDED" in again.stderr
            assert cli.json("queue", "--reviewer", "h-ann").get("cases", []) == []

            self_judged = cli.run(
                "case", "resolve", case_id, "--basis", "adjudicator",
                "--label", "none", "--adjudicator", "h-bob", ok=False,
            )  # fmt: skip
            assert "ERROR_REASON_ADJUDICATOR_IS_REVIEWER" in self_judged.stderr
            cli.run(
                "case", "resolve", case_id, "--basis", "adjudicator",
                "--label", "none", "--adjudicator", "h-cy",
                "--rationale", "the changelog is the newer source",
            )  # fmt: skip
            revision = cli.json("case", "freeze", case_id)["revision"]
            assert revision["provenance"] == "LABELING_PROVENANCE_HUMAN_ADJUDICATED"
            assert cli.json("case", "state", case_id)["state"] == "CASE_STATE_FROZEN"

            out = tmp_path / "corpus.jsonl"
            manifest = cli.json("export", "--out", str(out))
            lines = [json.loads(line) for line in out.read_text().splitlines()]
            assert [line["revision"]["digest"] for line in lines] == [revision["digest"]]
            assert lines[0]["rationale"] == "the changelog is the newer source"
            assert "localVerdict" not in out.read_text()
            assert manifest["recordCount"] == "1"
            assert manifest.get("containsSyntheticLabels", False) is False
            on_disk = json.loads((tmp_path / "corpus.jsonl.manifest.json").read_text())
            assert on_disk == manifest

            verified = cli.run("audit", "verify")
            assert "audit chain verified" in verified.stdout
            tables = cli.run("case", "revisions", case_id)
            assert "human" in tables.stdout

            proc.process.send_signal(signal.SIGTERM)
            assert proc.process.wait(timeout=30) == 0

    def test_bad_case_file_is_one_line(self, tmp_path: Path) -> None:
        """A malformed case file is reported in one line naming the file, not a traceback."""
        bad = tmp_path / "bad.json"
        bad.write_text('{"tenant": "t", "noSuchField": 1}')
        done = subprocess.run(
            assay_command("case", "enqueue", str(bad), "--target", "127.0.0.1:1"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        assert str(bad) in done.stderr
        assert "Traceback" not in done.stderr

    def test_unreadable_database_fails_to_start_cleanly(self, tmp_path: Path) -> None:
        """`assay serve adjudication` on a file that is not a database exits 1 with one line."""
        junk = tmp_path / "junk.db"
        junk.write_bytes(b"this is not sqlite" * 100)
        done = subprocess.run(
            assay_command("serve", "adjudication", "--port", str(free_port()), "--db", str(junk)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        assert "cannot start adjudication" in done.stderr
        assert "Traceback" not in done.stderr
