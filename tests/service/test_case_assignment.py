"""Case assignment through real servers on both engines: each distribution rule, the queue
(assigned cases first, cases assigned to others left out, assigned-only tenants), the
review it refuses, unassignment and reassignment, retries, every bad field named, and the
ledger events (with their actor behind the trust boundary) and tenant walls."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.cli.main import main as cli
from assay.client import AsyncAdjudicationClient
from assay.runtime.server import serving
from assay.services.adjudication.service import build_spec
from assay.services.registry import ServeOptions
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from tests.service.adjudication_support import (
    FIXTURE,
    HUMAN,
    TIMEOUT,
    Server,
    adjudication_server,
    case_message,
    enqueue,
    failure,
    is_postgres,
    ledger_key,
    register,
    review,
    rid,
)
from tests.service.test_adjudication_security import assert_refused, parties

EACH = pb.ASSIGNMENT_RULE_EACH
ROUND_ROBIN = pb.ASSIGNMENT_RULE_ROUND_ROBIN
LEAST_LOADED = pb.ASSIGNMENT_RULE_LEAST_LOADED
INVALID = grpc.StatusCode.INVALID_ARGUMENT


@contextlib.asynccontextmanager
async def server_with(db: str, assigned_only: Sequence[str] = ()) -> AsyncIterator[Server]:
    """``adjudication_server`` with a ``[review]`` policy naming assigned-only tenants."""
    key = ledger_key(db) if is_postgres(db) else None
    options = ServeOptions(
        port=0,
        db_path=db,
        ledger_signing_key=key,
        review={"assigned_only_tenants": list(assigned_only)},
    )
    async with serving([await build_spec(options)]) as running:
        target = running[0].address
        async with grpc.aio.insecure_channel(target) as channel:
            yield Server(pb_grpc.AdjudicationServiceStub(channel), Path(db), target)


async def humans(stub: Any, *names: str) -> None:
    for name in names:
        await register(stub, name, HUMAN)


async def cases(stub: Any, count: int, tenant: str = "tenant-a") -> list[str]:
    return [(await enqueue(stub, tenant=tenant)).case_id for _ in range(count)]


def assign_request(
    case_ids: Sequence[str],
    reviewer_ids: Sequence[str],
    rule: Any = EACH,
    per_case: int = 0,
    request_id: str = "",
) -> pb.AssignCasesRequest:
    return pb.AssignCasesRequest(
        request_id=request_id or rid(),
        case_ids=case_ids,
        reviewer_ids=reviewer_ids,
        rule=rule,
        reviewers_per_case=per_case,
    )


async def assign(stub: Any, *args: Any, **kwargs: Any) -> list[list[str]]:
    reply = await stub.AssignCases(assign_request(*args, **kwargs), timeout=TIMEOUT)
    return [list(a.reviewer_ids) for a in reply.assignments]


async def unassign(
    stub: Any, case_id: str, reviewers: Sequence[str], to: Sequence[str] = ()
) -> Any:
    request = pb.UnassignCaseRequest(
        request_id=rid(), case_id=case_id, reviewer_ids=reviewers, to_reviewer_ids=to
    )
    return await stub.UnassignCase(request, timeout=TIMEOUT)


async def queue(stub: Any, reviewer_id: str, page_size: int = 0, token: str = "") -> Any:
    request = pb.ListQueueRequest(reviewer_id=reviewer_id, page_size=page_size, page_token=token)
    return await stub.ListQueue(request, timeout=TIMEOUT)


async def queue_ids(stub: Any, reviewer_id: str) -> list[tuple[str, bool]]:
    return [(c.case_id, c.assigned) for c in (await queue(stub, reviewer_id)).cases]


async def assigned_ids(stub: Any, case_id: str) -> list[str]:
    reply = await stub.GetCase(pb.GetCaseRequest(case_id=case_id), timeout=TIMEOUT)
    return list(reply.assigned_reviewer_ids)


async def assignment_events(stub: Any) -> list[tuple[str, dict[str, str]]]:
    reply = await stub.ListAuditEvents(pb.ListAuditEventsRequest(page_size=1000), timeout=TIMEOUT)
    return [
        (pb.AuditEventType.Name(e.event_type), dict(e.payload))
        for e in reply.events
        if "ASSIGNED" in pb.AuditEventType.Name(e.event_type)
    ]


class TestRules:
    async def test_each_gives_every_reviewer_every_case(self, adjudication_db: str) -> None:
        """EACH: both cases get both reviewers, one CASE_ASSIGNED each; GetCase shows them."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "bob", "ann")
            ids = await cases(stub, 2)
            assert await assign(stub, ids, ["bob", "ann"]) == [["ann", "bob"], ["ann", "bob"]]
            assert await assigned_ids(stub, ids[1]) == ["ann", "bob"]
            events = await assignment_events(stub)
            assert [t for t, _ in events] == ["AUDIT_EVENT_TYPE_CASE_ASSIGNED"] * 2
            assert events[0][1] == {
                "case_id": ids[0],
                "tenant": "tenant-a",
                "change": "1",
                "reviewer_ids": "ann,bob",
            }

    async def test_round_robin_takes_the_next_reviewers_in_turn(self, adjudication_db: str) -> None:
        """ROUND_ROBIN with two per case over three reviewers: [a, b], [c, a], [b, c]."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "a1", "b1", "c1")
            ids = await cases(stub, 3)
            got = await assign(stub, ids, ["a1", "b1", "c1"], ROUND_ROBIN, 2)
            assert got == [["a1", "b1"], ["a1", "c1"], ["b1", "c1"]]

    async def test_least_loaded_counts_open_work_and_this_call(self, adjudication_db: str) -> None:
        """LEAST_LOADED, one per case: ann holds one open case, so bob, then ann (a tie, by
        id), then bob; a case ann already reviewed is not open work."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob")
            done, held, *ids = await cases(stub, 5)
            await assign(stub, [done, held], ["ann"])
            await review(stub, done, "ann")
            got = await assign(stub, ids, ["bob", "ann"], LEAST_LOADED, 1)
            assert got == [["bob"], ["ann"], ["bob"]]

    async def test_zero_per_case_is_the_cases_required_reviews(self, adjudication_db: str) -> None:
        """ROUND_ROBIN with reviewers_per_case 0 gives each case its required reviews (2)."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "a1", "b1", "c1")
            ids = await cases(stub, 2)
            got = await assign(stub, ids, ["a1", "b1", "c1"], ROUND_ROBIN, 0)
            assert got == [["a1", "b1"], ["a1", "c1"]]

    async def test_zero_per_case_needs_a_pool_as_large_as_the_case_needs(
        self, adjudication_db: str
    ) -> None:
        """A case needing three reviews takes three with reviewers_per_case 0; a pool of two
        for it is INVALID_FIELD naming reviewers_per_case."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "a1", "b1", "c1")
            message = case_message()
            message.required_reviews = 3
            reply = await stub.EnqueueCase(
                pb.EnqueueCaseRequest(request_id=rid(), case=message), timeout=TIMEOUT
            )
            case_id = reply.case.case_id
            request = assign_request([case_id], ["a1", "b1"], LEAST_LOADED, 0)
            error = await failure(stub.AssignCases(request, timeout=TIMEOUT))
            assert_refused(error, INVALID, "INVALID_FIELD", "reviewers_per_case")
            got = await assign(stub, [case_id], ["a1", "b1", "c1"], LEAST_LOADED, 0)
            assert got == [["a1", "b1", "c1"]]

    async def test_a_retry_answers_the_first_response_once(self, adjudication_db: str) -> None:
        """The same request id returns the same bytes and writes no second event; a reviewer
        the case has already is a no-op (no event)."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob")
            ids = await cases(stub, 1)
            request = assign_request(ids, ["ann"], request_id="assign-once")
            first = await stub.AssignCases(request, timeout=TIMEOUT)
            again = await stub.AssignCases(request, timeout=TIMEOUT)
            assert first == again
            assert await assign(stub, ids, ["ann"]) == [["ann"]]
            assert len(await assignment_events(stub)) == 1


class TestQueue:
    async def test_assigned_first_then_unassigned_never_others(self, adjudication_db: str) -> None:
        """ann's queue: her assigned cases (marked), then cases assigned to nobody; a case
        assigned only to bob is not in it, and paging one by one walks both tiers."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob")
            free, bobs, mine_2, mine_1 = await cases(stub, 4)
            await assign(stub, [bobs], ["bob"])
            await assign(stub, [mine_1, mine_2], ["ann"])
            mine = sorted([mine_1, mine_2])
            expected = [(mine[0], True), (mine[1], True), (free, False)]
            assert await queue_ids(stub, "ann") == expected
            walked: list[tuple[str, bool]] = []
            token = ""
            while True:
                page = await queue(stub, "ann", 1, token)
                walked += [(c.case_id, c.assigned) for c in page.cases]
                token = page.next_page_token
                if not token:
                    break
            assert walked == expected
            assert (bobs, True) in await queue_ids(stub, "bob")

    async def test_a_case_assigned_to_others_refuses_a_review(self, adjudication_db: str) -> None:
        """SubmitReview by ann on bob's case: FAILED_PRECONDITION CASE_NOT_ASSIGNED."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob")
            (case_id,) = await cases(stub, 1)
            await assign(stub, [case_id], ["bob"])
            error = await failure(review(stub, case_id, "ann"))
            assert_refused(error, grpc.StatusCode.FAILED_PRECONDITION, "CASE_NOT_ASSIGNED")
            assert "bob" not in error.message
            await review(stub, case_id, "bob")

    async def test_an_assigned_only_tenant_takes_assigned_work_only(
        self, adjudication_db: str
    ) -> None:
        """In an assigned-only tenant, an unassigned case is in nobody's queue and refuses a
        review; another tenant's unassigned case is still offered."""
        async with server_with(adjudication_db, ["tenant-a"]) as server:
            stub = server.stub
            await humans(stub, "ann")
            (closed,) = await cases(stub, 1)
            (opened,) = await cases(stub, 1, tenant="tenant-b")
            assert await queue_ids(stub, "ann") == [(opened, False)]
            error = await failure(review(stub, closed, "ann"))
            assert_refused(error, grpc.StatusCode.FAILED_PRECONDITION, "CASE_NOT_ASSIGNED")
            await assign(stub, [closed], ["ann"])
            assert await queue_ids(stub, "ann") == [(closed, True), (opened, False)]
            await review(stub, closed, "ann")


