"""A round's reviews through real servers on both engines: a round with its two reviews
refuses more (racing reviews included), a reviewer never learns from a state whether the
other reviewer agreed, and a refused label names the candidates.

The blinding tests run behind the trust boundary (real TLS, real ES256 tokens, the example
principals: alice and bob reviewers of acme, carol adjudicator and reviewer of acme)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.runtime.status import MAX_DESCRIPTION_BYTES, decode_rpc_error
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    enqueue,
    failure,
    register,
    review,
    rid,
)
from tests.service.test_adjudication_security import As, acme_team, assert_refused, parties

UNANIMOUS = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
DECISION = gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION


def decision(case_id: str, adjudicator: str, label: str) -> pb.ResolveCaseRequest:
    request = pb.ResolveCaseRequest(
        request_id=rid(), case_id=case_id, basis=DECISION, adjudicator_reviewer_id=adjudicator
    )
    request.label.string_value = label
    return request


async def state_of(stub: Any, case_id: str) -> pb.GetCaseStateResponse:
    """GetCaseState through a plain stub or one carrying a principal's token (``As``)."""
    request = pb.GetCaseStateRequest(case_id=case_id)
    reply: pb.GetCaseStateResponse = await (
        stub.GetCaseState(request)
        if isinstance(stub, As)
        else stub.GetCaseState(request, timeout=TIMEOUT)
    )
    return reply


