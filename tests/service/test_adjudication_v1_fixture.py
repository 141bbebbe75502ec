"""A database written before RFC 8785 (the checked-in fixture, v1 digests, schema V4) opens
on today's code: its records still verify in their own form, new records are JCS (v2) and
their digests are recomputed here with nothing but ``rfc8785`` and ``hashlib``, a round
half-reviewed before the upgrade still agrees, and every edit of either version is caught.
See tests/fixtures/adjudication/README.md for how the fixture was made."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
import rfc8785
from google.protobuf import json_format, struct_pb2

from assay.services.adjudication.storage.sqlite.schema import SCHEMA_VERSION
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    Server,
    adjudication_server,
    failure,
    rid,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "adjudication"


@pytest.fixture
def v1_db(tmp_path: Path) -> Path:
    """A private copy of the fixture database and its checkpoint signing key."""
    path = tmp_path / "v1.db"
    shutil.copyfile(FIXTURE / "v1.db", path)
    shutil.copyfile(FIXTURE / "v1.db.ledger-key.pem", tmp_path / "v1.db.ledger-key.pem")
    (tmp_path / "v1.db.ledger-key.pem").chmod(0o600)
    path.chmod(0o600)
    return path


def raw(path: Path, sql: str, *params: object) -> list[Any]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


@contextmanager
def attacker(path: Path) -> Iterator[sqlite3.Connection]:
    """A raw connection with the guarding triggers dropped, recreated on the way out."""
    db = sqlite3.connect(path, isolation_level=None)
    triggers = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    try:
        for name, _ in triggers:
            db.execute(f"DROP TRIGGER {name}")
        yield db
        for _, sql in triggers:
            db.execute(sql)
    finally:
        db.close()


def jcs_sha256(value: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def as_value(data: Any) -> struct_pb2.Value:
    return json_format.ParseDict(data, struct_pb2.Value())


def plain(value: struct_pb2.Value) -> Any:
    return json_format.MessageToDict(value)


def micros(stamp: Any) -> str:
    return str(stamp.ToDatetime().strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def gold_object(revision: gold_pb2.GoldLabelRevision) -> dict[str, Any]:
    """The documented digested object of a gold label, rebuilt from the message."""
    return {
        "v": "assay.gold.v2",
        "case_id": revision.case_id,
        "revision": revision.revision,
        "previous_revision": revision.previous_revision,
        "round": revision.round,
        "tenant": revision.tenant,
        "basis": gold_pb2.ResolutionBasis.Name(revision.basis).removeprefix("RESOLUTION_BASIS_"),
        "label_key": revision.label_key,
        "contributing_review_ids": list(revision.contributing_review_ids),
        "contributing_reviewer_ids": list(revision.contributing_reviewer_ids),
        "adjudicator_reviewer_id": revision.adjudicator_reviewer_id,
        "provenance": gold_pb2.LabelingProvenance.Name(revision.provenance).removeprefix(
            "LABELING_PROVENANCE_"
        ),
        "freeze_time": micros(revision.freeze_time),
    }


def case_object(case: pb.Case) -> dict[str, Any]:
    """The documented digested object of a v2 case, rebuilt from the message."""
    return {
        "v": "assay.case.v2",
        "case_id": case.case_id,
        "tenant": case.tenant,
        "subject": case.subject,
        "predicate": case.predicate,
        "candidate_values": [plain(v) for v in case.candidate_values],
        "evidence_refs": list(case.evidence_refs),
        "context": case.context,
        "local_verdict": plain(case.local_verdict),
        "lineage": {"origin": case.lineage.origin, "origin_ref": case.lineage.origin_ref},
        "create_time": micros(case.create_time),
        "expire_time": micros(case.expire_time),
    }


async def all_gold(server: Server) -> list[gold_pb2.GoldLabelRevision]:
    reply = await server.stub.ListGoldLabelRevisions(
        pb.ListGoldLabelRevisionsRequest(page_size=100), timeout=TIMEOUT
    )
    return list(reply.revisions)


async def verified(server: Server) -> None:
    verdict = await server.stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
    assert verdict.ok, verdict


async def review(
    server: Server, case_id: str, reviewer: str, label: Any
) -> pb.SubmitReviewResponse:
    request = pb.SubmitReviewRequest(
        request_id=rid(), case_id=case_id, reviewer_id=reviewer, outcome=pb.REVIEW_OUTCOME_LABEL
    )
    request.label.CopyFrom(as_value(label))
    reply: pb.SubmitReviewResponse = await server.stub.SubmitReview(request, timeout=TIMEOUT)
    return reply


async def resolve_and_freeze(server: Server, case_id: str) -> gold_pb2.GoldLabelRevision:
    await server.stub.ResolveCase(
        pb.ResolveCaseRequest(
            request_id=rid(), case_id=case_id, basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
        ),
        timeout=TIMEOUT,
    )
    reply = await server.stub.FreezeGoldLabel(
        pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
    )
    revision: gold_pb2.GoldLabelRevision = reply.revision
    return revision


class TestTheFixtureStillVerifies:
    async def test_every_record_reads_as_v1_with_its_digest_unchanged(self, v1_db: Path) -> None:
        """Migrated to the current schema; the chain verifies; each label and case is v1 with
        its old digest."""
        gold_before = dict(
            ((c, r), d)
            for c, r, d in raw(v1_db, "SELECT case_id, revision, digest FROM gold_labels")
        )
        cases_before = dict(raw(v1_db, "SELECT case_id, content_digest FROM cases"))
        assert len(gold_before) == 5
        assert len(cases_before) == 6
        assert raw(v1_db, "PRAGMA user_version") == [(4,)]
        async with adjudication_server(v1_db) as server:
            await verified(server)
            gold = await all_gold(server)
            assert {(g.case_id, g.revision): g.digest for g in gold} == gold_before
            assert {g.digest_version for g in gold} == {"assay.gold.v1"}
            for case_id, content in cases_before.items():
                reply = await server.stub.GetCase(pb.GetCaseRequest(case_id=case_id))
                assert reply.case.content_digest == content
                assert reply.case.content_digest_version == "assay.case.v1"
            exported = [
                m async for m in server.stub.ExportCorpus(pb.ExportCorpusRequest(), timeout=TIMEOUT)
            ]
            assert exported[-1].manifest.record_count == 3  # tenant-b's label has no case
        assert raw(v1_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


class TestNewRecordsAreJcs:
    async def test_a_new_case_and_label_digest_as_rfc8785(self, v1_db: Path) -> None:
        """A case enqueued after the upgrade is v2; its labels are v2; both digests are sha256
        of rfc8785.dumps of the documented object, recomputed here."""
        async with adjudication_server(v1_db) as server:
            case = pb.Case(
                tenant="tenant-a",
                subject="s",
                predicate="p",
                context="after the upgrade",
                lineage=pb.CaseLineage(origin="test"),
            )
            for value in (1e-7, 1.2345678901234568e20, {"\U0001f600": 1, "\ue000": 2}):
                case.candidate_values.append(as_value(value))
            case.local_verdict.number_value = 1e-7
            enqueued = await server.stub.EnqueueCase(
                pb.EnqueueCaseRequest(request_id=rid(), case=case), timeout=TIMEOUT
            )
            stored = enqueued.case
            assert stored.content_digest_version == "assay.case.v2"
            assert stored.content_digest == jcs_sha256(case_object(stored))
            label = {"\ue000": 2, "\U0001f600": 1}
            await review(server, stored.case_id, "human-1", label)
            await review(server, stored.case_id, "human-2", label)
            revision = await resolve_and_freeze(server, stored.case_id)
            assert revision.digest_version == "assay.gold.v2"
            assert revision.label_key == '{"\U0001f600":1,"\ue000":2}'
            assert revision.digest == jcs_sha256(gold_object(revision))
            await verified(server)


class TestARoundSpanningTheUpgrade:
    @pytest.mark.parametrize(
        ("old_key", "label", "new_key"),
        [
            ("1e-07", 1e-7, "1e-7"),
            (
                '{"plain":{"\U0001d11e":true},"\ufffd":1e-07,"\U00010000":[1e+21,"x"]}',
                {"\ufffd": 1e-7, "\U00010000": [1e21, "x"], "plain": {"\U0001d11e": True}},
                '{"plain":{"\U0001d11e":true},"\U00010000":[1e+21,"x"],"\ufffd":1e-7}',
            ),
        ],
    )
    async def test_a_second_review_after_the_upgrade_agrees_with_the_first(
        self, v1_db: Path, old_key: str, label: Any, new_key: str
    ) -> None:
        """A review stored as v1 and one stored as JCS on the same value make an agreed
        round, resolved unanimously and frozen as a v2 label in JCS form."""
        waiting = raw(
            v1_db,
            "SELECT case_id FROM reviews GROUP BY case_id "
            "HAVING COUNT(*) = 1 AND MAX(label_key) = ?",
            old_key,
        )
        assert len(waiting) == 1
        case_id = waiting[0][0]
        async with adjudication_server(v1_db) as server:
            reply = await review(server, case_id, "human-2", label)
            assert reply.state == pb.CASE_STATE_AGREED
            revision = await resolve_and_freeze(server, case_id)
            assert revision.label_key == new_key
            assert revision.digest_version == "assay.gold.v2"
            assert revision.digest == jcs_sha256(gold_object(revision))
            await verified(server)
        keys = raw(v1_db, "SELECT label_key FROM reviews WHERE case_id = ? ORDER BY rowid", case_id)
        assert keys == [(old_key,), (new_key,)]  # the round really mixed both spellings

    async def test_a_resolution_stored_before_freezes_as_v2(self, v1_db: Path) -> None:
        """The adjudicated round resolved before the upgrade freezes now, label re-spelled."""
        (case_id,) = raw(
            v1_db,
            "SELECT r.case_id FROM resolutions r WHERE NOT EXISTS "
            "(SELECT 1 FROM gold_labels g WHERE g.case_id = r.case_id)",
        )[0]
        async with adjudication_server(v1_db) as server:
            reply = await server.stub.FreezeGoldLabel(
                pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
            )
            revision = reply.revision
            assert revision.label_key == '{"\U0001f600":"astral","\ue000":"private use"}'
            assert revision.digest == jcs_sha256(gold_object(revision))
            await verified(server)


class TestEditsOfEitherVersion:
    @pytest.mark.parametrize(
        "edit",
        [
            "UPDATE gold_labels SET provenance = CASE provenance WHEN 'HUMAN_ADJUDICATED' "
            "THEN 'SYNTHETIC_MECHANISM_TEST' ELSE 'HUMAN_ADJUDICATED' END",
            "UPDATE gold_labels SET label_key = '5e-324'",
            "UPDATE gold_labels SET digest_version = '{other}'",
            "UPDATE gold_labels SET digest_version = 'assay.gold.v9'",
        ],
    )
    @pytest.mark.parametrize("version", ["assay.gold.v1", "assay.gold.v2"])
    async def test_an_edited_gold_label_is_data_loss(
        self, v1_db: Path, edit: str, version: str
    ) -> None:
        """Any edit of a v1 or a v2 label — its content or its version — fails the read."""
        async with adjudication_server(v1_db) as server:
            waiting = raw(
                v1_db,
                "SELECT case_id FROM reviews GROUP BY case_id HAVING MAX(label_key) = '1e-07'"
                " AND COUNT(*) = 1",
            )[0][0]
            await review(server, waiting, "human-2", 1e-7)
            await resolve_and_freeze(server, waiting)
        other = {"assay.gold.v1": "assay.gold.v2", "assay.gold.v2": "assay.gold.v1"}[version]
        with attacker(v1_db) as db:
            changed = db.execute(
                edit.format(other=other) + " WHERE rowid = (SELECT MIN(rowid) FROM gold_labels "
                "WHERE digest_version = ? AND label_key <> '')",
                (version,),
            ).rowcount
        assert changed == 1
        async with adjudication_server(v1_db) as server:
            error = await failure(
                server.stub.ListGoldLabelRevisions(
                    pb.ListGoldLabelRevisionsRequest(page_size=100), timeout=TIMEOUT
                )
            )
            assert error.code == grpc.StatusCode.DATA_LOSS

    @pytest.mark.parametrize(
        "edit",
        [
            "UPDATE cases SET subject = 'edited' WHERE case_id = ?",
            "UPDATE cases SET candidate_values = '[1e-7, \"none\"]' WHERE case_id = ?",
            "UPDATE cases SET digest_version = '{other}' WHERE case_id = ?",
            "UPDATE cases SET digest_version = '' WHERE case_id = ?",
        ],
    )
    @pytest.mark.parametrize("version", ["assay.case.v1", "assay.case.v2"])
    async def test_an_edited_case_is_data_loss(self, v1_db: Path, edit: str, version: str) -> None:
        """Any edit of a v1 or a v2 case — content or version — fails GetCase."""
        async with adjudication_server(v1_db) as server:
            case = pb.Case(
                tenant="tenant-a", subject="s", predicate="p", lineage=pb.CaseLineage(origin="t")
            )
            case.candidate_values.add().number_value = 1e-7
            case.local_verdict.number_value = 1e-7
            await server.stub.EnqueueCase(
                pb.EnqueueCaseRequest(request_id=rid(), case=case), timeout=TIMEOUT
            )
        case_id = raw(
            v1_db, "SELECT case_id FROM cases WHERE digest_version = ? ORDER BY case_id", version
        )[0][0]
        other = {"assay.case.v1": "assay.case.v2", "assay.case.v2": "assay.case.v1"}[version]
        with attacker(v1_db) as db:
            assert db.execute(edit.format(other=other), (case_id,)).rowcount == 1
        async with adjudication_server(v1_db) as server:
            error = await failure(server.stub.GetCase(pb.GetCaseRequest(case_id=case_id)))
            assert error.code == grpc.StatusCode.DATA_LOSS