class TestUnassign:
    async def test_unassign_and_reassign(self, adjudication_db: str) -> None:
        """Unassigning bob leaves ann (CASE_UNASSIGNED); replacing ann by cy is one
        CASE_REASSIGNED; the case is back in bob's queue only as unassigned work once empty."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob", "cy")
            (case_id,) = await cases(stub, 1)
            await assign(stub, [case_id], ["ann", "bob"])
            reply = await unassign(stub, case_id, ["bob"])
            assert list(reply.assignment.reviewer_ids) == ["ann"]
            assert await queue_ids(stub, "bob") == []
            reply = await unassign(stub, case_id, ["ann"], to=["cy"])
            assert list(reply.assignment.reviewer_ids) == ["cy"]
            events = await assignment_events(stub)
            assert [t.removeprefix("AUDIT_EVENT_TYPE_") for t, _ in events] == [
                "CASE_ASSIGNED",
                "CASE_UNASSIGNED",
                "CASE_REASSIGNED",
            ]
            assert events[1][1]["reviewer_ids"] == "bob"
            assert (events[2][1]["from_reviewer_ids"], events[2][1]["to_reviewer_ids"]) == (
                "ann",
                "cy",
            )
            await unassign(stub, case_id, ["cy"])
            assert await queue_ids(stub, "bob") == [(case_id, False)]

    async def test_unassigning_someone_not_assigned_names_them(self, adjudication_db: str) -> None:
        """reviewer_ids[1] is not assigned: INVALID_ARGUMENT naming it, nothing changes."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob")
            (case_id,) = await cases(stub, 1)
            await assign(stub, [case_id], ["ann"])
            error = await failure(unassign(stub, case_id, ["ann", "bob"]))
            assert_refused(error, INVALID, "INVALID_FIELD", "reviewer_ids[1]")
            assert await assigned_ids(stub, case_id) == ["ann"]


