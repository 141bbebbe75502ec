"""Review work as teams run it, through real servers on both engines: how many reviews a
round needs (per case, per batch, per predicate by policy), a reviewer amending or
withdrawing their own review before the round is decided, and the rationale a reviewer or
an adjudicator leaves — each refused field named, each revision an insert-only record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.services.adjudication.domain.review_policy import ReviewPolicy, parse_review_policy
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    case_message,
    enqueue,
    failure,
    register,
    review,
    rid,
)
from tests.service.test_adjudication_security import acme_team, assert_refused, parties

UNANIMOUS = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
DECISION = gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION


async def enqueue_needing(stub: Any, required: int, **kwargs: Any) -> pb.Case:
    message = case_message(**kwargs)
    message.required_reviews = required
    reply = await stub.EnqueueCase(
        pb.EnqueueCaseRequest(request_id=rid(), case=message), timeout=TIMEOUT
    )
    case: pb.Case = reply.case
    return case


async def state_of(stub: Any, case_id: str) -> pb.GetCaseStateResponse:
    reply: pb.GetCaseStateResponse = await stub.GetCaseState(
        pb.GetCaseStateRequest(case_id=case_id), timeout=TIMEOUT
    )
    return reply


async def amend(stub: Any, review_id: str, label: str, rationale: str = "") -> Any:
    request = pb.AmendReviewRequest(
        request_id=rid(),
        review_id=review_id,
        outcome=pb.REVIEW_OUTCOME_LABEL,
        rationale=rationale,
    )
    request.label.string_value = label
    return await stub.AmendReview(request, timeout=TIMEOUT)


async def withdraw(stub: Any, review_id: str, reason: str = "") -> Any:
    return await stub.WithdrawReview(
        pb.WithdrawReviewRequest(request_id=rid(), review_id=review_id, reason=reason),
        timeout=TIMEOUT,
    )


async def queue_ids(stub: Any, reviewer_id: str) -> list[str]:
    reply = await stub.ListQueue(pb.ListQueueRequest(reviewer_id=reviewer_id), timeout=TIMEOUT)
    return [c.case_id for c in reply.cases]


class TestOverlap:
    async def test_three_reviews_agree_only_when_all_three_do(self, adjudication_db: str) -> None:
        """A case needing three: one review is AWAITING_SECOND_REVIEW, two AWAITING_MORE_REVIEWS
        (and too few to resolve), the third decides, and a fourth is refused."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy", "dee"):
                await register(stub, name)
            case = await enqueue_needing(stub, 3)
            assert case.required_reviews == 3
            await review(stub, case.case_id, "ann", "key")
            assert (
                await state_of(stub, case.case_id)
            ).state == pb.CASE_STATE_AWAITING_SECOND_REVIEW
            await review(stub, case.case_id, "bob", "key")
            after_two = await state_of(stub, case.case_id)
            assert (after_two.state, after_two.review_count, after_two.required_reviews) == (
                pb.CASE_STATE_AWAITING_MORE_REVIEWS,
                2,
                3,
            )
            assert case.case_id in await queue_ids(stub, "cy")
            early = await failure(
                stub.ResolveCase(
                    pb.ResolveCaseRequest(request_id=rid(), case_id=case.case_id, basis=UNANIMOUS),
                    timeout=TIMEOUT,
                )
            )
            assert (early.code, early.reason) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "ERROR_REASON_NOT_ENOUGH_REVIEWS",
            )
            await review(stub, case.case_id, "cy", "none")
            assert (await state_of(stub, case.case_id)).state == pb.CASE_STATE_DISAGREED
            fourth = await failure(review(stub, case.case_id, "dee", "key"))
            assert fourth.reason == "ERROR_REASON_ROUND_COMPLETE"
            assert case.case_id not in await queue_ids(stub, "dee")

    async def test_a_batch_and_the_policy_set_the_default(self, adjudication_db: str) -> None:
        """A batch's required_reviews applies where a case says nothing; a case's own wins."""
        async with adjudication_server(adjudication_db) as server:
            plain, own = case_message(), case_message()
            own.required_reviews = 4
            reply = await server.stub.EnqueueCases(
                pb.EnqueueCasesRequest(request_id=rid(), cases=[plain, own], required_reviews=3),
                timeout=TIMEOUT,
            )
            assert [c.required_reviews for c in reply.cases] == [3, 4]
            single = await enqueue(server.stub)
            assert single.required_reviews == 2
            stored = await server.stub.GetCase(
                pb.GetCaseRequest(case_id=reply.cases[0].case_id), timeout=TIMEOUT
            )
            assert stored.case.required_reviews == 3
            assert stored.case.content_digest == reply.cases[0].content_digest

    @pytest.mark.parametrize("bad", [1, 11, -2])
    async def test_an_overlap_out_of_range_is_named(self, adjudication_db: str, bad: int) -> None:
        async with adjudication_server(adjudication_db) as server:
            error = await failure(enqueue_needing(server.stub, bad))
            assert_refused(
                error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "case.required_reviews"
            )
            batch = await failure(
                server.stub.EnqueueCases(
                    pb.EnqueueCasesRequest(
                        request_id=rid(), cases=[case_message()], required_reviews=bad
                    ),
                    timeout=TIMEOUT,
                )
            )
            assert_refused(
                batch, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "required_reviews"
            )


