"""The review-work pages' pure parts: the session's own reviews and their bounds, the
review form read and prefilled, a refusal's violations beside their fields, and the case
list's filters and links."""

from __future__ import annotations

import grpc
import pytest
from starlette.datastructures import FormData, QueryParams

from assay.client.errors import InvalidArgumentError
from assay.console import own_reviews
from assay.console.own_reviews import OwnReviews
from assay.console.pages import case_work
from assay.console.pages.common import named_problems, note
from assay.console.pages.reviewing import Answer
from assay.errors import FieldViolation
from assay.v1 import adjudication_service_pb2 as adj


def blinded(case_id: str, context: str = "") -> adj.BlindedCase:
    case = adj.BlindedCase(case_id=case_id, subject="api:x", predicate="p", context=context)
    for value in ("key", "none"):
        case.candidate_values.add().string_value = value
    return case


def refused(*violations: tuple[str, str]) -> InvalidArgumentError:
    return InvalidArgumentError(
        grpc.StatusCode.INVALID_ARGUMENT,
        "bad request",
        "ERROR_REASON_INVALID_FIELD",
        tuple(FieldViolation(f, d) for f, d in violations),
    )


class TestOwnReviews:
    def test_the_latest_review_per_case_is_kept_and_said_once(self) -> None:
        kept = OwnReviews()
        assert kept.keep(blinded("c1"), adj.Review(review_id="r1"))
        assert kept.keep(blinded("c1"), adj.Review(review_id="r2"))
        found = kept.get("c1")
        assert found is not None
        assert found.review.review_id == "r2"
        just = kept.just_kept()
        assert just is not None
        assert just.case.case_id == "c1"
        assert kept.just_kept() is None
        kept.forget("c1")
        assert kept.get("c1") is None

    def test_the_oldest_go_first_and_a_large_case_is_kept_slim_or_not_at_all(self) -> None:
        kept = OwnReviews()
        for n in range(own_reviews.MAX_KEPT + 3):
            kept.keep(blinded(f"c{n}"), adj.Review(review_id=f"r{n}"))
        shown = [k.case.case_id for k in kept.newest_first()]
        assert len(shown) == own_reviews.MAX_KEPT
        assert shown[0] == f"c{own_reviews.MAX_KEPT + 2}"
        assert kept.get("c0") is None
        long_context = blinded("long", context="x" * own_reviews.MAX_BYTES)
        assert kept.keep(long_context, adj.Review(review_id="r"))
        slim = kept.get("long")
        assert slim is not None
        assert not slim.case.context
        assert len(slim.case.candidate_values) == 2
        large = blinded("big")
        large.candidate_values.add().string_value = "v" * own_reviews.MAX_BYTES
        assert not kept.keep(large, adj.Review(review_id="r"))
        assert kept.get("big") is None


class TestTheReviewForm:
    def test_a_posted_answer_fills_the_request_with_line_breaks_as_newlines(self) -> None:
        form = FormData([("answer", "1"), ("reason", ""), ("rationale", "one\r\ntwo\rthree")])
        answer = Answer.posted(form)
        request = adj.AmendReviewRequest(review_id="r1")
        assert answer.fill(request, blinded("c1").candidate_values)
        assert request.outcome == adj.REVIEW_OUTCOME_LABEL
        assert request.label.string_value == "none"
        assert request.rationale == "one\ntwo\nthree"
        assert not request.reason

    def test_a_decline_carries_its_reason_and_no_choice_is_a_problem(self) -> None:
        request = adj.SubmitReviewRequest()
        assert Answer("not-evaluable", "posed badly").fill(request, [])
        assert (request.outcome, request.reason) == (
            adj.REVIEW_OUTCOME_NOT_EVALUABLE,
            "posed badly",
        )
        for posted in ("7", "\u00b2", "-1"):
            nothing = Answer(posted)
            assert not nothing.fill(adj.SubmitReviewRequest(), blinded("c1").candidate_values)
            assert set(nothing.problems) == {"answer"}

    def test_a_review_prefills_the_form(self) -> None:
        review = adj.Review(outcome=adj.REVIEW_OUTCOME_LABEL, rationale="why")
        review.label.string_value = "none"
        answer = Answer.of(review, blinded("c1"))
        assert (answer.choice, answer.rationale) == ("1", "why")
        declined = adj.Review(outcome=adj.REVIEW_OUTCOME_UNRESOLVED, reason="unclear")
        assert Answer.of(declined, blinded("c1")).choice == "unresolved"

    def test_violations_go_beside_their_fields_and_the_rest_above(self) -> None:
        answer = Answer("0")
        answer.refused(refused(("rationale", "no control characters"), ("case_id", "odd")))
        assert answer.problems == {"rationale": "no control characters", "": "odd"}
        assert named_problems(refused(), {}) == {"": "bad request"}

    def test_note_keeps_tabs_and_newlines(self) -> None:
        assert note("a\tb\r\n\r\nc") == "a\tb\n\nc"


class TestTheCaseList:
    def test_filters_are_read_and_a_bad_time_is_named(self) -> None:
        query = QueryParams(
            [("state", "DISAGREED"), ("state", "BOGUS"), ("predicate", " p "), ("since", "x")]
        )
        chosen, problems = case_work.filters(query)
        assert chosen["states"] == ["DISAGREED"]
        assert chosen["predicate"] == "p"
        assert set(problems) == {"since"}

    def test_the_request_and_the_next_page_link_keep_the_filters(self) -> None:
        chosen, problems = case_work.filters(
            QueryParams([("state", "AGREED"), ("order", "newest"), ("since", "2026-12-03T16:00")])
        )
        assert not problems
        request = case_work.list_request(chosen, "tok")
        assert list(request.states) == [adj.CASE_STATE_AGREED]
        assert request.order == adj.CASE_ORDER_NEWEST_FIRST
        assert request.create_after.ToJsonString() == "2026-12-03T16:00:00Z"
        assert request.page_token == "tok"
        link = case_work.list_link(chosen, "a/b")
        assert link == (
            "/operate/cases?since=2026-12-03T16%3A00&order=newest&state=AGREED&page=a%2Fb"
        )
        assert case_work.list_link(case_work.filters(QueryParams(""))[0]) == "/operate/cases"

    @pytest.mark.parametrize(
        ("typed", "ids"),
        [("alice, bob\ncarol", ["alice", "bob", "carol"]), (" alice alice ", ["alice"])],
    )
    def test_reviewer_ids_are_split_once_each(self, typed: str, ids: list[str]) -> None:
        assert case_work.reviewer_ids(typed) == ids

    def test_a_refused_reviewer_is_named_by_the_id_asked_for(self) -> None:
        problems = case_work.assign_problems(
            refused(("reviewer_ids[1]", "is not HUMAN"), ("rule", "is required")),
            ["alice", "robot"],
        )
        assert problems == {"reviewer_ids": "robot: is not HUMAN", "rule": "is required"}
        elsewhere = case_work.assign_problems(
            refused(("case_ids[0]", "is repeated")), ["alice"], ["c9"]
        )
        assert elsewhere == {"": "c9: is repeated"}
