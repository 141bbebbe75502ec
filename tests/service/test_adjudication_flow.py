"""The adjudication service end to end through a real in-process gRPC server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from google.protobuf import timestamp_pb2

from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    HUMAN,
    TIMEOUT,
    adjudication_server,
    case_message,
    enqueue,
    failure,
    register,
    review,
    rid,
)

ADJ = gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
UNANIMOUS = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT


def label(value: str) -> pb.SubmitReviewRequest:
    request = pb.SubmitReviewRequest()
    request.label.string_value = value
    return request


async def resolve(
    stub: object,
    case_id: str,
    basis: gold_pb2.ResolutionBasis.ValueType,
    value: str = "",
    by: str = "",
) -> object:
    request = pb.ResolveCaseRequest(
        request_id=rid(), case_id=case_id, basis=basis, adjudicator_reviewer_id=by
    )
    if value:
        request.label.string_value = value
    return await stub.ResolveCase(request, timeout=TIMEOUT)  # type: ignore[attr-defined]


async def freeze(stub: object, case_id: str) -> pb.FreezeGoldLabelResponse:
    reply: pb.FreezeGoldLabelResponse = await stub.FreezeGoldLabel(  # type: ignore[attr-defined]
        pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
    )
    return reply


async def export(stub: object, tenant: str = "") -> tuple[list[pb.CorpusRecord], pb.ExportManifest]:
    records: list[pb.CorpusRecord] = []
    manifest = None
    async for message in stub.ExportCorpus(  # type: ignore[attr-defined]
        pb.ExportCorpusRequest(tenant=tenant, batch_size=2), timeout=TIMEOUT
    ):
        assert manifest is None, "nothing may follow the manifest"
        if message.WhichOneof("item") == "batch":
            records.extend(message.batch.records)
        else:
            manifest = message.manifest
    assert manifest is not None
    return records, manifest


class TestDisagreementToGold:
    async def test_blinded_review_disagree_adjudicate_freeze_export_verify(
        self, tmp_path: Path
    ) -> None:
        """Two reviewers disagree, a third adjudicates; the frozen label exports and verifies."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case = await enqueue(stub)
            blinded = (
                await stub.GetBlindedCase(pb.GetBlindedCaseRequest(case_id=case.case_id))
            ).case
            assert blinded.round == 1
            assert [v.string_value for v in blinded.candidate_values] == ["key", "none"]
            first = await review(stub, case.case_id, "ann", "key")
            assert first.state == pb.CASE_STATE_AWAITING_SECOND_REVIEW
            second = await review(stub, case.case_id, "bob", "none")
            assert second.state == pb.CASE_STATE_DISAGREED
            refused = await failure(resolve(stub, case.case_id, ADJ, "key", "ann"))
            assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
            assert refused.reason == "ERROR_REASON_ADJUDICATOR_IS_REVIEWER"
            resolved = await resolve(stub, case.case_id, ADJ, "none", "cy")
            assert resolved.state == pb.CASE_STATE_RESOLVED  # type: ignore[attr-defined]
            revision = (await freeze(stub, case.case_id)).revision
            assert (revision.revision, revision.previous_revision, revision.round) == (1, 0, 1)
            assert revision.label.string_value == "none"
            assert revision.provenance == gold_pb2.LABELING_PROVENANCE_SYNTHETIC_MECHANISM_TEST
            assert sorted(revision.contributing_reviewer_ids) == ["ann", "bob"]
            state = await stub.GetCaseState(pb.GetCaseStateRequest(case_id=case.case_id))
            assert state.state == pb.CASE_STATE_FROZEN
            records, manifest = await export(stub)
            assert [r.revision.digest for r in records] == [revision.digest]
            assert manifest.contains_synthetic_labels
            assert manifest.record_count == 1
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert verdict.ok
            assert manifest.audit_chain_head.sequence == verdict.head.sequence
            events = await stub.ListAuditEvents(pb.ListAuditEventsRequest(page_size=100))
            types = [e.event_type for e in events.events]
            assert types[-1] == pb.AUDIT_EVENT_TYPE_GOLD_LABEL_FROZEN
            assert events.events[-1].payload["digest"] == revision.digest

    async def test_human_provenance_only_when_everyone_is_human(self, tmp_path: Path) -> None:
        """Two attested human test reviewers agreeing give HUMAN_ADJUDICATED; a fixture does not."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            await register(stub, "h1", HUMAN)
            await register(stub, "h2", HUMAN)
            await register(stub, "fx")
            human_case = await enqueue(stub)
            mixed_case = await enqueue(stub)
            for reviewer in ("h1", "h2"):
                await review(stub, human_case.case_id, reviewer, "key")
            for reviewer in ("h1", "fx"):
                await review(stub, mixed_case.case_id, reviewer, "key")
            for case in (human_case, mixed_case):
                await resolve(stub, case.case_id, UNANIMOUS)
            human = (await freeze(stub, human_case.case_id)).revision
            mixed = (await freeze(stub, mixed_case.case_id)).revision
            assert human.provenance == gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED
            assert mixed.provenance == gold_pb2.LABELING_PROVENANCE_SYNTHETIC_MECHANISM_TEST
            _, manifest = await export(stub)
            assert (manifest.human_adjudicated_count, manifest.synthetic_count) == (1, 1)

    async def test_unresolved_is_frozen_without_a_label(self, tmp_path: Path) -> None:
        """Two 'unresolved' reviews freeze as an explicit UNRESOLVED revision with no label."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            case = await enqueue(stub)
            for name in ("ann", "bob"):
                await review(
                    stub, case.case_id, name, None, pb.REVIEW_OUTCOME_UNRESOLVED, reason="unclear"
                )
            await resolve(stub, case.case_id, gold_pb2.RESOLUTION_BASIS_UNRESOLVED)
            revision = (await freeze(stub, case.case_id)).revision
            assert revision.basis == gold_pb2.RESOLUTION_BASIS_UNRESOLVED
            assert not revision.HasField("label")
            assert revision.label_key == ""