class TestReviewPolicy:
    def test_predicate_default_and_assigned_only_tenants(self) -> None:
        policy = parse_review_policy(
            {
                "required_reviews": 3,
                "required_reviews_by_predicate": {"safety.blocks_release": 5},
                "assigned_only_tenants": ["acme"],
            }
        )
        assert policy.reviews_for("safety.blocks_release") == 5
        assert policy.reviews_for("anything.else") == 3
        assert not policy.unassigned_work("acme")
        assert policy.unassigned_work("globex")
        assert ReviewPolicy().reviews_for("x") == 2

    @pytest.mark.parametrize(
        ("table", "key"),
        [
            ({"required_reviews": 1}, "review.required_reviews"),
            ({"required_reviews": True}, "review.required_reviews"),
            (
                {"required_reviews_by_predicate": {"p": 11}},
                "review.required_reviews_by_predicate.p",
            ),
            ({"assigned_only_tenants": "acme"}, "review.assigned_only_tenants"),
            ({"overlap": 3}, "unknown keys"),
        ],
    )
    def test_a_bad_key_is_named(self, table: dict[str, Any], key: str) -> None:
        with pytest.raises(ValueError, match=key):
            parse_review_policy(table)


class TestRevisions:
    async def test_an_amendment_is_a_new_record_and_the_latest_counts(
        self, adjudication_db: str
    ) -> None:
        """ann amends "none" to "key": the round agrees, GetCase shows both records with the
        first superseded, the resolution rests on the amendment, and the ledger has two
        REVIEW_SUBMITTED events for ann (the second naming what it supersedes)."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await register(stub, "ann")
            await register(stub, "bob")
            case = await enqueue(stub)
            first = (await review(stub, case.case_id, "ann", "none")).review
            await review(stub, case.case_id, "bob", "key")
            assert (await state_of(stub, case.case_id)).state == pb.CASE_STATE_DISAGREED
            amended = await amend(stub, first.review_id, "key", rationale="misread the doc")
            assert amended.review.supersedes_review_id == first.review_id
            assert amended.review.rationale == "misread the doc"
            assert amended.state == pb.CASE_STATE_AGREED
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=case.case_id), timeout=TIMEOUT)
            by_id = {r.review_id: r for r in detail.reviews}
            assert by_id[first.review_id].superseded
            assert not by_id[amended.review.review_id].superseded
            resolved = await stub.ResolveCase(
                pb.ResolveCaseRequest(request_id=rid(), case_id=case.case_id, basis=UNANIMOUS),
                timeout=TIMEOUT,
            )
            assert amended.review.review_id in resolved.resolution.review_ids
            assert first.review_id not in resolved.resolution.review_ids
            events = await stub.ListAuditEvents(
                pb.ListAuditEventsRequest(page_size=1000), timeout=TIMEOUT
            )
            anns = [
                e.payload
                for e in events.events
                if e.event_type == pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED
                and e.payload["reviewer_id"] == "ann"
            ]
            assert [p["supersedes"] for p in anns] == ["", first.review_id]
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
            assert verdict.ok, verdict

    async def test_a_withdrawal_returns_the_case_and_a_new_review_supersedes_it(
        self, adjudication_db: str
    ) -> None:
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await register(stub, "ann")
            case = await enqueue(stub)
            first = (await review(stub, case.case_id, "ann", "key")).review
            assert case.case_id not in await queue_ids(stub, "ann")
            pulled = await withdraw(stub, first.review_id, reason="wrong case")
            assert pulled.review.outcome == pb.REVIEW_OUTCOME_WITHDRAWN
            assert pulled.state == pb.CASE_STATE_AWAITING_REVIEW
            assert (await state_of(stub, case.case_id)).review_count == 0
            assert case.case_id in await queue_ids(stub, "ann")
            again = await failure(amend(stub, pulled.review.review_id, "key"))
            assert again.reason == "ERROR_REASON_REVIEW_WITHDRAWN"
            back = (await review(stub, case.case_id, "ann", "none")).review
            assert back.supersedes_review_id == pulled.review.review_id
            assert (await state_of(stub, case.case_id)).review_count == 1

    async def test_only_the_latest_of_an_undecided_round_changes(
        self, adjudication_db: str
    ) -> None:
        """An older record is REVIEW_SUPERSEDED (naming the latest); once the round is
        resolved, nothing is amended; an unknown id is REVIEW_NOT_FOUND."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await register(stub, "ann")
            await register(stub, "bob")
            case = await enqueue(stub)
            first = (await review(stub, case.case_id, "ann", "none")).review
            latest = (await amend(stub, first.review_id, "key")).review
            stale = await failure(amend(stub, first.review_id, "none"))
            assert (stale.code, stale.reason) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "ERROR_REASON_REVIEW_SUPERSEDED",
            )
            assert stale.metadata["latest_review_id"] == latest.review_id
            await review(stub, case.case_id, "bob", "key")
            await stub.ResolveCase(
                pb.ResolveCaseRequest(request_id=rid(), case_id=case.case_id, basis=UNANIMOUS),
                timeout=TIMEOUT,
            )
            decided = await failure(withdraw(stub, latest.review_id))
            assert decided.reason == "ERROR_REASON_ROUND_ALREADY_RESOLVED"
            missing = await failure(amend(stub, "rev_0000000000000000", "key"))
            assert (missing.code, missing.reason) == (
                grpc.StatusCode.NOT_FOUND,
                "ERROR_REASON_REVIEW_NOT_FOUND",
            )

    async def test_bad_amendments_are_named_field_by_field(self, adjudication_db: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            error = await failure(
                server.stub.AmendReview(
                    pb.AmendReviewRequest(
                        request_id=rid(),
                        review_id="",
                        outcome=pb.REVIEW_OUTCOME_WITHDRAWN,
                        rationale="x" * 2001,
                    ),
                    timeout=TIMEOUT,
                )
            )
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert sorted(v.field for v in error.violations) == [
                "outcome",
                "rationale",
                "review_id",
            ]

    async def test_a_retried_amendment_acts_once(self, adjudication_db: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await register(stub, "ann")
            case = await enqueue(stub)
            first = (await review(stub, case.case_id, "ann", "none")).review
            request = pb.AmendReviewRequest(
                request_id=rid(), review_id=first.review_id, outcome=pb.REVIEW_OUTCOME_LABEL
            )
            request.label.string_value = "key"
            one = await stub.AmendReview(request, timeout=TIMEOUT)
            two = await stub.AmendReview(request, timeout=TIMEOUT)
            assert one == two
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=case.case_id), timeout=TIMEOUT)
            assert len(detail.reviews) == 2


