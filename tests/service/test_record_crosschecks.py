"""Stored records checked against the ledger's commitments.

Rows are edited the way an attacker with the database would do it (``tamper_sql``'s raw
connection, guards off); a fresh server reads the edited database, so no in-memory cache
hides the edit. Every test runs on both engines (``adjudication_db``).
"""

from __future__ import annotations

from collections.abc import Callable

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
from tests.service.tamper_sql import edit, tampering


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
    async def test_an_untouched_ledger_verifies(self, adjudication_db: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            await resolved_case(server)
            reply = await verdict(server)
            assert reply.ok, reply.detail
            assert reply.bad_record_kind == pb.RECORD_KIND_UNSPECIFIED
            assert reply.bad_record_id == ""

    async def test_an_edited_review_label(self, adjudication_db: str) -> None:
        path = adjudication_db
        async with adjudication_server(path) as server:
            case_id = await resolved_case(server)
        with tampering(path) as raw:
            review_id = raw.one("SELECT review_id FROM reviews WHERE reviewer_id = 'bob'")[
                "review_id"
            ]
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

    async def test_an_edited_resolution_label(self, adjudication_db: str) -> None:
        path = adjudication_db
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

    async def test_a_fixture_reviewer_made_human(self, adjudication_db: str) -> None:
        path = adjudication_db
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

    async def test_a_reviewer_without_a_registration_event(self, adjudication_db: str) -> None:
        path = adjudication_db
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

    async def test_deleted_records_are_not_problems(self, adjudication_db: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            await resolved_case(server)
            await server.stub.DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="tenant-a")
            )
            reply = await verdict(server)
            assert reply.ok, reply.detail


class TestEditedCase:
    async def test_verdict_and_subject_edits_are_named_and_data_loss(
        self, new_db: Callable[[str], str]
    ) -> None:
        for column, value in (("local_verdict", '"none"'), ("subject", "api:other")):
            path = new_db(column)
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

    async def test_a_forged_digest_still_disagrees_with_the_ledger(
        self, adjudication_db: str
    ) -> None:
        from assay.services.adjudication.domain import cases
        from assay.services.adjudication.storage import rows

        path = adjudication_db
        async with adjudication_server(path) as server:
            case_id = await resolved_case(server)
        with tampering(path) as raw:
            row = raw.one(f"SELECT {rows.CASE_COLUMNS} FROM cases")
            forged = rows.case(row | {"subject": "api:other"}, check=False)
            raw.execute(
                "UPDATE cases SET subject = 'api:other', content_digest = ? WHERE case_id = ?",
                cases.case_digest(forged),
                case_id,
            )
        async with adjudication_server(path) as server:
            reply = await verdict(server)
            assert not reply.ok
            assert reply.problem == pb.AUDIT_PROBLEM_RECORD_MISMATCH
            assert (reply.bad_record_kind, reply.bad_record_id) == (pb.RECORD_KIND_CASE, case_id)


class TestFreezeRefuses:
    async def test_edited_review_resolution_or_reviewer(self, new_db: Callable[[str], str]) -> None:
        """A freeze over an edited review, resolution or reviewer kind is DATA_LOSS, and
        an untouched case still freezes."""
        edits = {
            "review": "UPDATE reviews SET label_key = '\"none\"' WHERE reviewer_id = 'bob'",
            "resolution": "UPDATE resolutions SET basis = 'ADJUDICATOR_DECISION'",
            "reviewer": "UPDATE reviewers SET kind = 'HUMAN', attested_by = 'x' "
            "WHERE reviewer_id = 'bob'",
        }
        for name, sql in edits.items():
            path = new_db(name)
            async with adjudication_server(path) as server:
                case_id = await resolved_case(server)
            edit(path, sql)
            async with adjudication_server(path) as server:
                await freeze_refused(server, case_id)
        async with adjudication_server(new_db("clean")) as server:
            case_id = await resolved_case(server)
            await server.stub.FreezeGoldLabel(
                pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id)
            )
