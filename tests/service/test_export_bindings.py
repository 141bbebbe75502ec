"""``assay audit verify-export`` proves every field of every kind of exported record offline:
one field edited in one record of a real export fails with exit 3, naming the record and the
field; the untouched export verifies; an export without the bindings says what it cannot
prove instead of passing."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.cli.main import main as cli
from tests.service.adjudication_support import adjudication_server, ledger_key
from tests.service.export_tamper import KINDS, Export, edited, exported, write
from tests.service.test_adjudication_v1_fixture import v1_db

__all__ = ["v1_db"]  # the fixture, shared

# (path of the edited field, the field verify-export names). Event fields no other field
# holds (occurTime, previousHash, a payload key the record cannot restate) are named as the
# event, whose message lists them.
FIELDS: list[tuple[str, str]] = [
    *[
        (f"revision.{name}", f"revision.{name}")
        for name in (
            "caseId",
            "revision",
            "previousRevision",
            "round",
            "tenant",
            "basis",
            "label",
            "labelKey",
            "adjudicatorReviewerId",
            "provenance",
            "freezeTime",
            "digest",
            "digestVersion",
        )
    ],
    ("revision.contributingReviewIds[0]", "revision.contributingReviewIds"),
    ("revision.contributingReviewerIds[0]", "revision.contributingReviewerIds"),
    ("revisionDigested", "revisionDigested"),
    *[(f"case.{name}", f"case.{name}") for name in ("caseId", "subject", "predicate", "context")],
    ("case.round", "case.round"),
    ("case.candidateValues[1]", "case.candidateValues"),
    ("case.evidenceRefs[1]", "case.evidenceRefs"),
    *[
        (f"caseBinding.fieldDigests.{key}", "caseBinding.fieldDigests")
        for key in (
            "case_id",
            "subject",
            "predicate",
            "candidate_values",
            "evidence_refs",
            "context",
        )
    ],
    ("caseBinding.enqueued.event.payload.content", "caseBinding.enqueued.event"),
    ("caseBinding.enqueued.event.payload.expire_time", "caseBinding.enqueued.event"),
    *[
        (f"caseBinding.enqueued.event.payload.{key}", f"caseBinding.enqueued.event.payload.{key}")
        for key in ("case_id", "tenant", "shown")
    ],
    *[
        (f"inclusion.event.payload.{key}", f"inclusion.event.payload.{key}")
        for key in ("case_id", "revision", "digest", "provenance")
    ],
    *[
        (f"{where}.reviewId", f"{where}.reviewId")
        for where in ("reviews[0]", "reviews[1]", "reviewBindings[1]")
    ],
    *[
        (f"reviews[1].{name}", f"reviews[1].{name}")
        for name in ("caseId", "reviewerId", "round", "outcome", "labelKey", "reason", "submitTime")
    ],
    ("reviews[0].label", "reviews[0].label"),
    *[
        (f"reviews[{i}].{name}", f"reviews[{i}].{name}")
        for i in (0, 1)
        for name in ("rationale", "supersedesReviewId", "superseded")
    ],
    ("rationale", "rationale"),
    *[
        (f"claims[{i}].{name}", "claims")
        for i in (0, 1)
        for name in (
            "claimId",
            "sourceKind",
            "value",
            "confidence",
            "correlationGroup",
            "observeTime",
        )
    ],
    ("spotCheckRate", "spotCheckRate"),
    *[
        (f"caseBinding.enqueued.event.payload.{key}", f"caseBinding.enqueued.event.payload.{key}")
        for key in ("claims", "spot_check_rate")
    ],
    *[
        (f"resolved.event.payload.{key}", f"resolved.event.payload.{key}")
        for key in ("case_id", "round", "rationale")
    ],
    *[
        (f"resolved.event.payload.{key}", "resolved.event")
        for key in (
            "basis",
            "label",
            "adjudicator_reviewer_id",
            "review_ids",
            "resolve_time",
        )
    ],
    ("reviewBindings[0].answerOpening", "reviewBindings[0].answerOpening"),
    *[
        (
            f"reviewBindings[0].submitted.event.payload.{key}",
            f"reviewBindings[0].submitted.event.payload.{key}",
        )
        for key in (
            "review_id",
            "case_id",
            "reviewer_id",
            "round",
            "answer",
            "submit_time",
            "supersedes",
        )
    ],
]
# Every ledger event of a record, edited the same ways wherever it is.
for event in ("inclusion", "caseBinding.enqueued", "reviewBindings[1].submitted", "resolved"):
    FIELDS += [
        (f"{event}.event.sequence", f"{event}.event.sequence"),
        (f"{event}.event.eventType", f"{event}.event.eventType"),
        (f"{event}.event.occurTime", f"{event}.event"),
        (f"{event}.event.previousHash", f"{event}.event"),
        (f"{event}.event.hash", f"{event}.event.hash"),
        (f"{event}.leafIndex", f"{event}.leafIndex"),
        (f"{event}.inclusionPath[0]", f"{event}.inclusionPath"),
    ]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Export:
    """One real export of the three kinds of label, shared by the module (each test edits a
    copy)."""
    return exported(tmp_path_factory.mktemp("export"))


def verify(export: Export, corpus: Path, *flags: str) -> int:
    return cli(
        ["audit", "verify-export", str(corpus), "--public-key", str(export.public_key), *flags]
    )


class TestUntouchedExport:
    def test_verifies_with_nothing_unproven(
        self, export: Export, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every record of every kind proves, and nothing is left unproven."""
        assert verify(export, export.corpus, "--json") == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["ok"], result["records"], result["unproven"]) == (True, 3, [])

    def test_the_table_edits_every_field_the_export_has(self, export: Export) -> None:
        """Every leaf of every record (list positions aside) is a row of ``FIELDS``, so a
        field added to the export without a row here fails."""
        covered = {re.sub(r"\[\d+\]", "[]", path) for path, _ in FIELDS}
        found = {
            re.sub(r"\[\d+\]", "[]", leaf) for r in export.lines.values() for leaf in leaves(r)
        }
        assert found <= covered, sorted(found - covered)

    def test_every_record_carries_its_bindings(self, export: Export) -> None:
        """Each record binds its label, its case and each of its reviews to the ledger."""
        for kind in KINDS:
            record = export.lines[kind]
            assert record["revisionDigested"]
            assert len(record["caseBinding"]["fieldDigests"]) == 6
            assert len(record["reviewBindings"]) == len(record["reviews"]) >= 2