class TestBadInput:
    async def test_every_bad_field_is_named(self, adjudication_db: str) -> None:
        """Malformed and repeated ids, no rule, a negative count: each field named at once."""
        async with adjudication_server(adjudication_db) as server:
            request = assign_request(["c1", "c1"], ["Bad Id", "ann", "ann"], 0, -1)
            error = await failure(server.stub.AssignCases(request, timeout=TIMEOUT))
            assert error.code is INVALID
            assert sorted(v.field for v in error.violations) == sorted(
                [
                    "case_ids",
                    "case_ids[1]",
                    "reviewer_ids[0]",
                    "reviewer_ids[2]",
                    "rule",
                    "reviewers_per_case",
                ]
            )

    @pytest.mark.parametrize(
        ("case_count", "pool", "rule", "per_case", "field"),
        [
            (0, ["ann"], EACH, 0, "case_ids"),
            (1001, ["ann"], EACH, 0, "case_ids"),
            (1, [], EACH, 0, "reviewer_ids"),
            (1, ["ann"], EACH, 1, "reviewers_per_case"),
            (1, ["ann"], ROUND_ROBIN, 2, "reviewers_per_case"),
        ],
    )
    async def test_counts(
        self,
        adjudication_db: str,
        case_count: int,
        pool: list[str],
        rule: Any,
        per_case: int,
        field: str,
    ) -> None:
        """Empty or over 1,000 cases, no reviewers, a count with EACH or beyond the pool."""
        async with adjudication_server(adjudication_db) as server:
            request = assign_request([f"c{i}" for i in range(case_count)], pool, rule, per_case)
            error = await failure(server.stub.AssignCases(request, timeout=TIMEOUT))
            assert_refused(error, INVALID, "INVALID_FIELD", field)

    async def test_unknown_and_fixture_reviewers_are_refused(self, adjudication_db: str) -> None:
        """An unregistered reviewer and a MECHANISM_TEST_FIXTURE one: each named."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann")
            await register(stub, "fixture-1", FIXTURE)
            ids = await cases(stub, 1)
            request = assign_request(ids, ["ann", "nobody", "fixture-1"])
            error = await failure(stub.AssignCases(request, timeout=TIMEOUT))
            assert [v.field for v in error.violations] == ["reviewer_ids[1]", "reviewer_ids[2]"]
            assert await assigned_ids(stub, ids[0]) == []

    async def test_an_unknown_case_is_not_found_by_its_index(self, adjudication_db: str) -> None:
        """NOT_FOUND CASE_NOT_FOUND naming case_ids[1]; the first case is not assigned."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann")
            (case_id,) = await cases(stub, 1)
            error = await failure(stub.AssignCases(assign_request([case_id, "case_none"], ["ann"])))
            assert (error.code, error.reason) == (
                grpc.StatusCode.NOT_FOUND,
                "ERROR_REASON_CASE_NOT_FOUND",
            )
            assert error.metadata["field"] == "case_ids[1]"
            assert await assigned_ids(stub, case_id) == []


