"""ListAdjudicationQueue through real servers on both engines: which cases an adjudicator is
shown, as whom, in what order and pages, and that every row deciding it is ledger-checked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc

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
from tests.service.test_adjudication_security import (
    DECISION,
    assert_refused,
    disagreed,
    parties,
    stored,
)
from tests.support.eventually import eventually_async


async def worklist(
    stub: Stub, adjudicator: str, tenant: str = "", page_size: int = 0, page_token: str = ""
) -> pb.ListAdjudicationQueueResponse:
    request = pb.ListAdjudicationQueueRequest(
        adjudicator_id=adjudicator, tenant=tenant, page_size=page_size, page_token=page_token
    )
    reply: pb.ListAdjudicationQueueResponse = await stub.ListAdjudicationQueue(
        request, timeout=TIMEOUT
    )
    return reply


async def split(stub: Stub, tenant: str = "tenant-a", by: tuple[str, str] = ("ann", "bob")) -> str:
    """A case whose two reviewers disagree."""
    case_id = (await enqueue(stub, tenant=tenant)).case_id
    await review(stub, case_id, by[0], "key")
    await review(stub, case_id, by[1], "none")
    return case_id


class TestWhatIsListed:
    async def test_only_disagreed_rounds_the_adjudicator_did_not_review(
        self, adjudication_db: str
    ) -> None:
        """Agreed, half-reviewed, unreviewed and resolved cases are left out, and so is a
        disagreement the adjudicator took part in; each item is the redacted GetCase view."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy", "dan"):
                await register(stub, name)
            wanted = await split(stub)
            agreed = (await enqueue(stub)).case_id
            await review(stub, agreed, "ann", "key")
            await review(stub, agreed, "bob", "key")
            half = (await enqueue(stub)).case_id
            await review(stub, half, "ann", "key")
            await enqueue(stub)
            decided = await split(stub)
            resolve = pb.ResolveCaseRequest(
                request_id=rid(), case_id=decided, basis=DECISION, adjudicator_reviewer_id="dan"
            )
            resolve.label.string_value = "key"
            await stub.ResolveCase(resolve, timeout=TIMEOUT)
            own = await split(stub, by=("ann", "cy"))

            listed = await worklist(stub, "cy")
            assert [i.case.case_id for i in listed.items] == [wanted]
            item = listed.items[0]
            assert item.round == 1
            assert [(r.reviewer_id, r.label.string_value) for r in item.reviews] == [
                ("ann", "key"),
                ("bob", "none"),
            ]
            assert not item.case.HasField("local_verdict"), "the verdict stays hidden"
            seen = await stub.GetCase(pb.GetCaseRequest(case_id=wanted), timeout=TIMEOUT)
            assert item.case.subject == seen.case.subject
            assert item.case.content_digest == seen.case.content_digest
            assert not listed.next_page_token
            assert {i.case.case_id for i in (await worklist(stub, "dan")).items} == {wanted, own}

    async def test_pages_follow_case_ids_and_the_tenant_filter_applies(
        self, adjudication_db: str
    ) -> None:
        """Five disagreements among agreed cases, two per page, in case-id order; a token of
        another query is refused; ``tenant`` keeps one tenant's cases."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            wanted = []
            for i in range(5):
                wanted.append(await split(stub, tenant="tenant-b" if i == 2 else "tenant-a"))
                agreed = (await enqueue(stub)).case_id
                await review(stub, agreed, "ann", "key")
                await review(stub, agreed, "bob", "key")
            pages, token = [], ""
            while True:
                page = await worklist(stub, "cy", page_size=2, page_token=token)
                pages.append([i.case.case_id for i in page.items])
                token = page.next_page_token
                if not token:
                    break
            assert [len(p) for p in pages] == [2, 2, 1]
            assert [c for p in pages for c in p] == sorted(wanted)
            first = await worklist(stub, "cy", page_size=2)
            error = await failure(
                stub.ListAdjudicationQueue(
                    pb.ListAdjudicationQueueRequest(
                        adjudicator_id="ann", page_size=2, page_token=first.next_page_token
                    ),
                    timeout=TIMEOUT,
                )
            )
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
            only_b = await worklist(stub, "cy", tenant="tenant-b")
            assert [i.case.case_id for i in only_b.items] == [wanted[2]]

    async def test_an_expired_disagreement_leaves_the_worklist(self, adjudication_db: str) -> None:
        """A case disagreed just before it expires is listed, then no longer (polled)."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            message = case_message()
            message.expire_time.FromDatetime(datetime.now(UTC) + timedelta(seconds=3))
            reply = await stub.EnqueueCase(
                pb.EnqueueCaseRequest(request_id=rid(), case=message), timeout=TIMEOUT
            )
            case_id = reply.case.case_id
            await review(stub, case_id, "ann", "key")
            await review(stub, case_id, "bob", "none")
            assert [i.case.case_id for i in (await worklist(stub, "cy")).items] == [case_id]
            state = pb.GetCaseStateRequest(case_id=case_id)

            async def expired() -> bool:
                return bool((await stub.GetCaseState(state, timeout=TIMEOUT)).expired)

            await eventually_async(expired, message="the case to read expired", timeout=15)
            assert not (await worklist(stub, "cy")).items

    async def test_bad_requests_name_their_field(self, adjudication_db: str) -> None:
        """No adjudicator, a negative page size, an unknown adjudicator."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for request, code, reason, field in [
                (pb.ListAdjudicationQueueRequest(), grpc.StatusCode.INVALID_ARGUMENT,
                 "INVALID_FIELD", "adjudicator_id"),
                (pb.ListAdjudicationQueueRequest(adjudicator_id="cy", page_size=-1),
                 grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "page_size"),
                (pb.ListAdjudicationQueueRequest(adjudicator_id="nobody"),
                 grpc.StatusCode.NOT_FOUND, "REVIEWER_NOT_FOUND", None),
            ]:  # fmt: skip
                error = await failure(stub.ListAdjudicationQueue(request, timeout=TIMEOUT))
                assert_refused(error, code, reason, field)


class TestLedgerChecked:
    async def test_a_forged_agreement_is_data_loss_not_a_shorter_list(
        self, adjudication_db: str
    ) -> None:
        """bob's label edited to agree with ann's would hide the case: DATA_LOSS instead."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case_id = await split(stub)
            tamper_sql.edit(
                adjudication_db,
                "UPDATE reviews SET label_key = ? WHERE case_id = ? AND reviewer_id = 'bob'",
                '"key"',
                case_id,
            )
            error = await failure(
                stub.ListAdjudicationQueue(
                    pb.ListAdjudicationQueueRequest(adjudicator_id="cy"), timeout=TIMEOUT
                )
            )
            assert error.code == grpc.StatusCode.DATA_LOSS, error

    async def test_a_forged_review_by_the_adjudicator_is_data_loss(
        self, adjudication_db: str
    ) -> None:
        """A review row planted in cy's name would hide the case from cy: DATA_LOSS."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cy"):
                await register(stub, name)
            case_id = await split(stub)
            with tamper_sql.tampering(adjudication_db) as raw:
                tamper_sql.copy_row(
                    raw,
                    "reviews",
                    "case_id = ? AND reviewer_id = 'bob'",
                    case_id,
                    review_id="rev_forged",
                    reviewer_id="cy",
                )
            error = await failure(
                stub.ListAdjudicationQueue(
                    pb.ListAdjudicationQueueRequest(adjudicator_id="cy"), timeout=TIMEOUT
                )
            )
            assert error.code == grpc.StatusCode.DATA_LOSS, error


class TestWhoMayList:
    async def test_an_adjudicator_lists_only_their_own_an_operator_within_its_tenants(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """carol sees her worklist and not alice's; the operator sees carol's; gloria (globex
        operator) sees none of acme's and may not name acme; alice (a reviewer) may not call."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await disagreed(p)
            request = pb.ListAdjudicationQueueRequest(adjudicator_id="carol")
            mine = await p.as_("carol").ListAdjudicationQueue(request)
            assert [i.case.case_id for i in mine.items] == [case_id]
            assert not mine.items[0].case.HasField("local_verdict")
            theirs = await p.as_("operator").ListAdjudicationQueue(request)
            assert [i.case.case_id for i in theirs.items] == [case_id]
            assert not (await p.as_("gloria").ListAdjudicationQueue(request)).items
            refusals = [
                ("carol", pb.ListAdjudicationQueueRequest(adjudicator_id="alice"),
                 grpc.StatusCode.PERMISSION_DENIED, "IDENTITY_MISMATCH", "adjudicator_id"),
                ("gloria", pb.ListAdjudicationQueueRequest(adjudicator_id="carol", tenant="acme"),
                 grpc.StatusCode.PERMISSION_DENIED, "TENANT_NOT_PERMITTED", "tenant"),
            ]  # fmt: skip
            for who, refused, code, reason, field in refusals:
                error = await failure(p.as_(who).ListAdjudicationQueue(refused))
                assert_refused(error, code, reason, field)
            error = await failure(p.as_("alice").ListAdjudicationQueue(request))
            assert error.code == grpc.StatusCode.PERMISSION_DENIED

    async def test_a_batch_naming_tenants_not_granted_is_refused_whole(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """gloria (globex only) sends acme cases: every one is named, and nothing is stored.
        (A batch mixing tenants is INVALID_ARGUMENT before permissions are looked at.)"""
        async with parties(tmp_path, adjudication_db) as p:
            tenants = ["acme", "acme"]
            request = pb.EnqueueCasesRequest(
                request_id=rid(), cases=[case_message(tenant=t) for t in tenants]
            )
            error = await failure(p.as_("gloria").EnqueueCases(request))
            assert error.code == grpc.StatusCode.PERMISSION_DENIED
            assert error.reason == "ERROR_REASON_TENANT_NOT_PERMITTED"
            assert [v.field for v in error.violations] == ["cases[0].tenant", "cases[1].tenant"]
            with tamper_sql.tampering(stored(tmp_path, adjudication_db)) as raw:
                assert raw.all("SELECT case_id FROM cases") == []
            granted = pb.EnqueueCasesRequest(
                request_id=rid(), cases=[case_message(tenant="globex")] * 2
            )
            assert len((await p.as_("gloria").EnqueueCases(granted)).cases) == 2