class TestBothEngines:
    def test_an_export_with_reviews_proves_every_field(
        self, adjudication_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """SQLite and PostgreSQL export the same bindings: every record verifies with nothing
        unproven, and a changed subject is refused naming it."""
        export = exported(tmp_path, adjudication_db)
        capsys.readouterr()  # what the export printed
        assert verify(export, export.corpus, "--json") == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["records"], result["unproven"]) == (3, [])
        record = edited(export.lines["adjudicated"], "case.subject")
        corpus = write(export, {"adjudicated": record}, tmp_path / "edited.jsonl")
        assert verify(export, corpus) == 3
        assert ": case.subject: " in capsys.readouterr().err


class TestEveryFieldEdited:
    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize(("path", "named"), FIELDS, ids=[path for path, _ in FIELDS])
    def test_fails_naming_record_and_field(
        self,
        export: Export,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        kind: str,
        path: str,
        named: str,
    ) -> None:
        """One field of one record changed: exit 3, one line naming the record and field."""
        record = export.lines[kind]
        corpus = write(export, {kind: edited(record, path)}, tmp_path / "edited.jsonl")
        capsys.readouterr()
        assert verify(export, corpus) == 3
        (line,) = capsys.readouterr().err.strip().splitlines()
        number = export.order.index(kind) + 1
        # The record as the file names it (the edit may be its case id or revision).
        assert line.startswith(f"assay: {corpus}:{number}: case "), line
        assert f": {named}: " in line, line
        leaf = path.rsplit(".", 1)[-1].split("[")[0]
        if named != path.split("[")[0] and not path.startswith(named + "["):
            assert leaf in line, line  # a field named through its event or opening is listed


def leaves(node: Any, path: str = "") -> Iterator[str]:
    """The path of every scalar in ``node`` (``reviews[1].reason``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, f"{path}[{i}]")
    else:
        yield path


def stripped(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``record`` as an export made before ``keys`` existed had it."""
    return {key: value for key, value in record.items() if key not in keys}


