"""ListCases through real servers on both engines: the filters, the order, the pages, states
derived as GetCaseState derives them, bad input named field by field, and tampered rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from assay.client import AsyncAdjudicationClient
from assay.services.adjudication.use_cases import listings
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1.adjudication_service_pb2_grpc import AdjudicationServiceStub as Stub
from tests.service import tamper_sql
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
from tests.service.test_adjudication_security import assert_refused, parties

AGREED = pb.CASE_STATE_AGREED
DISAGREED = pb.CASE_STATE_DISAGREED
AWAITING = pb.CASE_STATE_AWAITING_REVIEW


async def listed(stub: Stub, **fields: Any) -> pb.ListCasesResponse:
    reply: pb.ListCasesResponse = await stub.ListCases(
        pb.ListCasesRequest(**fields), timeout=TIMEOUT
    )
    return reply


async def every(stub: Stub, **fields: Any) -> tuple[list[str], int]:
    """Every case id a listing gives, following its tokens, and how many pages it took."""
    found: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await listed(stub, page_token=token, **fields)
        pages += 1
        found.extend(c.case_id for c in page.cases)
        token = page.next_page_token
        if not token:
            return found, pages


async def mixed(stub: Stub) -> dict[str, str]:
    """Cases in several states, enqueued in this order: name -> case id."""
    for name in ("ann", "bob"):
        await register(stub, name)
    made: dict[str, str] = {}
    made["fresh"] = (await enqueue(stub)).case_id
    made["agreed"] = (await enqueue(stub)).case_id
    await review(stub, made["agreed"], "ann", "key")
    await review(stub, made["agreed"], "bob", "key")
    made["split"] = (await enqueue(stub)).case_id
    await review(stub, made["split"], "ann", "key")
    await review(stub, made["split"], "bob", "none")
    made["half"] = (await enqueue(stub)).case_id
    await review(stub, made["half"], "ann", "key")
    made["other"] = (await enqueue(stub, tenant="tenant-b")).case_id
    return made


class TestFilters:
    async def test_every_case_with_the_state_get_case_state_gives(
        self, adjudication_db: str
    ) -> None:
        """Unfiltered, every case is listed oldest first, each summary's state, round and
        review count those GetCaseState reports, and its times and required reviews set."""
        async with adjudication_server(adjudication_db) as server:
            made = await mixed(server.stub)
            page = await listed(server.stub)
            assert [c.case_id for c in page.cases] == list(made.values())
            assert page.next_page_token == ""
            for summary in page.cases:
                state = await server.stub.GetCaseState(
                    pb.GetCaseStateRequest(case_id=summary.case_id), timeout=TIMEOUT
                )
                assert (summary.state, summary.round, summary.review_count) == (
                    state.state,
                    state.round,
                    state.review_count,
                )
                assert summary.required_reviews >= 2
                assert summary.create_time.seconds > 0
                assert summary.expire_time.ToDatetime() > summary.create_time.ToDatetime()
            assert {c.case_id: c.state for c in page.cases}[made["split"]] == DISAGREED

    async def test_states_predicate_tenant_and_order(self, adjudication_db: str) -> None:
        """Each filter keeps only what it names; newest first reverses the order."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            made = await mixed(stub)
            only = await listed(stub, states=[DISAGREED])
            assert [c.case_id for c in only.cases] == [made["split"]]
            both = await listed(stub, states=[AGREED, AWAITING])
            assert [c.case_id for c in both.cases] == [
                made["fresh"],
                made["agreed"],
                made["other"],
            ]
            assert [c.case_id for c in (await listed(stub, tenant="tenant-b")).cases] == [
                made["other"]
            ]
            none = await listed(stub, predicate="no.such.predicate")
            assert list(none.cases) == []
            some = await listed(stub, predicate="idempotency.mode", tenant="tenant-a")
            assert len(some.cases) == 4
            newest = await listed(stub, order=pb.CASE_ORDER_NEWEST_FIRST)
            assert [c.case_id for c in newest.cases] == list(reversed(made.values()))

    async def test_creation_time_range(self, adjudication_db: str) -> None:
        """create_after is inclusive, create_before exclusive."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            made = [await enqueue(stub) for _ in range(4)]
            found = await listed(
                stub, create_after=made[1].create_time, create_before=made[3].create_time
            )
            assert [c.case_id for c in found.cases] == [made[1].case_id, made[2].case_id]
            later = await listed(stub, create_after=made[2].create_time)
            assert [c.case_id for c in later.cases] == [made[2].case_id, made[3].case_id]

    async def test_an_assigned_reviewer_filter_is_accepted(self, adjudication_db: str) -> None:
        """The field is read; a case nobody was assigned is not listed under a reviewer."""
        async with adjudication_server(adjudication_db) as server:
            await enqueue(server.stub)
            found = await listed(server.stub, assigned_reviewer_id="ann")
            assert list(found.cases) == []


class TestRevisions:
    async def test_a_withdrawn_review_counts_as_none_and_required_reviews_show(
        self, adjudication_db: str
    ) -> None:
        """A round reviewed and then withdrawn is listed awaiting review with no reviews, and a
        case needing three reviews says so; both as GetCaseState derives them."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            withdrawn = (await enqueue(stub)).case_id
            first = await review(stub, withdrawn, "ann", "key")
            await stub.WithdrawReview(
                pb.WithdrawReviewRequest(request_id=rid(), review_id=first.review.review_id),
                timeout=TIMEOUT,
            )
            three = case_message()
            three.required_reviews = 3
            wide = (
                await stub.EnqueueCase(
                    pb.EnqueueCaseRequest(request_id=rid(), case=three), timeout=TIMEOUT
                )
            ).case.case_id
            await review(stub, wide, "ann", "key")
            await review(stub, wide, "bob", "key")
            found = {c.case_id: c for c in (await listed(stub)).cases}
            assert (found[withdrawn].state, found[withdrawn].review_count) == (AWAITING, 0)
            assert (found[wide].review_count, found[wide].required_reviews) == (2, 3)
            for case_id, summary in found.items():
                state = await stub.GetCaseState(
                    pb.GetCaseStateRequest(case_id=case_id), timeout=TIMEOUT
                )
                assert (summary.state, summary.review_count) == (state.state, state.review_count)
            more = await listed(stub, states=[pb.CASE_STATE_AWAITING_MORE_REVIEWS])
            assert [c.case_id for c in more.cases] == [wide]


