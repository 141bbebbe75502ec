"""`assay db migrate`: a SQLite corpus moved to a fresh PostgreSQL database on the suite's
real server, then served from there exactly as it was served from SQLite.

Two sources: a database written by the current code with every table populated
(``tamper_support.build``: reviewers of both kinds, reviews amended, resolutions, gold
labels, approvals with their steps, case assignments, idempotency records, plus a case with
claims), and the checked-in v1 fixture (schema V4), which is refused until a current server
has opened it once. A checkpoint saved from the SQLite server before the move is checked
against the PostgreSQL server by `assay audit verify --since`, pinned to the ledger key.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from assay.cli.main import main
from assay.services.adjudication.storage.corpus_tables import TABLES
from assay.services.adjudication.storage.sqlite.schema import SCHEMA_VERSION
from assay.services.adjudication.use_cases.transparency import default_key_path
from assay.tlog.checkpoint import load_or_create_signing_key
from assay.v1 import adjudication_service_pb2 as pb
from tests.service import tamper_support
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    case_message,
    register,
    review,
    rid,
)
from tests.support.processes import free_port

FIXTURE = Path(__file__).parent.parent / "fixtures" / "adjudication"


async def assay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the real `assay` command (in a thread: it runs its own event loop)."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def sqlite_counts(path: Path) -> dict[str, int]:
    db = sqlite3.connect(path)
    try:
        return {t: int(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in TABLES}
    finally:
        db.close()


async def pg_rows(dsn: str, sql: str) -> list[asyncpg.Record]:
    db = await asyncpg.connect(dsn)
    try:
        return list(await db.fetch(sql))
    finally:
        await db.close()


async def seen(target: str, key: Path) -> dict[str, Any]:
    """What a real server on ``target`` (signing with ``key``) serves: every case, every gold
    label revision, the whole export with reviews and approvals, and its chain verdict."""
    served: dict[str, Any] = {}
    async with tamper_support.serve(target, key) as server:
        stub = server.stub
        listed = await stub.ListCases(pb.ListCasesRequest(page_size=1000), timeout=TIMEOUT)
        served["listed"] = listed
        for summary in listed.cases:
            case_id = summary.case_id
            got = await stub.GetCase(pb.GetCaseRequest(case_id=case_id), timeout=TIMEOUT)
            served[f"case/{case_id}"] = got
        gold = pb.ListGoldLabelRevisionsRequest(page_size=1000)
        served["gold"] = await stub.ListGoldLabelRevisions(gold, timeout=TIMEOUT)
        export = pb.ExportCorpusRequest(include_reviews=True, include_approvals=True)
        served["export"] = [m async for m in stub.ExportCorpus(export, timeout=TIMEOUT)]
        for message in served["export"]:  # when it was read is the one thing that differs
            if message.HasField("manifest"):
                message.manifest.ClearField("export_time")
        verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
        served["verdict"] = verdict
        served["checkpoint"] = await stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=TIMEOUT)
    return served


def public_pem(key: Path, directory: Path) -> Path:
    from cryptography.hazmat.primitives import serialization

    pem = (
        load_or_create_signing_key(key)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    path = directory / "ledger.pub.pem"
    path.write_bytes(pem)
    return path


async def extends(
    capsys: pytest.CaptureFixture[str], target: str, key: Path, note: str, tmp: Path
) -> tuple[int, str]:
    """`assay audit verify --since NOTE --public-key PEM` against a server on ``target``."""
    saved = tmp / "saved.note"
    saved.write_text(note, encoding="utf-8")
    pem = public_pem(key, tmp)
    async with tamper_support.serve(target, key) as server:
        code, out, err = await assay(
            capsys,
            "audit",
            "verify",
            "--since",
            str(saved),
            "--public-key",
            str(pem),
            "--target",
            server.target,
        )
    return code, out + err


async def add_case_with_claims(db: Path, key: Path) -> str:
    async with tamper_support.serve(str(db), key) as server:
        case = case_message()
        claim = case.claims.add(claim_id="c-1", source_kind="ci", confidence=0.75)
        claim.value.string_value = "key"
        reply = await server.stub.EnqueueCase(
            pb.EnqueueCaseRequest(request_id=rid(), case=case), timeout=TIMEOUT
        )
        return str(reply.case.case_id)


class TestACurrentCorpus:
    async def test_every_table_moves_and_is_served_the_same(
        self, tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        source = tmp_path / "assay.db"
        key = default_key_path(source)
        await tamper_support.build(str(source), key)
        claimed = await add_case_with_claims(source, key)
        counts = sqlite_counts(source)
        assert all(counts[t] > 0 for t in TABLES), counts  # every table has rows
        before = await seen(str(source), key)
        assert before["verdict"].ok
        assert before[f"case/{claimed}"].case.claims[0].claim_id == "c-1"
        note = before["checkpoint"].signed_note

        code, out, err = await assay(
            capsys, "db", "migrate", "--from", f"sqlite:///{source}", "--to", postgres_dsn
        )
        assert (code, err) == (0, "")
        for table in TABLES:
            assert f"  {table:<18} {counts[table]:>10} rows" in out
        size, root = before["checkpoint"].tree_size, before["checkpoint"].root_hash.hex()
        assert f"source log: tree size {size}, root {root}" in out
        assert f"target log: tree size {size}, root {root}" in out
        assert f"--ledger-signing-key {key}" in out
        assert "sha256:" not in out  # no digest, hash or row content is printed

        # Reviews keep their stored order, and a review stored now comes after them.
        positions = await pg_rows(postgres_dsn, "SELECT review_id, position FROM reviews")
        db = sqlite3.connect(source)
        rowids = db.execute("SELECT review_id, rowid FROM reviews ORDER BY rowid").fetchall()
        db.close()
        assert sorted((r["position"], r["review_id"]) for r in positions) == [
            (rowid, review_id) for review_id, rowid in rowids
        ]
        by_rowid = [review_id for review_id, _ in rowids]

        after = await seen(postgres_dsn, key)
        assert after == before
        code, said = await extends(capsys, postgres_dsn, key, note, tmp_path)
        assert code == 0, said

        async with tamper_support.serve(postgres_dsn, key) as server:
            await register(server.stub, "fx-late")
            open_case = next(
                k.removeprefix("case/")
                for k, v in before.items()
                if k.startswith("case/") and not v.resolutions and len(v.reviews) == 1
            )
            await review(server.stub, open_case, "fx-late")
        last = await pg_rows(postgres_dsn, "SELECT review_id FROM reviews ORDER BY position")
        assert [r["review_id"] for r in last[:-1]] == by_rowid

        # The target now holds data: a second move into it is refused, and changes nothing.
        code, out, err = await assay(
            capsys, "db", "migrate", "--from", str(source), "--to", postgres_dsn
        )
        assert code == 1
        assert "is not empty" in err
        assert "has rows" in err
        assert err.count("\n") == 1


class TestTheV1Fixture:
    async def test_refused_until_served_once_then_moved(
        self, tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        source = tmp_path / "v1.db"
        shutil.copyfile(FIXTURE / "v1.db", source)
        key = default_key_path(source)
        shutil.copyfile(FIXTURE / "v1.db.ledger-key.pem", key)
        key.chmod(0o600)
        source.chmod(0o600)

        code, _, err = await assay(
            capsys, "db", "migrate", "--from", str(source), "--to", postgres_dsn
        )
        assert code == 1
        assert f"schema version 4; this assay copies version {SCHEMA_VERSION}" in err
        assert "start `assay serve adjudication" in err
        tables = await pg_rows(postgres_dsn, "SELECT to_regclass('audit_events') AS t")
        assert tables[0]["t"] is None  # refused before anything was created

        async with adjudication_server(source):
            pass  # a current server migrates it at start
        before = await seen(str(source), key)
        assert before["verdict"].ok
        assert before["gold"].revisions
        code, _out, err = await assay(
            capsys, "db", "migrate", "--from", str(source), "--to", postgres_dsn, "--json"
        )
        assert (code, err) == (0, "")
        after = await seen(postgres_dsn, key)
        assert after == before
        code, said = await extends(
            capsys, postgres_dsn, key, before["checkpoint"].signed_note, tmp_path
        )
        assert code == 0, said


class TestRefusals:
    async def test_a_source_in_use_newer_or_missing_and_bad_targets(
        self, tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        source = tmp_path / "a.db"

        async def migrate(source: Path | str, target: str) -> tuple[int, str]:
            code, out, err = await assay(
                capsys, "db", "migrate", "--from", str(source), "--to", target
            )
            assert out == ""
            assert err.count("\n") == 1  # one line
            return code, err

        async with adjudication_server(source) as server:
            await register(server.stub, "fx-ann")
            code, err = await migrate(source, postgres_dsn)
            assert code == 1
            assert "in use by another process" in err

        unreachable = f"postgresql://assay:hunter2@127.0.0.1:{free_port()}/x"
        code, err = await migrate(source, unreachable)
        assert code == 1
        assert "postgresql://assay:***@127.0.0.1" in err
        assert "hunter2" not in err
        code, err = await migrate(source, "mysql://u:secret@h/db")
        assert code == 2
        assert err.startswith("assay: --to 'mysql://u:***@h/db'")
        assert "secret" not in err
        code, err = await migrate(source, str(tmp_path / "b.db"))
        assert code == 1
        assert "the target must be a PostgreSQL database" in err
        code, err = await migrate(tmp_path / "none.db", postgres_dsn)
        assert code == 1
        assert "no such SQLite file" in err

        db = sqlite3.connect(source)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        db.commit()
        db.close()
        code, err = await migrate(source, postgres_dsn)
        assert code == 1
        assert "newer than this assay's" in err
        # Nothing was created on the target by any refusal.
        tables = await pg_rows(postgres_dsn, "SELECT to_regclass('audit_events') AS t")
        assert tables[0]["t"] is None


class TestVerification:
    async def test_a_chain_that_does_not_verify_is_rolled_back(
        self, tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        source = tmp_path / "a.db"
        async with adjudication_server(source) as server:
            await register(server.stub, "fx-ann")
            await register(server.stub, "fx-bob")
        # An event's payload edited in the file, past the guarding trigger.
        db = sqlite3.connect(source, isolation_level=None)
        db.execute("DROP TRIGGER audit_events_no_update")
        db.execute(
            "UPDATE audit_events SET payload = replace(payload, 'fx-bob', 'fx-eve')"
            " WHERE sequence = 2"
        )
        db.close()
        code, out, err = await assay(
            capsys, "db", "migrate", "--from", str(source), "--to", postgres_dsn
        )
        assert code == 3
        assert out == ""
        assert "does not verify at event 2" in err
        assert "nothing was committed" in err
        empty = await pg_rows(postgres_dsn, "SELECT count(*) AS n FROM audit_events")
        assert empty[0]["n"] == 0  # the schema was created; no row was committed

        # A target whose schema is applied but holds no rows is empty: a good copy goes in.
        good = tmp_path / "good.db"
        async with adjudication_server(good) as server:
            await register(server.stub, "fx-ann")
        code, out, err = await assay(
            capsys, "db", "migrate", "--from", str(good), "--to", postgres_dsn
        )
        assert (code, err) == (0, "")
        assert "  reviewers                   1 rows" in out