class TestWholeFile:
    def test_a_record_repeated_in_place_of_another_is_refused(
        self, export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Each record proves on its own, so one copied over another keeps the count and every
        proof: the second copy is refused, naming its line and the first."""
        first = export.order[0]
        other = next(kind for kind in export.order if kind != first)
        corpus = write(export, {other: export.lines[first]}, tmp_path / "repeated.jsonl")
        capsys.readouterr()
        assert verify(export, corpus) == 3
        (line,) = capsys.readouterr().err.strip().splitlines()
        number = export.order.index(other) + 1
        assert f"{corpus}:{number}: " in line, line
        assert "revision.caseId: line 1 is a record of this case too" in line, line


class TestWhatCannotBeProven:
    @pytest.mark.parametrize(
        ("keys", "named"),
        [
            (("caseBinding",), ": case.subject, case.predicate, case.candidateValues"),
            (("reviewBindings",), ": reviews: cannot be proven"),
            (("caseBinding", "reviewBindings"), "case.subject"),
        ],
    )
    def test_a_record_without_bindings_is_refused_unless_accepted(
        self,
        export: Export,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        keys: tuple[str, ...],
        named: str,
    ) -> None:
        """Bindings missing (an older export, or stripped): exit 3 naming the fields, and
        with --allow-unproven exit 0 listing them as not proven, never a silent pass."""
        record = stripped(export.lines["adjudicated"], *keys)
        corpus = write(export, {"adjudicated": record}, tmp_path / "old.jsonl")
        capsys.readouterr()
        assert verify(export, corpus) == 3
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert named in line, line
        assert "--allow-unproven" in line, line
        assert verify(export, corpus, "--allow-unproven", "--json") == 0
        result = json.loads(capsys.readouterr().out)
        assert {field for gap in result["unproven"] for field in gap["fields"]} >= {
            "case.subject" if "caseBinding" in keys else "reviews"
        }
        assert verify(export, corpus, "--allow-unproven") == 0
        assert "not proven in 1 place(s)" in capsys.readouterr().out

    def test_an_accepted_record_still_fails_on_an_edit_it_can_prove(
        self, export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--allow-unproven accepts missing bindings, not edits: a changed label still fails."""
        record = edited(stripped(export.lines["unanimous"], "caseBinding"), "revision.label")
        corpus = write(export, {"unanimous": record}, tmp_path / "old.jsonl")
        capsys.readouterr()
        assert verify(export, corpus, "--allow-unproven") == 3
        assert ": revision.label: " in capsys.readouterr().err

    @pytest.mark.parametrize("path", ["revision.basis", "revision.freezeTime", "revision.label"])
    def test_a_revision_without_its_digested_text_is_still_proven(
        self, export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str
    ) -> None:
        """Without revisionDigested the digest still proves every field (exit 0 untouched,
        nothing unproven); an edit fails, named as the revision when the field is digested."""
        record = stripped(export.lines["adjudicated"], "revisionDigested")
        corpus = write(export, {"adjudicated": record}, tmp_path / "old.jsonl")
        assert verify(export, corpus) == 0
        corpus = write(export, {"adjudicated": edited(record, path)}, tmp_path / "edited.jsonl")
        capsys.readouterr()
        assert verify(export, corpus) == 3
        expected = ": revision.label: " if path == "revision.label" else ": revision: one of"
        assert expected in capsys.readouterr().err

    def test_an_old_ledger_is_verified_and_its_gaps_reported(
        self, v1_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The checked-in database written before cases' shown content was recorded exports
        records that verify (v1 digests included) and lists what its ledger never committed
        to, as not proven, without refusing them: no export can supply it."""
        corpus = tmp_path / "v1.jsonl"

        async def export_it() -> int:
            async with adjudication_server(v1_db) as server:
                args = ["export", "--reviews", "--out", str(corpus), "--target", server.target]
                return await asyncio.to_thread(cli, args)

        assert asyncio.run(export_it()) == 0
        pem = tmp_path / "v1.pub.pem"
        assert cli(["audit", "public-key", "--key", str(ledger_key(v1_db))]) == 0
        pem.write_text(capsys.readouterr().out)
        args = ["audit", "verify-export", str(corpus), "--public-key", str(pem), "--json"]
        assert cli(args) == 0
        result = json.loads(capsys.readouterr().out)
        records = [json.loads(line) for line in corpus.read_text().splitlines()]
        assert {r["revision"]["digestVersion"] for r in records} == {"assay.gold.v1"}
        assert result["records"] == len(records) >= 2
        gaps = {(gap["where"], tuple(gap["fields"])) for gap in result["unproven"]}
        shown = ("case.subject", "case.predicate", "case.candidateValues")
        for number, record in enumerate(records, start=1):
            where = f"{corpus}:{number}: case {record['revision']['caseId']} revision "
            where += str(record["revision"]["revision"])
            assert any(w == where and set(shown) <= set(f) for w, f in gaps), where
        assert all("before the ledger recorded" in gap["why"] for gap in result["unproven"]
                   if gap["fields"][0].startswith("case."))  # fmt: skip