class TestPages:
    @pytest.mark.parametrize("order", [pb.CASE_ORDER_OLDEST_FIRST, pb.CASE_ORDER_NEWEST_FIRST])
    async def test_pages_follow_on_in_either_order(self, adjudication_db: str, order: Any) -> None:
        """Pages of two cover every case once, in order, the last with no token."""
        async with adjudication_server(adjudication_db) as server:
            made = [(await enqueue(server.stub)).case_id for _ in range(5)]
            found, pages = await every(server.stub, page_size=2, order=order)
            expected = made if order == pb.CASE_ORDER_OLDEST_FIRST else made[::-1]
            assert (found, pages) == (expected, 3)

    async def test_a_rare_state_is_found_across_short_pages(
        self, adjudication_db: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Each page examines a bounded number of cases: a page may come back short (even
        empty) with a token, and following the tokens finds every case in the state."""
        monkeypatch.setattr(listings, "CASE_SCAN_PAGES", 1)
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            wanted = []
            for index in range(7):
                case_id = (await enqueue(stub)).case_id
                if index in (1, 5, 6):
                    await review(stub, case_id, "ann", "key")
                    await review(stub, case_id, "bob", "none")
                    wanted.append(case_id)
            first = await listed(stub, states=[DISAGREED], page_size=2)
            assert [c.case_id for c in first.cases] == wanted[:1]
            assert first.next_page_token
            found, pages = await every(stub, states=[DISAGREED], page_size=2)
            assert found == wanted
            assert pages >= 3

    async def test_a_token_is_bound_to_its_filters(self, adjudication_db: str) -> None:
        """A token reused with another filter or order is INVALID_PAGE_TOKEN."""
        async with adjudication_server(adjudication_db) as server:
            for _ in range(3):
                await enqueue(server.stub)
            token = (await listed(server.stub, page_size=1)).next_page_token
            for other in (
                {"order": pb.CASE_ORDER_NEWEST_FIRST},
                {"states": [AWAITING]},
                {"predicate": "idempotency.mode"},
                {"tenant": "tenant-a"},
            ):
                error = await failure(
                    server.stub.ListCases(
                        pb.ListCasesRequest(page_size=1, page_token=token, **other),
                        timeout=TIMEOUT,
                    )
                )
                assert error.code is grpc.StatusCode.INVALID_ARGUMENT
                assert error.reason == "ERROR_REASON_INVALID_PAGE_TOKEN", other


def _stamp(seconds: int, nanos: int = 0) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)


BAD_INPUT: Sequence[tuple[str, dict[str, Any], list[str]]] = (
    ("unspecified state", {"states": [AGREED, pb.CASE_STATE_UNSPECIFIED]}, ["states[1]"]),
    ("awaiting resolution", {"states": [pb.CASE_STATE_AWAITING_RESOLUTION]}, ["states[0]"]),
    ("unknown state", {"states": [DISAGREED, 999]}, ["states[1]"]),
    ("empty range", {"create_after": _stamp(100), "create_before": _stamp(100)}, ["create_before"]),
    ("bad time", {"create_after": _stamp(100, -1)}, ["create_after"]),
    ("unknown order", {"order": 7}, ["order"]),
    ("negative page", {"page_size": -1}, ["page_size"]),
    ("huge page", {"page_size": 1001}, ["page_size"]),
    ("bad tenant", {"tenant": "no spaces"}, ["tenant"]),
    ("several", {"states": [0], "page_size": -1}, ["states[0]", "page_size"]),
)


class TestBadInput:
    @pytest.mark.parametrize(
        ("fields", "paths"), [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT]
    )
    async def test_each_bad_field_is_named(
        self, tmp_path: Path, fields: dict[str, Any], paths: list[str]
    ) -> None:
        """INVALID_ARGUMENT with INVALID_FIELD and a BadRequest naming every bad field."""
        async with adjudication_server(tmp_path / "a.db") as server:
            error = await failure(
                server.stub.ListCases(pb.ListCasesRequest(**fields), timeout=TIMEOUT)
            )
        assert (error.code, error.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "ERROR_REASON_INVALID_FIELD",
        )
        assert [v.field for v in error.violations] == paths

    async def test_a_made_up_token_is_refused(self, tmp_path: Path) -> None:
        async with adjudication_server(tmp_path / "a.db") as server:
            error = await failure(
                server.stub.ListCases(pb.ListCasesRequest(page_token="nope"), timeout=TIMEOUT)
            )
        assert error.reason == "ERROR_REASON_INVALID_PAGE_TOKEN"
        assert [v.field for v in error.violations] == ["page_token"]


class TestTampering:
    async def test_an_edited_review_is_data_loss_not_a_different_state(
        self, adjudication_db: str, tmp_path: Path
    ) -> None:
        """A review label edited in the database would turn a disagreement into agreement:
        the listing reads it as GetCaseState does and answers DATA_LOSS."""
        db = adjudication_db
        async with adjudication_server(db) as server:
            made = await mixed(server.stub)
            detail = await server.stub.GetCase(
                pb.GetCaseRequest(case_id=made["split"]), timeout=TIMEOUT
            )
        bob = next(r.review_id for r in detail.reviews if r.reviewer_id == "bob")
        tamper_sql.edit(db, "UPDATE reviews SET label_key = '\"key\"' WHERE review_id = ?", bob)
        async with adjudication_server(db) as server:
            error = await failure(
                server.stub.ListCases(pb.ListCasesRequest(states=[AGREED]), timeout=TIMEOUT)
            )
        assert error.code is grpc.StatusCode.DATA_LOSS


class TestTenantWalls:
    async def test_another_tenants_cases_are_never_listed(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """globex's operator lists only globex's cases, whatever the filters; naming acme is
        TENANT_NOT_PERMITTED; a token the every-tenant operator was given is no use to them."""
        async with parties(tmp_path, adjudication_db) as p:
            acme = [await p.enqueue("acme") for _ in range(2)]
            globex = await p.enqueue("globex", by="gloria")
            operator, gloria = p.as_("operator"), p.as_("gloria")
            everything = await operator.ListCases(pb.ListCasesRequest())
            assert [c.case_id for c in everything.cases] == [*acme, globex]
            for request in (
                pb.ListCasesRequest(),
                pb.ListCasesRequest(states=[AWAITING]),
                pb.ListCasesRequest(order=pb.CASE_ORDER_NEWEST_FIRST, page_size=1),
            ):
                seen = await gloria.ListCases(request)
                assert [c.case_id for c in seen.cases] == [globex]
                assert {c.tenant for c in seen.cases} == {"globex"}
            error = await failure(gloria.ListCases(pb.ListCasesRequest(tenant="acme")))
            assert_refused(
                error, grpc.StatusCode.PERMISSION_DENIED, "TENANT_NOT_PERMITTED", "tenant"
            )
            token = (await operator.ListCases(pb.ListCasesRequest(page_size=1))).next_page_token
            error = await failure(
                gloria.ListCases(pb.ListCasesRequest(page_size=1, page_token=token))
            )
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")


class TestClient:
    async def test_the_python_client_follows_every_page(self, adjudication_db: str) -> None:
        """``AsyncAdjudicationClient.cases`` gives every matching case, states by name."""
        async with adjudication_server(adjudication_db) as server:
            made = await mixed(server.stub)
            async with AsyncAdjudicationClient(server.target) as client:
                found = [c.case_id async for c in client.cases(page_size=1)]
                assert found == list(made.values())
                split = [c.case_id async for c in client.cases(states=["disagreed"])]
                assert split == [made["split"]]
                newest = [c.case_id async for c in client.cases(newest_first=True, page_size=2)]
                assert newest == found[::-1]
                reviews = [
                    e.sequence
                    async for e in client.audit_events(
                        event_types=["REVIEW_SUBMITTED"], case_id=made["agreed"]
                    )
                ]
                assert len(reviews) == 2
