"""Stored records checked against the ledger's commitments.

Rows are edited the way an attacker with the file would do it (a raw ``sqlite3``
connection, guarding triggers dropped); a fresh server reads the edited file, so
no in-memory cache hides the edit.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import grpc

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


def attacker(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    return db


def edit(path: Path, sql: str, *params: object) -> None:
    db = attacker(path)
    try:
        assert db.execute(sql, params).rowcount == 1
    finally:
        db.close()


async def resolved_case(server: Server, labels: tuple[str, str] = ("key", "key")) -> str:
    """A case with two fixture reviews, resolved unanimously (not frozen)."""
    stub = server.stub
    for name in ("ann", "bob"):
        await register(stub, name)
    case = await enqueue(stub)
    for name, label in zip(("ann", "bob"), labels, strict=True):
        await review(stub, case.case_id, name, label)
    await stub.ResolveCase(
        pb.ResolveCaseRequest(
            case_id=case.case_id, basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
        )
    )
    return case.case_id


async def verdict(server: Server) -> pb.VerifyAuditChainResponse:
    reply: pb.VerifyAuditChainResponse = await server.stub.VerifyAuditChain(
        pb.VerifyAuditChainRequest()
    )
    return reply


async def freeze_refused(server: Server, case_id: str) -> None:
    error = await failure(
        server.stub.FreezeGoldLabel(pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id))
    )
    assert error.code == grpc.StatusCode.DATA_LOSS


class TestVerifyNamesTheRecord:
    async def test_an_untouched_ledger_verifies(self, tmp_path: Path) -> None:
        async with adjudication_server(tmp_path / "a.db") as server:
            await resolved_case(server)
            reply = await verdict(server)
            assert reply.ok, reply.detail
            assert reply.bad_record_kind == pb.RECORD_KIND_UNSPECIFIED
            assert reply.bad_record_id == ""

    async def test_an_edited_review_label(self, tmp_path: Path) -> None:
        path = tmp_path / "a.db"
        async with adjudication_server(path) as server:
            case_id = await resolved_case(server)
        db = sqlite3.connect(path)
        (review_id,) = db.execute(
            "SELECT review_id FROM reviews WHERE reviewer_id = 'bob'"
        ).fetchone()
        db.close()
        edit(path, "UPDATE reviews SET label_key = '\"none\"' WHERE review_id = ?", review_id)
        async with adjudication_server(path) as server:
            reply = await verdict(server)
            assert not reply.ok
            assert reply.problem == pb.AUDIT_PROBLEM_RECORD_MISMATCH
            assert (reply.bad_record_kind, reply.bad_record_id) == (
                pb.RECORD_KIND_REVIEW,
                review_id,
            )
            events = await server.stub.ListAuditEvents(pb.ListAuditEventsRequest(page_size=100))
            submitted = [
                e.sequence for e in events.events if e.payload.get("review_id") == review_id
            ]
            assert reply.first_bad_sequence == submitted[0]
            assert case_id

    async def test_an_edited_resolution_label(self, tmp_path: Path) -> None:
        path = tmp_path / "a.db"
        async with adjudication_server(path) as server:
            case_id = await resolved_case(server)
        edit(path, "UPDATE resolutions SET label_key = '\"none\"' WHERE case_id = ?", case_id)
        async with adjudication_server(path) as server:
            reply = await verdict(server)
            assert not reply.ok
            assert reply.problem == pb.AUDIT_PROBLEM_RECORD_MISMATCH
            assert (reply.bad_record_kind, reply.bad_record_id) == (
                pb.RECORD_KIND_RESOLUTION,
                f"{case_id}#1",
            )

    async def test_a_fixture_reviewer_made_human(self, tmp_path: Path) -> None:
        path = tmp_path / "a.db"
        async with adjudication_server(path) as server:
            await resolved_case(server)
        edit(
            path,
            "UPDATE reviewers SET kind = 'HUMAN', attested_by = 'x' WHERE reviewer_id = 'bob'",
        )
        async with adjudication_server(path) as server:
            reply = await verdict(server)
            assert not reply.ok
            assert reply.problem == pb.AUDIT_PROBLEM_RECORD_MISMATCH
            assert (reply.bad_record_kind, reply.bad_record_id) == (pb.RECORD_KIND_REVIEWER, "bob")

    async def test_a_reviewer_without_a_registration_event(self, tmp_path: Path) -> None:
        path = tmp_path / "a.db"
        async with adjudication_server(path) as server:
            await register(server.stub, "ann")
        edit(
            path,
            "INSERT INTO reviewers SELECT 'eve', kind, attested_by, register_time, "
            "identity_issuer, identity_subject FROM reviewers WHERE reviewer_id = 'ann'",
        )
        async with adjudication_server(path) as server:
            reply = await verdict(server)
            assert not reply.ok
            assert reply.problem == pb.AUDIT_PROBLEM_UNRECORDED_RECORD
            assert (reply.bad_record_kind, reply.bad_record_id) == (pb.RECORD_KIND_REVIEWER, "eve")

    async def test_deleted_records_are_not_problems(self, tmp_path: Path) -> None:
        async with adjudication_server(tmp_path / "a.db") as server:
            await resolved_case(server)
            await server.stub.DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="tenant-a")
            )
            reply = await verdict(server)
            assert reply.ok, reply.detail


class TestEditedCase:
    async def test_verdict_and_subject_edits_are_named_and_data_loss(self, tmp_path: Path) -> None:
        for column, value in (("local_verdict", '"none"'), ("subject", "api:other")):
            path = tmp_path / f"{column}.db"
            async with adjudication_server(path) as server:
                case_id = await resolved_case(server)
            edit(path, f"UPDATE cases SET {column} = ? WHERE case_id = ?", value, case_id)
            async with adjudication_server(path) as server:
                reply = await verdict(server)
                assert not reply.ok
                assert reply.problem == pb.AUDIT_PROBLEM_RECORD_MISMATCH
                assert (reply.bad_record_kind, reply.bad_record_id) == (
                    pb.RECORD_KIND_CASE,
                    case_id,
                )
                stub = server.stub
                for call in (
                    stub.GetCase(pb.GetCaseRequest(case_id=case_id)),
                    stub.GetCaseState(pb.GetCaseStateRequest(case_id=case_id)),
                    stub.GetBlindedCase(pb.GetBlindedCaseRequest(case_id=case_id)),
                ):
                    error = await failure(call)
                    assert error.code == grpc.StatusCode.DATA_LOSS, column
                    assert error.reason == "ERROR_REASON_STORED_RECORD_INVALID"
                await freeze_refused(server, case_id)

    async def test_a_forged_digest_still_disagrees_with_the_ledger(self, tmp_path: Path) -> None:
        from assay.services.adjudication import cases
        from assay.services.adjudication.storage import rows

        path = tmp_path / "a.db"
        async with adjudication_server(path) as server:
            case_id = await resolved_case(server)
        db = attacker(path)
        row = db.execute(f"SELECT {rows.CASE_COLUMNS} FROM cases").fetchone()
        forged = rows.case((*row[:2], "api:other", *row[3:]), check=False)
        db.execute(
            "UPDATE cases SET subject = 'api:other', content_digest = ? WHERE case_id = ?",
            (cases.case_digest(forged), case_id),
        )
        db.close()
        async with adjudication_server(path) as server:
            reply = await verdict(server)
            assert not reply.ok
            assert reply.problem == pb.AUDIT_PROBLEM_RECORD_MISMATCH
            assert (reply.bad_record_kind, reply.bad_record_id) == (pb.RECORD_KIND_CASE, case_id)


class TestFreezeRefuses:
    async def test_edited_review_resolution_or_reviewer(self, tmp_path: Path) -> None:
        """A freeze over an edited review, resolution or reviewer kind is DATA_LOSS, and
        an untouched case still freezes."""
        edits = {
            "review": "UPDATE reviews SET label_key = '\"none\"' WHERE reviewer_id = 'bob'",
            "resolution": "UPDATE resolutions SET basis = 'ADJUDICATOR_DECISION'",
            "reviewer": "UPDATE reviewers SET kind = 'HUMAN', attested_by = 'x' "
            "WHERE reviewer_id = 'bob'",
        }
        for name, sql in edits.items():
            path = tmp_path / f"{name}.db"
            async with adjudication_server(path) as server:
                case_id = await resolved_case(server)
            edit(path, sql)
            async with adjudication_server(path) as server:
                await freeze_refused(server, case_id)
        async with adjudication_server(tmp_path / "clean.db") as server:
            case_id = await resolved_case(server)
            await server.stub.FreezeGoldLabel(
                pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id)
            )