class TestTrustBoundary:
    async def test_events_carry_the_actor_and_tenants_are_walled(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """The operator's assignment is recorded with them as actor; gloria (globex only)
        cannot see, so cannot assign, an acme case; alice's queue marks her assigned case
        and bob, not assigned, is refused a review of it."""
        async with parties(tmp_path, adjudication_db) as p:
            for name in ("alice", "bob"):
                await p.register(name)
            case_id = await p.enqueue()
            operator = p.as_("operator")
            await operator.AssignCases(assign_request([case_id], ["alice"]))
            events = [
                e for e in await p.events() if e.event_type == pb.AUDIT_EVENT_TYPE_CASE_ASSIGNED
            ]
            assert [e.actor.subject for e in events] == ["operator"]
            error = await failure(p.as_("gloria").AssignCases(assign_request([case_id], ["bob"])))
            assert error.code == grpc.StatusCode.NOT_FOUND
            reply = await p.as_("alice").ListQueue(pb.ListQueueRequest(reviewer_id="alice"))
            assert [(c.case_id, c.assigned) for c in reply.cases] == [(case_id, True)]
            error = await failure(p.review("bob", case_id))
            assert_refused(error, grpc.StatusCode.FAILED_PRECONDITION, "CASE_NOT_ASSIGNED")

    async def test_a_reviewer_sees_no_blinded_view_of_a_case_assigned_to_others(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """GetBlindedCase keeps the queue's rule: alice, assigned, sees the case; bob, not
        assigned, is told it does not exist (as for any case not waiting for him)."""
        async with parties(tmp_path, adjudication_db) as p:
            for name in ("alice", "bob"):
                await p.register(name)
            case_id = await p.enqueue()
            request = pb.GetBlindedCaseRequest(case_id=case_id)
            assert (await p.as_("bob").GetBlindedCase(request)).case.case_id == case_id
            await p.as_("operator").AssignCases(assign_request([case_id], ["alice"]))
            assert (await p.as_("alice").GetBlindedCase(request)).case.case_id == case_id
            error = await failure(p.as_("bob").GetBlindedCase(request))
            assert_refused(error, grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND")


class TestListing:
    async def test_list_cases_filters_and_shows_assignments(self, adjudication_db: str) -> None:
        """ListCases by assigned reviewer lists ann's cases only; every summary names its
        assigned reviewers (none for an unassigned case)."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann", "bob")
            first, second, third = await cases(stub, 3)
            await assign(stub, [first, third], ["ann"])
            await assign(stub, [second, third], ["bob"])
            request = pb.ListCasesRequest(assigned_reviewer_id="ann")
            reply = await stub.ListCases(request, timeout=TIMEOUT)
            assert [c.case_id for c in reply.cases] == [first, third]
            reply = await stub.ListCases(pb.ListCasesRequest(), timeout=TIMEOUT)
            assert {c.case_id: list(c.assigned_reviewer_ids) for c in reply.cases} == {
                first: ["ann"],
                second: ["bob"],
                third: ["ann", "bob"],
            }
            await unassign(stub, first, ["ann"])
            reply = await stub.ListCases(pb.ListCasesRequest(assigned_reviewer_id="ann"))
            assert [c.case_id for c in reply.cases] == [third]


class TestCommandLineAndClient:
    async def test_case_assign_and_unassign_commands(
        self, adjudication_db: str, capsys: pytest.CaptureFixture[str], log_stream: io.StringIO
    ) -> None:
        """``assay case assign`` (round-robin, one per case) and ``case unassign --to`` print
        each case's assignment; a bad rule is a usage error before any call."""
        async with adjudication_server(adjudication_db) as server:
            await humans(server.stub, "ann", "bob", "cy")
            ids = await cases(server.stub, 2)

            async def run(*args: str) -> int:
                code: int = await asyncio.to_thread(cli, [*args, "--target", server.target])
                return code

            capsys.readouterr()
            args = ["case", "assign", *ids, "--to", "ann,bob", "--rule", "round-robin"]
            assert await run(*args, "--per-case", "1", "--json") == 0
            shown = json.loads(capsys.readouterr().out)["assignments"]
            assert [a["reviewerIds"] for a in shown] == [["ann"], ["bob"]]
            assert await run("case", "unassign", ids[0], "--reviewer", "ann", "--to", "cy") == 0
            assert "cy" in capsys.readouterr().out
            assert await assigned_ids(server.stub, ids[0]) == ["cy"]
            with pytest.raises(SystemExit):
                await run("case", "assign", ids[0], "--to", "ann", "--rule", "random")

    async def test_the_client_assigns_in_plain_values(self, adjudication_db: str) -> None:
        """``assign`` by rule name and ``unassign`` return the assignments after."""
        async with adjudication_server(adjudication_db) as server:
            await humans(server.stub, "ann", "bob")
            ids = await cases(server.stub, 2)
            async with AsyncAdjudicationClient(server.target) as client:
                found = await client.assign(ids, ["ann", "bob"], rule="least-loaded", per_case=1)
                assert [list(a.reviewer_ids) for a in found] == [["ann"], ["bob"]]
                after = await client.unassign(ids[1], ["bob"], to=["ann"])
                assert list(after.reviewer_ids) == ["ann"]


class TestDeletion:
    async def test_assignments_go_with_their_tenants_cases(self, adjudication_db: str) -> None:
        """DeleteTenantRecords removes tenant-a's assignment rows with its cases (the counts
        are of reviews and resolutions only); the ledger still verifies, and tenant-b's
        assignment stays."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann")
            (gone,) = await cases(stub, 1)
            (kept,) = await cases(stub, 1, tenant="tenant-b")
            await assign(stub, [gone, kept], ["ann"])
            reply = await stub.DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="tenant-a"),
                timeout=TIMEOUT,
            )
            assert (reply.deleted.cases, reply.deleted.reviews) == (1, 0)
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
            assert verdict.ok, verdict.detail
            assert await assigned_ids(stub, kept) == ["ann"]
            assert await queue_ids(stub, "ann") == [(kept, True)]


class TestConcurrency:
    async def test_assignments_and_reviews_in_one_batch(self, adjudication_db: str) -> None:
        """Assignments and reviews of the same cases sent together (group-committed in the
        same batches) all succeed, each review seeing the assignment written before it, and
        the ledger verifies."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            await humans(stub, "ann")
            ids = await cases(stub, 12)
            calls = [stub.AssignCases(assign_request([c], ["ann"]), timeout=TIMEOUT) for c in ids]
            calls += [review(stub, c, "ann") for c in ids]
            await asyncio.gather(*calls)
            verdict = await stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=TIMEOUT)
            assert verdict.ok, verdict.detail
            assert [await assigned_ids(stub, c) for c in ids] == [["ann"]] * len(ids)
