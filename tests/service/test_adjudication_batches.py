"""EnqueueCases through a real server on both engines: all or nothing, every violation at once,
one CASE_ENQUEUED event per case in request order, and retries answered with the first bytes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import count

import grpc
import pytest

from assay.errors import MAX_VIOLATIONS, InvalidArgument
from assay.services.adjudication.domain import batches
from assay.services.adjudication.domain.model import EVERY_TENANT, AuditEventType
from assay.services.adjudication.service import open_store
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey
from assay.services.adjudication.wire import convert
from assay.v1 import adjudication_service_pb2 as pb
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    case_message,
    failure,
    register,
    rid,
)

ENQUEUED = pb.AUDIT_EVENT_TYPE_CASE_ENQUEUED


def batch(size: int, tenant: str = "tenant-a") -> list[pb.Case]:
    found = []
    for i in range(size):
        message = case_message(tenant=tenant)
        message.subject = f"api:item-{i}"
        found.append(message)
    return found


async def events(stub: object) -> list[pb.AuditEvent]:
    reply = await stub.ListAuditEvents(  # type: ignore[attr-defined]
        pb.ListAuditEventsRequest(page_size=1000), timeout=TIMEOUT
    )
    return list(reply.events)


async def verified(stub: object) -> pb.VerifyAuditChainResponse:
    reply: pb.VerifyAuditChainResponse = await stub.VerifyAuditChain(  # type: ignore[attr-defined]
        pb.VerifyAuditChainRequest(), timeout=TIMEOUT
    )
    return reply


class TestStored:
    async def test_every_case_is_stored_in_request_order_with_one_event_each(
        self, adjudication_db: str
    ) -> None:
        """Three cases: ids in request order, one CASE_ENQUEUED each, in order."""
        async with adjudication_server(adjudication_db) as server:
            cases = batch(3)
            reply = await server.stub.EnqueueCases(
                pb.EnqueueCasesRequest(request_id=rid(), cases=cases), timeout=TIMEOUT
            )
            assert [c.subject for c in reply.cases] == ["api:item-0", "api:item-1", "api:item-2"]
            assert [c.tenant for c in reply.cases] == ["tenant-a"] * 3
            assert len({c.case_id for c in reply.cases}) == 3
            assert all(c.content_digest and c.HasField("local_verdict") for c in reply.cases)
            found = await events(server.stub)
            assert [e.event_type for e in found] == [ENQUEUED] * 3
            assert [e.payload["case_id"] for e in found] == [c.case_id for c in reply.cases]
            for stored in reply.cases:
                got = await server.stub.GetCase(
                    pb.GetCaseRequest(case_id=stored.case_id), timeout=TIMEOUT
                )
                assert got.case == stored
            assert (await verified(server.stub)).ok

    async def test_a_retry_returns_the_first_response_bytes(self, adjudication_db: str) -> None:
        """The same request id and batch: the same bytes, nothing stored twice; the same id
        with another batch is REQUEST_ID_REUSED."""
        async with adjudication_server(adjudication_db) as server:
            request = pb.EnqueueCasesRequest(request_id=rid(), cases=batch(3))
            first = await server.stub.EnqueueCases(request, timeout=TIMEOUT)
            again = await server.stub.EnqueueCases(request, timeout=TIMEOUT)
            assert again.SerializeToString(deterministic=True) == first.SerializeToString(
                deterministic=True
            )
            assert len(await events(server.stub)) == 3
            other = pb.EnqueueCasesRequest(request_id=request.request_id, cases=batch(2))
            error = await failure(server.stub.EnqueueCases(other, timeout=TIMEOUT))
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert error.reason == "ERROR_REASON_REQUEST_ID_REUSED"
            assert len(await events(server.stub)) == 3


class TestRefusedWhole:
    async def test_a_batch_of_two_tenants_is_refused_naming_the_others(
        self, adjudication_db: str
    ) -> None:
        """A batch has one tenant (its saved response is deleted with that tenant's data):
        cases of another tenant than cases[0]'s are named, and nothing is stored."""
        async with adjudication_server(adjudication_db) as server:
            cases = [*batch(2), *batch(1, tenant="tenant-b"), *batch(1)]
            error = await failure(
                server.stub.EnqueueCases(
                    pb.EnqueueCasesRequest(request_id=rid(), cases=cases), timeout=TIMEOUT
                )
            )
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert error.reason == "ERROR_REASON_INVALID_FIELD"
            assert [v.field for v in error.violations] == ["cases[2].tenant"]
            assert await events(server.stub) == []

    async def test_a_bad_fifth_case_stores_none_and_every_violation_is_listed(
        self, adjudication_db: str
    ) -> None:
        """Cases 4 and 7 of 10 are bad: INVALID_ARGUMENT naming every bad field by position,
        and not one case or event is stored."""
        async with adjudication_server(adjudication_db) as server:
            cases = batch(10)
            cases[4].subject = ""
            cases[4].candidate_values[1].string_value = "key"  # duplicates [0]
            cases[7].lineage.origin = " "
            cases[7].expire_time.seconds = 10**12  # past what a datetime holds
            error = await failure(
                server.stub.EnqueueCases(
                    pb.EnqueueCasesRequest(request_id=rid(), cases=cases), timeout=TIMEOUT
                )
            )
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert error.reason == "ERROR_REASON_INVALID_FIELD"
            assert [v.field for v in error.violations] == [
                "cases[4].subject",
                "cases[4].candidate_values[1]",
                "cases[7].expire_time",
                "cases[7].lineage.origin",
            ]
            assert await events(server.stub) == []
            await register(server.stub, "ann")
            queue = await server.stub.ListQueue(
                pb.ListQueueRequest(reviewer_id="ann"), timeout=TIMEOUT
            )
            assert not queue.cases
            # The good cases alone are then stored.
            del cases[7]
            del cases[4]
            reply = await server.stub.EnqueueCases(
                pb.EnqueueCasesRequest(request_id=rid(), cases=cases), timeout=TIMEOUT
            )
            assert len(reply.cases) == 8

    @pytest.mark.parametrize(("size", "description"), [(0, "at least one"), (1001, "at most")])
    async def test_an_empty_or_oversized_batch_names_cases(
        self, adjudication_db: str, size: int, description: str
    ) -> None:
        """No cases, or more than 1,000: one violation naming `cases`."""
        async with adjudication_server(adjudication_db) as server:
            request = pb.EnqueueCasesRequest(request_id=rid(), cases=batch(size))
            error = await failure(server.stub.EnqueueCases(request, timeout=TIMEOUT))
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert [v.field for v in error.violations] == ["cases"]
            assert description in error.violations[0].description


class TestFailureInsideTheTransaction:
    async def test_a_case_failing_in_the_job_undoes_the_whole_batch(
        self, adjudication_db: str
    ) -> None:
        """Case 4's expiry passes between the check and the job (a clock that jumps a day per
        reading): the job raises after writing four cases and their events, and afterwards
        there is no row and no event, and the chain verifies."""
        start = datetime.now(UTC)
        readings = count()

        def clock() -> datetime:
            return start + timedelta(days=next(readings))

        store = await open_store(adjudication_db)
        try:
            adjudication = Adjudication(store, clock)
            items = convert.batch_items(batch(10))
            soon = start + timedelta(hours=12)
            items[4] = batches.BatchItem(replace(items[4].data, expire_time=soon))
            key = RequestKey(rid(), "EnqueueCases", "digest")
            with pytest.raises(InvalidArgument) as raised:
                await adjudication.enqueue_cases(key, items, lambda stored: b"")
            assert [v.field for v in raised.value.violations] == ["cases[4].expire_time"]
            assert next(readings) >= 2, "the job ran after the check"
            assert await store.audit_events(0, 100, EVERY_TENANT) == []
            verdict = await store.verify_chain()
            assert verdict.ok
            assert verdict.events_checked == 0
            # The writer is whole: the next batch is stored and chained.
            fine = convert.batch_items(batch(2))
            await adjudication.enqueue_cases(RequestKey(rid(), "EnqueueCases", "d2"), fine, _empty)
            stored = await store.audit_events(0, 100, EVERY_TENANT)
            assert [e.event_type for e in stored] == [AuditEventType.CASE_ENQUEUED] * 2
            assert (await store.verify_chain()).ok
        finally:
            await store.close()


def _empty(stored: object) -> bytes:
    return b""


class TestCap:
    def test_violations_are_capped_at_100_and_the_rest_counted(self) -> None:
        """1,000 cases with two bad fields each: the first 100 listed, 1,900 counted."""
        items = convert.batch_items(batch(1000))
        bad = [batches.BatchItem(replace(i.data, subject="", context="x" * 5000)) for i in items]
        with pytest.raises(InvalidArgument) as raised:
            batches.check_batch("", bad, datetime.now(UTC))
        assert len(raised.value.violations) == MAX_VIOLATIONS == 100
        assert raised.value.more_violations == 1900
        assert raised.value.violations[:2][1].field == "cases[0].context"
        assert "(and 1999 more)" in raised.value.message