class TestRevisionsBehindTheTrustBoundary:
    async def test_nobody_revises_anyone_elses_review(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            alices = (await p.review("alice", case_id, "key")).review
            error = await failure(
                p.as_("bob").WithdrawReview(
                    pb.WithdrawReviewRequest(request_id=rid(), review_id=alices.review_id)
                )
            )
            assert_refused(
                error, grpc.StatusCode.PERMISSION_DENIED, "IDENTITY_MISMATCH", "review_id"
            )
            outsider = await failure(
                p.as_("mallory").WithdrawReview(
                    pb.WithdrawReviewRequest(request_id=rid(), review_id=alices.review_id)
                )
            )
            assert outsider.code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED)
            own = await p.as_("alice").WithdrawReview(
                pb.WithdrawReviewRequest(request_id=rid(), review_id=alices.review_id)
            )
            assert own.review.reviewer_id == "alice"
            events = await p.events()
            last = [e for e in events if e.event_type == pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED][-1]
            assert last.actor.subject == "alice"
            assert last.payload["supersedes"] == alices.review_id


class TestRationale:
    async def test_the_adjudicator_sees_rationales_and_gives_one(
        self, adjudication_db: str
    ) -> None:
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case = await enqueue(stub)
            for who, label, why in (("ann", "key", "docs say so"), ("bob", "none", "<b>no</b>")):
                request = pb.SubmitReviewRequest(
                    request_id=rid(),
                    case_id=case.case_id,
                    reviewer_id=who,
                    outcome=pb.REVIEW_OUTCOME_LABEL,
                    rationale=why,
                )
                request.label.string_value = label
                await stub.SubmitReview(request, timeout=TIMEOUT)
            worklist = await stub.ListAdjudicationQueue(
                pb.ListAdjudicationQueueRequest(adjudicator_id="cy"), timeout=TIMEOUT
            )
            (item,) = worklist.items
            assert sorted(r.rationale for r in item.reviews) == ["<b>no</b>", "docs say so"]
            decision = pb.ResolveCaseRequest(
                request_id=rid(),
                case_id=case.case_id,
                basis=DECISION,
                adjudicator_reviewer_id="cy",
                rationale="the changelog settles it\nsee v2",
            )
            decision.label.string_value = "key"
            resolved = await stub.ResolveCase(decision, timeout=TIMEOUT)
            assert resolved.resolution.rationale == "the changelog settles it\nsee v2"
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=case.case_id), timeout=TIMEOUT)
            assert detail.resolutions[0].rationale == "the changelog settles it\nsee v2"
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
            assert verdict.ok, verdict

    @pytest.mark.parametrize("bad", ["x" * 2001, "bell\x07", "esc\x1b[2J"])
    async def test_a_bad_rationale_is_named(self, adjudication_db: str, bad: str) -> None:
        async with adjudication_server(adjudication_db) as server:
            await register(server.stub, "ann")
            case = await enqueue(server.stub)
            request = pb.SubmitReviewRequest(
                request_id=rid(),
                case_id=case.case_id,
                reviewer_id="ann",
                outcome=pb.REVIEW_OUTCOME_LABEL,
                rationale=bad,
            )
            request.label.string_value = "key"
            error = await failure(server.stub.SubmitReview(request, timeout=TIMEOUT))
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "rationale")
            resolve = await failure(
                server.stub.ResolveCase(
                    pb.ResolveCaseRequest(
                        request_id=rid(),
                        case_id=case.case_id,
                        basis=gold_pb2.RESOLUTION_BASIS_UNRESOLVED,
                        rationale=bad,
                    ),
                    timeout=TIMEOUT,
                )
            )
            assert_refused(resolve, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "rationale")