class TestBlindingAndQueue:
    async def test_queue_never_shows_verdicts_or_other_reviews(self, tmp_path: Path) -> None:
        """The queue lists cases still needing this reviewer, as BlindedCase only."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", "key")
            ann = await stub.ListQueue(pb.ListQueueRequest(reviewer_id="ann"))
            bob = await stub.ListQueue(pb.ListQueueRequest(reviewer_id="bob"))
            assert list(ann.cases) == []
            assert [c.case_id for c in bob.cases] == [case.case_id]
            assert "local_verdict" not in {f.name for f in bob.cases[0].DESCRIPTOR.fields}
            await review(stub, case.case_id, "bob", "key")
            cy = await stub.ListQueue(pb.ListQueueRequest(reviewer_id="cy"))
            assert list(cy.cases) == [], "a double-reviewed round leaves the queue"

    async def test_queue_pages_and_filters_by_tenant(self, tmp_path: Path) -> None:
        """Pages follow case id order; tokens continue; a tenant filter narrows it."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            await register(stub, "ann")
            ids = sorted([(await enqueue(stub, tenant="t1")).case_id for _ in range(5)])
            await enqueue(stub, tenant="t2")
            seen: list[str] = []
            token = ""
            while True:
                page = await stub.ListQueue(
                    pb.ListQueueRequest(
                        reviewer_id="ann", tenant="t1", page_size=2, page_token=token
                    )
                )
                seen.extend(c.case_id for c in page.cases)
                token = page.next_page_token
                if not token:
                    break
            assert seen == ids