class TestRoundComplete:
    @pytest.mark.parametrize(
        ("labels", "state"),
        [
            (("key", "key"), pb.CASE_STATE_AGREED),
            (("key", "none"), pb.CASE_STATE_DISAGREED),
        ],
    )
    async def test_a_third_review_is_refused_and_the_state_stays(
        self, adjudication_db: str, labels: tuple[str, str], state: int
    ) -> None:
        """A round with two reviews refuses a third with ROUND_COMPLETE, and its state holds."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", labels[0])
            await review(stub, case.case_id, "bob", labels[1])
            third = "none" if labels == ("key", "key") else "key"
            error = await failure(review(stub, case.case_id, "cy", third))
            assert (error.code, error.reason) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "ERROR_REASON_ROUND_COMPLETE",
            ), error
            assert error.metadata["current_round"] == "1"
            after = await state_of(stub, case.case_id)
            assert (after.state, after.review_count) == (state, 2)

    async def test_racing_third_reviews_are_all_refused(self, adjudication_db: str) -> None:
        """Two third reviews sent at once are both refused; the round keeps its two."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy", "dee"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", "key")
            await review(stub, case.case_id, "bob", "key")
            errors = await asyncio.gather(
                failure(review(stub, case.case_id, "cy", "none")),
                failure(review(stub, case.case_id, "dee", "none")),
            )
            assert [e.reason for e in errors] == ["ERROR_REASON_ROUND_COMPLETE"] * 2
            after = await state_of(stub, case.case_id)
            assert (after.state, after.review_count) == (pb.CASE_STATE_AGREED, 2)

    async def test_racing_second_reviews_leave_exactly_two(self, adjudication_db: str) -> None:
        """Four reviewers racing for a round's second place: one wins, three are refused."""
        racers = ("bob", "cy", "dee", "eve")
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", *racers):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", "key")
            outcomes = await asyncio.gather(
                *(review(stub, case.case_id, name, "none") for name in racers),
                return_exceptions=True,
            )
            won = [o for o in outcomes if isinstance(o, pb.SubmitReviewResponse)]
            lost = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
            assert (len(won), len(lost)) == (1, len(racers) - 1), outcomes
            assert all(e.code() == grpc.StatusCode.FAILED_PRECONDITION for e in lost)
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=case.case_id), timeout=TIMEOUT)
            assert len(detail.reviews) == 2
            assert (await state_of(stub, case.case_id)).state == pb.CASE_STATE_DISAGREED

    async def test_replicas_racing_for_a_rounds_second_place_leave_two(
        self, postgres_dsn: str
    ) -> None:
        """Two servers on one PostgreSQL database (two replicas, each its own writer): for
        each of 8 cases, two reviews sent at once through different replicas, after a first;
        every round ends with exactly two reviews and the loser is ROUND_COMPLETE."""
        async with (
            adjudication_server(postgres_dsn) as one,
            adjudication_server(postgres_dsn) as two,
        ):
            for name in ("ann", "bob", "cy"):
                await register(one.stub, name)
            made = [(await enqueue(one.stub)).case_id for _ in range(8)]
            for case_id in made:
                await review(one.stub, case_id, "ann", "key")
            outcomes = await asyncio.gather(
                *(
                    review(server.stub, case_id, name, "none")
                    for case_id in made
                    for server, name in ((one, "bob"), (two, "cy"))
                ),
                return_exceptions=True,
            )
            lost = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
            assert len(lost) == len(made), outcomes
            reasons = {decode_rpc_error(e).reason for e in lost}
            assert reasons == {"ERROR_REASON_ROUND_COMPLETE"}
            for case_id in made:
                assert (await state_of(two.stub, case_id)).review_count == 2

    async def test_a_new_round_takes_two_reviews_again(self, adjudication_db: str) -> None:
        """After the round is resolved and frozen, the next round accepts two reviews."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", "key")
            await review(stub, case.case_id, "bob", "key")
            await stub.ResolveCase(
                pb.ResolveCaseRequest(request_id=rid(), case_id=case.case_id, basis=UNANIMOUS),
                timeout=TIMEOUT,
            )
            await stub.FreezeGoldLabel(
                pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case.case_id), timeout=TIMEOUT
            )
            await review(stub, case.case_id, "cy", "none", round_=2)
            second = await review(stub, case.case_id, "ann", "none", round_=2)
            assert second.state == pb.CASE_STATE_AGREED
            error = await failure(review(stub, case.case_id, "bob", "key", round_=2))
            assert error.reason == "ERROR_REASON_ROUND_COMPLETE"


class TestStateBlinding:
    @pytest.mark.parametrize(
        ("labels", "state"),
        [
            (("key", "key"), pb.CASE_STATE_AGREED),
            (("key", "none"), pb.CASE_STATE_DISAGREED),
        ],
    )
    async def test_reviewers_see_awaiting_resolution_until_the_round_is_resolved(
        self, tmp_path: Path, adjudication_db: str, labels: tuple[str, str], state: int
    ) -> None:
        """Both reviewers see AWAITING_RESOLUTION whether they agreed or not; the operator and
        an adjudicator outside the round see the real state; once resolved, everyone does."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            first = await p.review("alice", case_id, labels[0])
            assert first.state == pb.CASE_STATE_AWAITING_SECOND_REVIEW
            second = await p.review("bob", case_id, labels[1])
            assert second.state == pb.CASE_STATE_AWAITING_RESOLUTION
            for reviewer in ("alice", "bob"):
                seen = await state_of(p.as_(reviewer), case_id)
                assert (seen.state, seen.review_count) == (pb.CASE_STATE_AWAITING_RESOLUTION, 2)
            for insider in ("operator", "carol"):
                assert (await state_of(p.as_(insider), case_id)).state == state
            if state == pb.CASE_STATE_AGREED:
                resolve = pb.ResolveCaseRequest(request_id=rid(), case_id=case_id, basis=UNANIMOUS)
            else:
                resolve = decision(case_id, "carol", "key")
            await p.as_("carol" if state == pb.CASE_STATE_DISAGREED else "operator").ResolveCase(
                resolve
            )
            for reviewer in ("alice", "bob"):
                seen = await state_of(p.as_(reviewer), case_id)
                assert seen.state == pb.CASE_STATE_RESOLVED

    @pytest.mark.parametrize("other", ["key", "none"])
    async def test_an_adjudicator_who_reviewed_learns_nothing_from_the_round(
        self, tmp_path: Path, adjudication_db: str, other: str
    ) -> None:
        """carol reviewed the round: her state reads AWAITING_RESOLUTION and deciding it is
        refused as ADJUDICATOR_IS_REVIEWER whether or not bob agreed with her."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            await p.review("carol", case_id, "key")
            await p.review("bob", case_id, other)
            carol = p.as_("carol")
            assert (await state_of(carol, case_id)).state == pb.CASE_STATE_AWAITING_RESOLUTION
            error = await failure(carol.ResolveCase(decision(case_id, "carol", "key")))
            assert_refused(error, grpc.StatusCode.FAILED_PRECONDITION, "ADJUDICATOR_IS_REVIEWER")

    async def test_a_reviewer_outside_the_round_sees_no_agreement(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A reviewer of the tenant who did not review the round sees AWAITING_RESOLUTION too."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            await p.review("alice", case_id, "key")
            await p.review("carol", case_id, "none")
            seen = await state_of(p.as_("bob"), case_id)
            assert seen.state == pb.CASE_STATE_AWAITING_RESOLUTION


class TestLabelNotACandidate:
    async def test_a_refused_review_label_names_the_candidates(self, adjudication_db: str) -> None:
        """INVALID_ARGUMENT, LABEL_NOT_A_CANDIDATE on `label`, listing the candidates."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await register(stub, "ann")
            case = await enqueue(stub, candidates=("key", "none", "both"))
            error = await failure(review(stub, case.case_id, "ann", "other"))
            assert (error.code, error.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "ERROR_REASON_LABEL_NOT_A_CANDIDATE",
            )
            [violation] = error.violations
            assert violation.field == "label"
            assert violation.description.endswith(': "key", "none", "both"'), violation

    async def test_a_refused_decision_label_names_the_candidates(
        self, adjudication_db: str
    ) -> None:
        """An adjudicator's decision outside the candidates is refused the same way."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", "key")
            await review(stub, case.case_id, "bob", "none")
            error = await failure(stub.ResolveCase(decision(case.case_id, "cy", "maybe")))
            assert error.reason == "ERROR_REASON_LABEL_NOT_A_CANDIDATE"
            assert [v.field for v in error.violations] == ["label"]
            assert error.violations[0].description.endswith(': "key", "none"')

    async def test_many_long_candidates_are_listed_within_the_bound(
        self, adjudication_db: str
    ) -> None:
        """64 candidates of 300 characters: each is clipped, the rest counted, and the whole
        description arrives unclipped by the runtime."""
        candidates = tuple(f"{i:02d}" + "x" * 298 for i in range(64))
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await register(stub, "ann")
            case = await enqueue(stub, candidates=candidates)
            error = await failure(review(stub, case.case_id, "ann", "other"))
            description = error.violations[0].description
            assert len(description.encode()) <= MAX_DESCRIPTION_BYTES
            assert description.startswith("is not one of the case's candidate values: \"00xxx")
            shown = description.count("\u2026")
            assert shown >= 2
            assert description.endswith(f" and {64 - shown} more")
