"""``assay case list`` and ``assay audit events``' filters through a real ``assay serve``.

The reviewers are test data: fixture reviewers, and one "human" whose attestation says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import TargetCli, assay_process, free_port

pytestmark = pytest.mark.process
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "adjudication" / "case-idempotency.json"
ATTESTATION = "assay test suite (test data, not a person)"
RFC3339 = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b")


class Cli(TargetCli):
    def ids(self, *args: str, key: str = "cases", field: str = "caseId") -> list[Any]:
        return [item[field] for item in self.json(*args).get(key, [])]


class TestFindingWork:
    def test_case_list_and_audit_event_filters(self, tmp_path: Path) -> None:
        """Every flag of ``case list`` narrows the listing as it says, tables show RFC 3339
        times, and ``audit events`` filters by type, case and time, newest first."""
        port = free_port()
        args = ["serve", "adjudication", "--port", str(port), "--db", str(tmp_path / "a.db")]
        with assay_process(args, tmp_path / "server.log", port) as proc:
            cli = Cli(proc.target)
            for name in ("fx-ann", "fx-bob"):
                cli.run("reviewer", "add", name, "--kind", "fixture")
            made = [
                cli.json("case", "enqueue", str(EXAMPLE), "--request-id", f"r{n}")["caseId"]
                for n in range(3)
            ]
            cli.run("review", made[1], "--reviewer", "fx-ann", "--label", "key")
            cli.run("review", made[1], "--reviewer", "fx-bob", "--label", "none")

            assert cli.ids("case", "list") == made
            assert cli.ids("case", "list", "--state", "disagreed") == [made[1]]
            assert cli.ids("case", "list", "--state", "awaiting-review", "--newest") == [
                made[2],
                made[0],
            ]
            assert cli.ids("case", "list", "--newest", "--limit", "2") == made[:0:-1]
            assert cli.ids("case", "list", "--all") == made
            assert (
                cli.ids("case", "list", "--since", "1h", "--until", "2099-01-01T00:00:00Z") == made
            )
            assert cli.ids("case", "list", "--until", "2000-01-01T00:00:00+02:00") == []
            assert cli.ids("case", "list", "--predicate", "no.such.predicate") == []
            assert cli.ids("case", "list", "--assigned", "h-cy") == []
            cli.run("reviewer", "add", "h-cy", "--kind", "human", "--attested-by", ATTESTATION)
            cli.run("case", "assign", made[2], "--to", "h-cy")
            assert cli.ids("case", "list", "--assigned", "h-cy") == [made[2]]
            assigned = cli.run("case", "list", "--assigned", "h-cy", "-o", "wide").stdout
            assert "assigned" in assigned
            assert "h-cy" in assigned

            table = cli.run("case", "list", "--state", "disagreed", "-o", "wide").stdout
            assert made[1] in table
            assert "DISAGREED" in table
            assert "2/2" in table
            assert RFC3339.search(table), table

            empty = cli.run("case", "list", "--predicate", "no.such.predicate").stdout
            assert empty.strip() == "no cases match"

            bad = cli.run("case", "list", "--since", "yesterday", ok=False)
            assert bad.returncode == 2
            assert "RFC 3339" in bad.stderr
            assert "Traceback" not in bad.stderr

            reviews = cli.ids(
                "audit", "events", "--type", "review-submitted", key="events", field="sequence"
            )
            assert len(reviews) == 2
            newest = cli.json("audit", "events", "--case", made[1], "--newest")["events"]
            assert [e["eventType"] for e in newest] == [
                "AUDIT_EVENT_TYPE_REVIEW_SUBMITTED",
                "AUDIT_EVENT_TYPE_REVIEW_SUBMITTED",
                "AUDIT_EVENT_TYPE_CASE_ENQUEUED",
            ]
            assert cli.json("audit", "events", "--since", "2099-01-01T00:00:00Z") == {}
            events = cli.run("audit", "events", "--type", "case-enqueued", "-o", "wide").stdout
            assert RFC3339.search(events), events
