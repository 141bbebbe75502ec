"""ListAuditEvents' filters through real servers on both engines: each filter's events are
exactly those of the whole ledger that match it, in either order and across short pages,
with bad input named field by field and the tenant walls and ledger checks kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from assay.services.adjudication.use_cases import listings
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1.adjudication_service_pb2_grpc import AdjudicationServiceStub as Stub
from tests.service import tamper_sql
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    enqueue,
    failure,
    is_postgres,
    register,
    review,
)
from tests.service.test_adjudication_security import acme_team, assert_refused, parties

ENQUEUED = pb.AUDIT_EVENT_TYPE_CASE_ENQUEUED
SUBMITTED = pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED
REGISTERED = pb.AUDIT_EVENT_TYPE_REVIEWER_REGISTERED


async def events(call: Callable[[Any], Any], **fields: Any) -> tuple[list[pb.AuditEvent], int]:
    """Every event a listing gives, following its tokens, and how many pages it took."""
    found: list[pb.AuditEvent] = []
    token = ""
    pages = 0
    while True:
        page = await call(pb.ListAuditEventsRequest(page_token=token, **fields))
        pages += 1
        found.extend(page.events)
        token = page.next_page_token
        if not token:
            return found, pages


def _plain(stub: Stub) -> Callable[[Any], Any]:
    return lambda request: stub.ListAuditEvents(request, timeout=TIMEOUT)


async def ledger(stub: Stub) -> tuple[list[pb.AuditEvent], list[str]]:
    """Two reviewers, three cases (two reviewed): every event, and the case ids."""
    for name in ("ann", "bob"):
        await register(stub, name)
    cases = [(await enqueue(stub)).case_id for _ in range(3)]
    await review(stub, cases[0], "ann", "key")
    await review(stub, cases[1], "bob", "none")
    await review(stub, cases[0], "bob", "key")
    whole, _ = await events(_plain(stub), page_size=1000)
    return whole, cases


def _at(event: pb.AuditEvent) -> timestamp_pb2.Timestamp:
    return event.occur_time


class TestFilters:
    async def test_each_filter_keeps_exactly_the_matching_events(
        self, adjudication_db: str
    ) -> None:
        """Types, case, time range and newest first, alone and together, against the whole
        ledger filtered here."""
        async with adjudication_server(adjudication_db) as server:
            whole, cases = await ledger(server.stub)
            first_review = next(e for e in whole if e.event_type == SUBMITTED)
            last = whole[-1]
            table: list[tuple[dict[str, Any], list[pb.AuditEvent]]] = [
                ({"event_types": [SUBMITTED]}, [e for e in whole if e.event_type == SUBMITTED]),
                (
                    {"event_types": [REGISTERED, ENQUEUED]},
                    [e for e in whole if e.event_type in (REGISTERED, ENQUEUED)],
                ),
                ({"case_id": cases[0]}, [e for e in whole if e.payload.get("case_id") == cases[0]]),
                (
                    {"occur_after": _at(first_review), "occur_before": _at(last)},
                    [e for e in whole if first_review.sequence <= e.sequence < last.sequence],
                ),
                ({"newest_first": True}, whole[::-1]),
                (
                    {"case_id": cases[0], "event_types": [SUBMITTED], "newest_first": True},
                    [
                        e
                        for e in whole[::-1]
                        if e.event_type == SUBMITTED and e.payload.get("case_id") == cases[0]
                    ],
                ),
                ({"case_id": "case_unknown"}, []),
            ]
            for fields, expected in table:
                found, _ = await events(_plain(server.stub), **fields)
                assert [e.sequence for e in found] == [e.sequence for e in expected], fields
            assert len(table[2][1]) == 3  # enqueued and two reviews

    async def test_short_pages_still_reach_every_match(
        self, adjudication_db: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A page examines a bounded run of the ledger: with a run of three events a page may
        be empty with a token, and the tokens lead to every match, in both orders."""
        monkeypatch.setattr(listings, "MIN_AUDIT_SCAN", 3)
        monkeypatch.setattr(listings, "AUDIT_SCAN_PAGES", 1)
        async with adjudication_server(adjudication_db) as server:
            whole, _ = await ledger(server.stub)
            wanted = [e.sequence for e in whole if e.event_type == SUBMITTED]
            first = await server.stub.ListAuditEvents(
                pb.ListAuditEventsRequest(event_types=[SUBMITTED], page_size=1), timeout=TIMEOUT
            )
            assert (list(first.events), bool(first.next_page_token)) == ([], True)
            for newest in (False, True):
                found, pages = await events(
                    _plain(server.stub), event_types=[SUBMITTED], page_size=1, newest_first=newest
                )
                expected = wanted[::-1] if newest else wanted
                assert [e.sequence for e in found] == expected
                assert pages > len(wanted)

    async def test_without_filters_the_listing_is_as_before(self, adjudication_db: str) -> None:
        """No filter: every event in sequence order, paged as always."""
        async with adjudication_server(adjudication_db) as server:
            whole, _ = await ledger(server.stub)
            found, pages = await events(_plain(server.stub), page_size=4)
            assert [e.sequence for e in found] == list(range(1, len(whole) + 1))
            assert pages == -(-len(whole) // 4)


class TestBadInput:
    @pytest.mark.parametrize(
        ("fields", "paths"),
        [
            ({"event_types": [SUBMITTED, pb.AUDIT_EVENT_TYPE_UNSPECIFIED]}, ["event_types[1]"]),
            ({"event_types": [999]}, ["event_types[0]"]),
            (
                {
                    "occur_after": timestamp_pb2.Timestamp(seconds=50),
                    "occur_before": timestamp_pb2.Timestamp(seconds=10),
                },
                ["occur_before"],
            ),
            ({"occur_before": timestamp_pb2.Timestamp(seconds=1, nanos=-5)}, ["occur_before"]),
            ({"case_id": "has space", "page_size": 5000}, ["case_id", "page_size"]),
        ],
        ids=["unspecified", "unknown", "empty-range", "bad-time", "several"],
    )
    async def test_each_bad_field_is_named(
        self, tmp_path: Path, fields: dict[str, Any], paths: list[str]
    ) -> None:
        async with adjudication_server(tmp_path / "a.db") as server:
            error = await failure(
                server.stub.ListAuditEvents(pb.ListAuditEventsRequest(**fields), timeout=TIMEOUT)
            )
        assert (error.code, error.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "ERROR_REASON_INVALID_FIELD",
        )
        assert [v.field for v in error.violations] == paths

    async def test_a_token_is_bound_to_its_filters(self, tmp_path: Path) -> None:
        """A token reused with other filters, another order or none is INVALID_PAGE_TOKEN."""
        async with adjudication_server(tmp_path / "a.db") as server:
            await ledger(server.stub)
            page = await server.stub.ListAuditEvents(
                pb.ListAuditEventsRequest(event_types=[REGISTERED], page_size=1), timeout=TIMEOUT
            )
            assert page.next_page_token
            plain = await server.stub.ListAuditEvents(
                pb.ListAuditEventsRequest(page_size=1), timeout=TIMEOUT
            )
            for token, fields in (
                (page.next_page_token, {"event_types": [ENQUEUED]}),
                (page.next_page_token, {"event_types": [REGISTERED], "newest_first": True}),
                (page.next_page_token, {}),
                (plain.next_page_token, {"event_types": [REGISTERED]}),
            ):
                error = await failure(
                    server.stub.ListAuditEvents(
                        pb.ListAuditEventsRequest(page_size=1, page_token=token, **fields),
                        timeout=TIMEOUT,
                    )
                )
                assert error.reason == "ERROR_REASON_INVALID_PAGE_TOKEN", fields


class TestWallsAndChecks:
    async def test_actor_filter_and_tenant_walls(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """actor_subject keeps the events a principal caused; a globex auditor filtering by an
        acme case sees nothing of it, and an operator's token is no use to them."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            await p.review("alice", case_id, "key")
            await p.review("bob", case_id, "none")
            operator = p.as_("operator")
            found, _ = await events(operator.ListAuditEvents, actor_subject="alice")
            assert [(e.event_type, e.payload["case_id"]) for e in found] == [(SUBMITTED, case_id)]
            found, _ = await events(operator.ListAuditEvents, case_id=case_id)
            assert len(found) == 3
            gloria = p.as_("gloria")
            found, _ = await events(gloria.ListAuditEvents, case_id=case_id)
            assert found == []
            token = (
                await operator.ListAuditEvents(
                    pb.ListAuditEventsRequest(case_id=case_id, page_size=1)
                )
            ).next_page_token
            error = await failure(
                gloria.ListAuditEvents(
                    pb.ListAuditEventsRequest(case_id=case_id, page_size=1, page_token=token)
                )
            )
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")

    async def test_an_edited_event_is_data_loss(self, adjudication_db: str) -> None:
        """An event whose payload was edited in the database is never served by a filter."""
        async with adjudication_server(adjudication_db) as server:
            whole, _ = await ledger(server.stub)
        enqueued = next(e for e in whole if e.event_type == ENQUEUED)
        payload = json.dumps(dict(enqueued.payload) | {"subject": "edited"})
        cast = "?::jsonb" if is_postgres(adjudication_db) else "?"
        tamper_sql.edit(
            adjudication_db,
            f"UPDATE audit_events SET payload = {cast} WHERE sequence = ?",
            payload,
            enqueued.sequence,
        )
        async with adjudication_server(adjudication_db) as server:
            error = await failure(
                server.stub.ListAuditEvents(
                    pb.ListAuditEventsRequest(event_types=[ENQUEUED]), timeout=TIMEOUT
                )
            )
        assert error.code is grpc.StatusCode.DATA_LOSS
