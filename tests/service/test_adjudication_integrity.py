"""The database itself: constraints and triggers, migrations, tampering, and group commit.

Tampering is done the way an attacker with the database would do it (``tamper_sql``: a
raw connection with the guards off), on both engines. The constraint and migration tests
are SQLite's own (its triggers, ``PRAGMA user_version``, WAL); PostgreSQL's counterparts are
in tests/unit/adjudication/test_postgres_store.py (TestMigrations, TestInsertOnly).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import grpc
import pytest

from assay.services.adjudication.storage import SchemaTooNew, Store
from assay.services.adjudication.storage.sqlite.schema import SCHEMA_VERSION
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    Server,
    adjudication_server,
    enqueue,
    failure,
    register,
    review,
    rid,
)
from tests.service.tamper_sql import edit, tampering


async def frozen_case(server: Server) -> str:
    """A case reviewed twice in agreement, resolved and frozen (revision 1)."""
    stub = server.stub
    for name in ("ann", "bob"):
        await register(stub, name)
    case = await enqueue(stub)
    for name in ("ann", "bob"):
        await review(stub, case.case_id, name, "key")
    await stub.ResolveCase(
        pb.ResolveCaseRequest(
            case_id=case.case_id, basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
        )
    )
    await stub.FreezeGoldLabel(pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case.case_id))
    return case.case_id


class TestSqlConstraints:
    async def test_triggers_refuse_updates_and_deletes(self, tmp_path: Path) -> None:
        """UPDATE/DELETE of gold labels and audit events fail inside SQLite itself."""
        async with adjudication_server(tmp_path / "a.db") as server:
            await frozen_case(server)
        db = sqlite3.connect(tmp_path / "a.db")
        try:
            for sql in (
                "UPDATE gold_labels SET label_key = '\"none\"'",
                "DELETE FROM gold_labels",
                "UPDATE audit_events SET payload = '{}'",
                "DELETE FROM audit_events",
                "DELETE FROM reviewers",
            ):
                with pytest.raises(sqlite3.IntegrityError):
                    db.execute(sql)
        finally:
            db.close()

    async def test_checks_and_uniqueness(self, tmp_path: Path) -> None:
        """revision >= 1, unique (case, revision), unique review per round, attested humans."""
        async with adjudication_server(tmp_path / "a.db") as server:
            case_id = await frozen_case(server)
        db = sqlite3.connect(tmp_path / "a.db")
        try:
            row = db.execute("SELECT * FROM gold_labels").fetchone()
            with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE|PRIMARY"):
                db.execute(f"INSERT INTO gold_labels VALUES ({', '.join('?' * len(row))})", row)
            zero = (row[0], 0, -1, *row[3:])
            with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
                db.execute(f"INSERT INTO gold_labels VALUES ({', '.join('?' * len(row))})", zero)
            review_row = db.execute("SELECT * FROM reviews").fetchone()
            with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
                db.execute(
                    f"INSERT INTO reviews VALUES ({', '.join('?' * len(review_row))})",
                    ("other-id", *review_row[1:]),
                )
            with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
                db.execute(
                    "INSERT INTO reviewers (reviewer_id, kind, attested_by, register_time) "
                    "VALUES ('h', 'HUMAN', ' ', 0)"
                )
            assert case_id
        finally:
            db.close()


class TestMigrations:
    async def test_schema_version_is_recorded(self, tmp_path: Path) -> None:
        """A new file is migrated to the current user_version in WAL mode."""
        store = await Store.open(tmp_path / "m.db")
        await store.close()
        db = sqlite3.connect(tmp_path / "m.db")
        try:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            db.close()
        reopened = await Store.open(tmp_path / "m.db")
        await reopened.close()

    async def test_newer_schema_is_refused(self, tmp_path: Path) -> None:
        """A file from a newer Assay is not opened (and so not damaged)."""
        db = sqlite3.connect(tmp_path / "new.db")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        db.close()
        with pytest.raises(SchemaTooNew):
            await Store.open(tmp_path / "new.db")


class TestTampering:
    async def test_edited_gold_label_is_data_loss(self, adjudication_db: str) -> None:
        """A gold label edited in the file is DATA_LOSS on read, and verify names its event."""
        path = adjudication_db
        async with adjudication_server(path) as server:
            case_id = await frozen_case(server)
        edit(path, "UPDATE gold_labels SET label_key = '\"none\"' WHERE case_id = ?", case_id)
        async with adjudication_server(path) as server:
            stub = server.stub
            error = await failure(
                stub.ListGoldLabelRevisions(pb.ListGoldLabelRevisionsRequest(case_id=case_id))
            )
            assert error.code == grpc.StatusCode.DATA_LOSS
            assert error.reason == "ERROR_REASON_GOLD_LABEL_DIGEST_MISMATCH"
            assert error.metadata["case_id"] == case_id

            async def drain() -> None:
                async for _ in stub.ExportCorpus(pb.ExportCorpusRequest()):
                    pass

            exported = await failure(drain())
            assert exported.code == grpc.StatusCode.DATA_LOSS
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert not verdict.ok
            assert verdict.problem == pb.AUDIT_PROBLEM_GOLD_LABEL_MISMATCH
            events = await stub.ListAuditEvents(pb.ListAuditEventsRequest(page_size=100))
            frozen = [e for e in events.events if e.payload.get("case_id") == case_id]
            assert verdict.first_bad_sequence == frozen[-1].sequence

    async def test_forged_digest_is_caught_by_the_ledger(self, adjudication_db: str) -> None:
        """An attacker who recomputes the row's digest still fails the ledger cross-check."""
        from assay.services.adjudication.domain import gold
        from assay.services.adjudication.storage import rows

        path = adjudication_db
        async with adjudication_server(path) as server:
            case_id = await frozen_case(server)
        with tampering(path) as raw:
            row = raw.one(f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels")
            fields = rows.gold_fields(row) | {"label_key": '"none"'}
            forged = gold.versioned_digest(fields)
            raw.execute(
                "UPDATE gold_labels SET label_key = '\"none\"', digest = ? WHERE case_id = ?",
                forged,
                case_id,
            )
        async with adjudication_server(path) as server:
            # The row verifies against its own digest; the read's ledger check refuses it.
            error = await failure(
                server.stub.ListGoldLabelRevisions(pb.ListGoldLabelRevisionsRequest())
            )
            assert error.code == grpc.StatusCode.DATA_LOSS
            assert (error.metadata["record"], error.metadata["key"]) == (
                "gold label",
                f"{case_id}#1",
            )
            verdict = await server.stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert not verdict.ok
            assert verdict.problem == pb.AUDIT_PROBLEM_GOLD_LABEL_MISMATCH

    async def test_edited_audit_event_is_named(self, adjudication_db: str) -> None:
        """Editing audit event 3 makes verification stop at event 3 with HASH_MISMATCH."""
        path = adjudication_db
        async with adjudication_server(path) as server:
            await frozen_case(server)
        edit(path, 'UPDATE audit_events SET payload = \'{"case_id":"x"}\' WHERE sequence = 3')
        async with adjudication_server(path) as server:
            verdict = await server.stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert not verdict.ok
            assert (verdict.first_bad_sequence, verdict.problem) == (
                3,
                pb.AUDIT_PROBLEM_HASH_MISMATCH,
            )

    async def test_deleted_audit_event_is_a_gap(self, adjudication_db: str) -> None:
        """Removing an event is reported where the sequence jumps."""
        path = adjudication_db
        async with adjudication_server(path) as server:
            await frozen_case(server)
        edit(path, "DELETE FROM audit_events WHERE sequence = 2")
        async with adjudication_server(path) as server:
            verdict = await server.stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert (verdict.ok, verdict.first_bad_sequence, verdict.problem) == (
                False,
                3,
                pb.AUDIT_PROBLEM_SEQUENCE_GAP,
            )


class TestGroupCommit:
    async def test_concurrent_writes_share_commits_and_all_land(self, adjudication_db: str) -> None:
        """Many concurrent reviews are acknowledged, stored once each, in fewer transactions."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            names = [f"r{i}" for i in range(40)]
            await asyncio.gather(*(register(stub, n) for n in names))
            cases = await asyncio.gather(*(enqueue(stub) for _ in range(40)))
            # Each case takes its round's two reviews, from the names in turn (80 at once).
            pairs = [
                (c.case_id, names[(2 * i + k) % 40]) for i, c in enumerate(cases) for k in (0, 1)
            ]
            replies = await asyncio.gather(*(review(stub, c, n, "key") for c, n in pairs))
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=cases[5].case_id))
            assert sorted(r.reviewer_id for r in detail.reviews) == [names[10], names[11]]
            assert len({r.review.review_id for r in replies}) == len(replies)
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert verdict.ok
        with tampering(adjudication_db) as raw:
            assert raw.one("SELECT COUNT(*) AS n FROM reviews")["n"] == 80