class TestRounds:
    async def test_frozen_case_reopens_only_with_explicit_round(self, tmp_path: Path) -> None:
        """Reviewing a frozen case needs round=2; that opens round 2 and revision 2 follows."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            case = await enqueue(stub)
            for name in ("ann", "bob"):
                await review(stub, case.case_id, name, "key")
            await resolve(stub, case.case_id, UNANIMOUS)
            first = (await freeze(stub, case.case_id)).revision
            refused = await failure(review(stub, case.case_id, "ann", "none"))
            assert refused.reason == "ERROR_REASON_CASE_FROZEN"
            assert refused.metadata["current_round"] == "2"
            wrong = await failure(review(stub, case.case_id, "ann", "none", round_=3))
            assert wrong.reason == "ERROR_REASON_ROUND_MISMATCH"
            for name in ("ann", "bob"):
                reply = await review(stub, case.case_id, name, "none", round_=2)
                assert reply.review.round == 2
            await resolve(stub, case.case_id, UNANIMOUS)
            second = (await freeze(stub, case.case_id)).revision
            assert (second.revision, second.previous_revision, second.round) == (2, 1, 2)
            assert second.digest != first.digest
            listed = await stub.ListGoldLabelRevisions(
                pb.ListGoldLabelRevisionsRequest(case_id=case.case_id, page_size=1)
            )
            assert [r.revision for r in listed.revisions] == [1]
            rest = await stub.ListGoldLabelRevisions(
                pb.ListGoldLabelRevisionsRequest(
                    case_id=case.case_id, page_size=1, page_token=listed.next_page_token
                )
            )
            assert [r.revision for r in rest.revisions] == [2]
            records, _ = await export(stub)
            assert [r.revision.revision for r in records] == [2], "export carries the latest"
            exists = await failure(
                stub.FreezeGoldLabel(
                    pb.FreezeGoldLabelRequest(case_id=case.case_id, expected_revision=2)
                )
            )
            assert exists.code == grpc.StatusCode.ALREADY_EXISTS
            assert exists.reason == "ERROR_REASON_GOLD_LABEL_REVISION_EXISTS"


class TestIdempotency:
    async def test_retry_returns_the_first_response(self, tmp_path: Path) -> None:
        """The same request_id and body returns identical bytes and writes once."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            await register(stub, "ann")
            case = await enqueue(stub)
            request = pb.SubmitReviewRequest(
                request_id="retry-1",
                case_id=case.case_id,
                reviewer_id="ann",
                outcome=pb.REVIEW_OUTCOME_LABEL,
            )
            request.label.string_value = "key"
            first, again = await asyncio.gather(
                stub.SubmitReview(request), stub.SubmitReview(request)
            )
            assert first.SerializeToString(deterministic=True) == again.SerializeToString(
                deterministic=True
            )
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=case.case_id))
            assert len(detail.reviews) == 1

    async def test_reused_request_id_with_other_body_is_refused(self, tmp_path: Path) -> None:
        """A request_id replayed with a different body is REQUEST_ID_REUSED naming request_id."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            message = pb.Reviewer(
                reviewer_id="ann", kind=gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
            )
            await stub.RegisterReviewer(
                pb.RegisterReviewerRequest(request_id="r1", reviewer=message)
            )
            message.reviewer_id = "bob"
            error = await failure(
                stub.RegisterReviewer(pb.RegisterReviewerRequest(request_id="r1", reviewer=message))
            )
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert error.reason == "ERROR_REASON_REQUEST_ID_REUSED"
            assert [v.field for v in error.violations] == ["request_id"]


class TestTenantDeletionAndSweep:
    async def test_deletion_orphans_labels_which_export_excludes(self, tmp_path: Path) -> None:
        """Deleting a tenant removes its cases and reviews, keeps labels, and the chain verifies."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            gone = await enqueue(stub, tenant="leaving")
            kept = await enqueue(stub, tenant="staying")
            for case in (gone, kept):
                for name in ("ann", "bob"):
                    await review(stub, case.case_id, name, "key")
                await resolve(stub, case.case_id, UNANIMOUS)
                await freeze(stub, case.case_id)
            reply = await stub.DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="leaving")
            )
            assert (reply.deleted.cases, reply.deleted.reviews, reply.deleted.resolutions) == (
                1,
                2,
                1,
            )
            missing = await failure(stub.GetCase(pb.GetCaseRequest(case_id=gone.case_id)))
            assert missing.code == grpc.StatusCode.NOT_FOUND
            labels = await stub.ListGoldLabelRevisions(pb.ListGoldLabelRevisionsRequest())
            assert len(labels.revisions) == 2, "gold labels stay"
            records, manifest = await export(stub)
            assert [r.case.case_id for r in records] == [kept.case_id]
            assert [(e.case_id, e.reason) for e in manifest.exclusions] == [
                (gone.case_id, pb.EXPORT_EXCLUSION_REASON_CASE_DELETED)
            ]
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert verdict.ok
            events = await stub.ListAuditEvents(pb.ListAuditEventsRequest(page_size=1000))
            last = events.events[-1]
            assert last.event_type == pb.AUDIT_EVENT_TYPE_TENANT_RECORDS_DELETED
            assert last.sequence == reply.audit_sequence

    async def test_sweep_removes_expired_cases(self, tmp_path: Path) -> None:
        """A case past its expiry is refused for review, then swept; others stay."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            await register(stub, "ann")
            message = case_message()
            soon = timestamp_pb2.Timestamp()
            soon.GetCurrentTime()
            soon.seconds += 1
            message.expire_time.CopyFrom(soon)
            short = (await stub.EnqueueCase(pb.EnqueueCaseRequest(case=message))).case
            lasting = await enqueue(stub)
            await asyncio.sleep(1.2)
            expired = await failure(review(stub, short.case_id, "ann", "key"))
            assert expired.reason == "ERROR_REASON_CASE_EXPIRED"
            state = await stub.GetCaseState(pb.GetCaseStateRequest(case_id=short.case_id))
            assert state.expired
            swept = await stub.SweepExpiredRecords(pb.SweepExpiredRecordsRequest(request_id=rid()))
            assert swept.deleted.cases == 1
            await failure(stub.GetCase(pb.GetCaseRequest(case_id=short.case_id)))
            assert (await stub.GetCase(pb.GetCaseRequest(case_id=lasting.case_id))).case.case_id


class TestAgreement:
    async def test_kappa_through_the_service(self, tmp_path: Path) -> None:
        """20 double-reviewed fixture rounds give a kappa flagged as fixture-made."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            answers = [("key", "key")] * 8 + [("none", "none")] * 8 + [("key", "none")] * 4
            for a, b in answers:
                case = await enqueue(stub)
                await review(stub, case.case_id, "ann", a)
                await review(stub, case.case_id, "bob", b)
            result = await stub.ComputeAgreement(pb.ComputeAgreementRequest())
            assert result.status == pb.AGREEMENT_STATUS_COMPUTED
            assert result.case_count == 20
            assert result.fixture_reviewers_contributed
            # po = 16/20 = 0.8; pe = 0.6·0.4 + 0.4·0.6 = 0.48.
            assert result.kappa == pytest.approx((0.8 - 0.48) / (1 - 0.48))
            assert result.ci_lower < result.kappa < result.ci_upper

    async def test_below_twenty_is_insufficient(self, tmp_path: Path) -> None:
        """With too few rounds there is no kappa at all."""
        async with adjudication_server(tmp_path / "a.db") as server:
            result = await server.stub.ComputeAgreement(pb.ComputeAgreementRequest())
            assert result.status == pb.AGREEMENT_STATUS_INSUFFICIENT
            assert not result.HasField("kappa")


class TestExportCancellation:
    @pytest.mark.skip(
        reason="shared runtime bug: handlers._Call.finish calls context.peer() after the client "
        "cancelled a server stream, which intermittently segfaults grpcio 1.85's aio core; "
        "capture the peer when the call starts, then remove this skip"
    )
    async def test_a_client_may_abandon_an_export(self, tmp_path: Path) -> None:
        """Cancelling mid-stream releases the export; the server keeps serving and stops cleanly."""
        async with adjudication_server(tmp_path / "a.db") as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            for _ in range(3):
                case = await enqueue(stub)
                for name in ("ann", "bob"):
                    await review(stub, case.case_id, name, "key")
                await resolve(stub, case.case_id, UNANIMOUS)
                await freeze(stub, case.case_id)
            call = stub.ExportCorpus(pb.ExportCorpusRequest(batch_size=1), timeout=TIMEOUT)
            first = await call.read()
            assert first.WhichOneof("item") == "batch"
            call.cancel()
            records, manifest = await export(stub)
            assert manifest.record_count == 3
            assert len(records) == 3
