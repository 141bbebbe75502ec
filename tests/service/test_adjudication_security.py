"""Adjudication behind the trust boundary: identity binding, tenant walls, sealed blinding, the
actor in the ledger, salted review commitments, per-caller request ids, owner-only files.

Every call goes through a secure stack (real TLS, real ES256 tokens, the real services).
Besides the example principals (operator: every tenant; alice, bob: reviewers of acme; carol:
adjudicator of acme; mallory: reviewer of globex) the tests mint ``gloria`` (operator and
auditor of globex only) and ``root`` (operator, auditor, reviewer and adjudicator of every
tenant: an operator who could review, to show operators do not act in others' names either).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2

from assay.runtime.auth.dev_credentials import DEV_ISSUER, EXAMPLE_PRINCIPALS, Grantee
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.services.adjudication.domain import cases, ledger, reviews
from assay.services.adjudication.domain.digests import digest
from assay.services.adjudication.domain.model import AuditEventType, ChainHead
from assay.services.adjudication.storage import Store, rows
from assay.services.adjudication.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.service import tamper_sql
from tests.service.adjudication_support import (
    FIXTURE,
    HUMAN,
    adjudication_server,
    case_message,
    failure,
    is_postgres,
    rid,
)
from tests.support.eventually import eventually_async
from tests.support.secure import SecureStack, secure_stack

UNANIMOUS = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
DECISION = gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
TIMEOUT = 20.0
PRINCIPALS = (
    *EXAMPLE_PRINCIPALS,
    Grantee("gloria", ("operator", "auditor", "reader"), ("globex",)),
    Grantee("root", ("operator", "auditor", "reviewer", "adjudicator"), ("*",)),
)


class As:
    """The adjudication stub, every call carrying one principal's token."""

    def __init__(self, stub: pb_grpc.AdjudicationServiceStub, metadata: Any) -> None:
        self._stub = stub
        self._metadata = metadata

    def __getattr__(self, method: str) -> Callable[[Any], Any]:
        call = getattr(self._stub, method)

        def invoke(request: Any) -> Any:
            return call(request, metadata=self._metadata, timeout=TIMEOUT)

        return invoke


@dataclass
class Parties:
    stack: SecureStack
    stub: pb_grpc.AdjudicationServiceStub

    def as_(self, name: str) -> As:
        return As(self.stub, self.stack.auth(name))

    async def register(self, reviewer_id: str, kind: Any = HUMAN, attested_by: str = "") -> Any:
        reviewer = pb.Reviewer(reviewer_id=reviewer_id, kind=kind, attested_by=attested_by)
        reply = await self.as_("operator").RegisterReviewer(
            pb.RegisterReviewerRequest(request_id=rid(), reviewer=reviewer)
        )
        return reply.reviewer

    async def enqueue(self, tenant: str = "acme", by: str = "operator", **extra: Any) -> str:
        message = case_message(tenant=tenant)
        for name, value in extra.items():
            getattr(message, name).CopyFrom(value)
        reply = await self.as_(by).EnqueueCase(
            pb.EnqueueCaseRequest(request_id=rid(), case=message)
        )
        case_id: str = reply.case.case_id
        return case_id

    async def review(
        self, who: str, case_id: str, label: str = "key", round_: int = 0, request_id: str = ""
    ) -> Any:
        request = pb.SubmitReviewRequest(
            request_id=request_id or rid(),
            case_id=case_id,
            reviewer_id=who,
            outcome=pb.REVIEW_OUTCOME_LABEL,
            round=round_,
        )
        request.label.string_value = label
        return await self.as_(who).SubmitReview(request)

    async def events(self, who: str = "operator") -> list[Any]:
        reply = await self.as_(who).ListAuditEvents(pb.ListAuditEventsRequest(page_size=1000))
        return list(reply.events)


@contextlib.asynccontextmanager
async def parties(
    tmp_path: Path, db: str, allow_fixture_reviewers: bool = True
) -> AsyncIterator[Parties]:
    """The secure stack over ``db`` (the ``adjudication_db`` fixture: each engine)."""
    postgres = db if is_postgres(db) else None
    async with (
        secure_stack(tmp_path, allow_fixture_reviewers, PRINCIPALS, db=postgres) as stack,
        stack.channel("adjudication") as channel,
    ):
        yield Parties(stack, pb_grpc.AdjudicationServiceStub(channel))


def stored(tmp_path: Path, db: str) -> str:
    """Where ``parties(tmp_path, db)`` keeps its data: the PostgreSQL database, or the
    SQLite file the secure stack opens in ``tmp_path``."""
    return db if is_postgres(db) else str(tmp_path / "assay.db")


def assert_refused(
    error: DecodedError, code: grpc.StatusCode, reason: str, field: str | None = None
) -> None:
    assert (error.code, error.reason) == (code, f"ERROR_REASON_{reason}"), error
    if field is not None:
        assert [v.field for v in error.violations] == [field], error


async def acme_team(p: Parties) -> str:
    """alice, bob and carol registered HUMAN; one acme case."""
    for name in ("alice", "bob", "carol"):
        await p.register(name)
    return await p.enqueue()


async def frozen(p: Parties) -> str:
    """An acme case alice and bob both labelled "key", resolved unanimously and frozen by the
    operator."""
    case_id = await acme_team(p)
    await p.review("alice", case_id, "key")
    await p.review("bob", case_id, "key")
    operator = p.as_("operator")
    await operator.ResolveCase(
        pb.ResolveCaseRequest(request_id=rid(), case_id=case_id, basis=UNANIMOUS)
    )
    await operator.FreezeGoldLabel(pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id))
    return case_id


async def disagreed(p: Parties) -> str:
    case_id = await acme_team(p)
    await p.review("alice", case_id, "key")
    await p.review("bob", case_id, "none")
    return case_id


def decide(case_id: str, adjudicator: str, label: str = "key") -> pb.ResolveCaseRequest:
    request = pb.ResolveCaseRequest(
        request_id=rid(), case_id=case_id, basis=DECISION, adjudicator_reviewer_id=adjudicator
    )
    request.label.string_value = label
    return request


class TestIdentityBinding:
    async def test_human_registration_binds_the_identity_and_fills_attested_by(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A HUMAN reviewer is bound to its id under the reviewer issuer, attested by the
        registering operator, and the binding is on the ledger with the operator as actor."""
        async with parties(tmp_path, adjudication_db) as p:
            reviewer = await p.register("alice")
            assert (reviewer.identity_issuer, reviewer.identity_subject) == (DEV_ISSUER, "alice")
            assert reviewer.attested_by == "operator"
            stored = await p.as_("operator").GetReviewer(pb.GetReviewerRequest(reviewer_id="alice"))
            assert stored.reviewer == reviewer
            (event,) = await p.events()
            assert event.payload["identity_subject"] == "alice"
            assert event.payload["identity_issuer"] == DEV_ISSUER
            assert (event.actor.issuer, event.actor.subject) == (DEV_ISSUER, "operator")

    async def test_attested_by_must_be_the_caller(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """attested_by naming someone else is PERMISSION_DENIED (IDENTITY_MISMATCH); naming the
        caller itself is accepted."""
        async with parties(tmp_path, adjudication_db) as p:
            error = await failure(p.register("alice", attested_by="mallory"))
            assert_refused(
                error,
                grpc.StatusCode.PERMISSION_DENIED,
                "IDENTITY_MISMATCH",
                "reviewer.attested_by",
            )
            assert (await p.register("alice", attested_by="operator")).attested_by == "operator"

    async def test_fixture_reviewers_refused_unless_allowed(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Without allow_fixture_reviewers a fixture registration is FAILED_PRECONDITION
        (FIXTURE_REVIEWERS_DISABLED); HUMAN registration still works."""
        async with parties(tmp_path, adjudication_db, allow_fixture_reviewers=False) as p:
            error = await failure(p.register("alice", FIXTURE))
            assert_refused(error, grpc.StatusCode.FAILED_PRECONDITION, "FIXTURE_REVIEWERS_DISABLED")
            assert (await p.register("alice")).kind == HUMAN

    async def test_fixture_reviewers_are_bound_like_humans(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Where fixtures are allowed they are bound to their id too: only that subject's
        token acts as them."""
        async with parties(tmp_path, adjudication_db) as p:
            fixture = await p.register("alice", FIXTURE)
            assert (fixture.identity_issuer, fixture.identity_subject) == (DEV_ISSUER, "alice")
            case_id = await p.enqueue()
            assert (await p.review("alice", case_id)).review.reviewer_id == "alice"

    async def test_nobody_reviews_in_another_name(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """alice reviewing as bob, and an operator holding the reviewer role reviewing as alice,
        are PERMISSION_DENIED (IDENTITY_MISMATCH on reviewer_id), and nothing is stored."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            for caller, victim in (("alice", "bob"), ("root", "alice")):
                request = pb.SubmitReviewRequest(
                    request_id=rid(),
                    case_id=case_id,
                    reviewer_id=victim,
                    outcome=pb.REVIEW_OUTCOME_LABEL,
                )
                request.label.string_value = "key"
                error = await failure(p.as_(caller).SubmitReview(request))
                assert_refused(
                    error, grpc.StatusCode.PERMISSION_DENIED, "IDENTITY_MISMATCH", "reviewer_id"
                )
            state = await p.as_("operator").GetCaseState(pb.GetCaseStateRequest(case_id=case_id))
            assert state.review_count == 0

    async def test_nobody_adjudicates_in_another_name(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """carol deciding as bob, and an operator-adjudicator deciding as carol, are refused
        (IDENTITY_MISMATCH on adjudicator_reviewer_id); alice, no adjudicator, is stopped by
        her role; carol deciding as herself succeeds."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await disagreed(p)
            await p.register("root")
            for caller, victim in (("carol", "bob"), ("root", "carol")):
                error = await failure(p.as_(caller).ResolveCase(decide(case_id, victim)))
                assert_refused(
                    error,
                    grpc.StatusCode.PERMISSION_DENIED,
                    "IDENTITY_MISMATCH",
                    "adjudicator_reviewer_id",
                )
            error = await failure(p.as_("alice").ResolveCase(decide(case_id, "bob")))
            assert_refused(error, grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
            reply = await p.as_("carol").ResolveCase(decide(case_id, "carol"))
            assert reply.resolution.adjudicator_reviewer_id == "carol"

    async def test_identity_is_checked_before_the_case_is_looked_up(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Reviewing as someone else is refused the same way whether the case exists or not, so
        the refusal says nothing about other tenants' cases."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            for target in (case_id, "case_does_not_exist"):
                request = pb.SubmitReviewRequest(
                    case_id=target, reviewer_id="alice", outcome=pb.REVIEW_OUTCOME_LABEL
                )
                request.label.string_value = "key"
                error = await failure(p.as_("mallory").SubmitReview(request))
                assert_refused(
                    error, grpc.StatusCode.PERMISSION_DENIED, "IDENTITY_MISMATCH", "reviewer_id"
                )


class TestTenantWalls:
    async def test_another_tenants_case_reads_as_not_found(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """globex principals get exactly what a missing case gets from every case RPC."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            await p.register("mallory")
            for target in (case_id, "case_0000000000000000"):
                reads = [
                    p.as_("gloria").GetCase(pb.GetCaseRequest(case_id=target)),
                    p.as_("gloria").GetBlindedCase(pb.GetBlindedCaseRequest(case_id=target)),
                    p.as_("mallory").GetBlindedCase(pb.GetBlindedCaseRequest(case_id=target)),
                    p.as_("mallory").GetCaseState(pb.GetCaseStateRequest(case_id=target)),
                    p.as_("gloria").FreezeGoldLabel(
                        pb.FreezeGoldLabelRequest(request_id=rid(), case_id=target)
                    ),
                    p.as_("gloria").ResolveCase(
                        pb.ResolveCaseRequest(request_id=rid(), case_id=target, basis=UNANIMOUS)
                    ),
                ]
                request = pb.SubmitReviewRequest(
                    case_id=target, reviewer_id="mallory", outcome=pb.REVIEW_OUTCOME_LABEL
                )
                request.label.string_value = "key"
                reads.append(p.as_("mallory").SubmitReview(request))
                for call in reads:
                    error = await failure(call)
                    assert_refused(error, grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND")
                    assert error.metadata["case_id"] == target
            state = await p.as_("operator").GetCaseState(pb.GetCaseStateRequest(case_id=case_id))
            assert state.review_count == 0

    async def test_writes_into_another_tenant_are_refused(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Enqueueing into or deleting acme as globex is TENANT_NOT_PERMITTED, and acme's case
        survives."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await p.enqueue()
            error = await failure(p.enqueue("acme", by="gloria"))
            assert_refused(
                error, grpc.StatusCode.PERMISSION_DENIED, "TENANT_NOT_PERMITTED", "case.tenant"
            )
            error = await failure(
                p.as_("gloria").DeleteTenantRecords(
                    pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="acme")
                )
            )
            assert_refused(
                error, grpc.StatusCode.PERMISSION_DENIED, "TENANT_NOT_PERMITTED", "tenant"
            )
            await p.as_("operator").GetCase(pb.GetCaseRequest(case_id=case_id))
            assert await p.enqueue("globex", by="gloria")

    async def test_listings_name_only_granted_tenants(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A tenant filter naming acme is TENANT_NOT_PERMITTED for globex (queue, export,
        agreement); without one, globex sees only globex: its queue, its gold labels, its
        audit events, its agreement and its export manifest."""
        async with parties(tmp_path, adjudication_db) as p:
            acme_case = await frozen(p)
            operator = p.as_("operator")
            await p.register("mallory")
            globex_case = await p.enqueue("globex", by="gloria")
            gloria = p.as_("gloria")

            for call in (
                gloria.ListQueue(pb.ListQueueRequest(reviewer_id="mallory", tenant="acme")),
                gloria.ComputeAgreement(pb.ComputeAgreementRequest(tenant="acme")),
                drain(gloria.ExportCorpus(pb.ExportCorpusRequest(tenant="acme"))),
            ):
                error = await failure(call)
                assert_refused(
                    error, grpc.StatusCode.PERMISSION_DENIED, "TENANT_NOT_PERMITTED", "tenant"
                )

            pending = await p.enqueue()
            everyone = await operator.ListQueue(pb.ListQueueRequest(reviewer_id="carol"))
            assert sorted(c.case_id for c in everyone.cases) == sorted([pending, globex_case])
            for reviewer_id in ("carol", "mallory"):
                queue = await gloria.ListQueue(pb.ListQueueRequest(reviewer_id=reviewer_id))
                assert [c.case_id for c in queue.cases] == [globex_case]

            labels = await gloria.ListGoldLabelRevisions(pb.ListGoldLabelRevisionsRequest())
            assert list(labels.revisions) == []
            labels = await gloria.ListGoldLabelRevisions(
                pb.ListGoldLabelRevisionsRequest(case_id=acme_case)
            )
            assert list(labels.revisions) == []
            everything = await operator.ListGoldLabelRevisions(pb.ListGoldLabelRevisionsRequest())
            assert [r.case_id for r in everything.revisions] == [acme_case]

            seen = await p.events("gloria")
            assert [(e.event_type, e.payload["case_id"]) for e in seen] == [
                (pb.AUDIT_EVENT_TYPE_CASE_ENQUEUED, globex_case)
            ]
            assert len(await p.events()) > len(seen)

            kappa = await gloria.ComputeAgreement(pb.ComputeAgreementRequest())
            assert kappa.case_count == 0
            assert (await operator.ComputeAgreement(pb.ComputeAgreementRequest())).case_count == 1

            records, manifest = await drain(gloria.ExportCorpus(pb.ExportCorpusRequest()))
            assert (records, manifest.record_count, list(manifest.exclusions)) == ([], 0, [])
            records, manifest = await drain(operator.ExportCorpus(pb.ExportCorpusRequest()))
            assert [r.case.case_id for r in records] == [acme_case]
            assert manifest.record_count == 1

    async def test_exclusions_are_counted_only_for_granted_tenants(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A deleted acme case's orphaned label shows up as an exclusion to acme's auditors
        only, never in globex's manifest."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await frozen(p)
            operator = p.as_("operator")
            await operator.DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="acme")
            )
            _, manifest = await drain(p.as_("gloria").ExportCorpus(pb.ExportCorpusRequest()))
            assert list(manifest.exclusions) == []
            _, manifest = await drain(operator.ExportCorpus(pb.ExportCorpusRequest()))
            assert [e.case_id for e in manifest.exclusions] == [case_id]

    async def test_sweep_deletes_only_granted_tenants(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A globex operator's sweep removes globex's expired case and leaves acme's, whose own
        sweep (by an operator of every tenant) removes it."""
        async with parties(tmp_path, adjudication_db) as p:
            soon = datetime.now(UTC) + timedelta(seconds=1)
            expire = _timestamp(soon)
            acme_case = await p.enqueue("acme", expire_time=expire)
            globex_case = await p.enqueue("globex", by="gloria", expire_time=expire)
            operator = p.as_("operator")
            await eventually_async(
                lambda: _expired(operator, acme_case), message="acme_case to read expired"
            )
            await eventually_async(
                lambda: _expired(operator, globex_case), message="globex_case to read expired"
            )
            swept = await p.as_("gloria").SweepExpiredRecords(
                pb.SweepExpiredRecordsRequest(request_id=rid())
            )
            assert swept.deleted.cases == 1
            await operator.GetCaseState(pb.GetCaseStateRequest(case_id=acme_case))
            error = await failure(
                operator.GetCaseState(pb.GetCaseStateRequest(case_id=globex_case))
            )
            assert_refused(error, grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND")
            (event,) = [e for e in await p.events("gloria") if e.sequence == swept.audit_sequence]
            assert event.payload["tenants"] == "globex"
            swept = await operator.SweepExpiredRecords(
                pb.SweepExpiredRecordsRequest(request_id=rid())
            )
            assert swept.deleted.cases == 1
            sweep_events = [e.sequence for e in await p.events("gloria")]
            assert swept.audit_sequence not in sweep_events, (
                "a sweep of every tenant is not globex's"
            )

    async def test_page_tokens_are_bound_to_the_callers_tenants(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Paging the audit ledger as globex walks globex's events only, and a token issued to
        an all-tenant operator is refused to globex (INVALID_PAGE_TOKEN)."""
        async with parties(tmp_path, adjudication_db) as p:
            mine = [await p.enqueue("globex", by="gloria") for _ in range(3)]
            await p.enqueue("acme")
            seen: list[str] = []
            token = ""
            while True:
                page = await p.as_("gloria").ListAuditEvents(
                    pb.ListAuditEventsRequest(page_size=1, page_token=token)
                )
                seen.extend(e.payload["case_id"] for e in page.events)
                token = page.next_page_token
                if not token:
                    break
            assert seen == mine
            first = await p.as_("operator").ListAuditEvents(pb.ListAuditEventsRequest(page_size=1))
            error = await failure(
                p.as_("gloria").ListAuditEvents(
                    pb.ListAuditEventsRequest(page_size=1, page_token=first.next_page_token)
                )
            )
            assert_refused(
                error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN", "page_token"
            )


class TestSealedBlinding:
    async def test_a_reviewer_sees_a_blinded_case_only_while_it_waits_for_them(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """alice and bob see the case blinded until each has reviewed it; what they may see is
        exactly their queue."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)

            async def sees(who: str) -> bool:
                queue = await p.as_(who).ListQueue(pb.ListQueueRequest(reviewer_id=who))
                queued = case_id in [c.case_id for c in queue.cases]
                try:
                    await p.as_(who).GetBlindedCase(pb.GetBlindedCaseRequest(case_id=case_id))
                except grpc.aio.AioRpcError as error:
                    assert_refused(
                        decode_rpc_error(error), grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND"
                    )
                    assert not queued
                    return False
                assert queued
                return True

            assert (await sees("alice"), await sees("bob")) == (True, True)
            await p.review("alice", case_id)
            assert (await sees("alice"), await sees("bob")) == (False, True)
            await p.review("bob", case_id)
            assert (await sees("alice"), await sees("bob")) == (False, False)
            blinded = await p.as_("carol").GetBlindedCase(pb.GetBlindedCaseRequest(case_id=case_id))
            assert blinded.case.case_id == case_id, "an adjudicator sees any case of its tenant"

    async def test_a_reviewer_lists_only_their_own_queue(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """alice listing bob's queue is IDENTITY_MISMATCH; an operator lists anyone's."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            error = await failure(p.as_("alice").ListQueue(pb.ListQueueRequest(reviewer_id="bob")))
            assert_refused(
                error, grpc.StatusCode.PERMISSION_DENIED, "IDENTITY_MISMATCH", "reviewer_id"
            )
            queue = await p.as_("operator").ListQueue(pb.ListQueueRequest(reviewer_id="bob"))
            assert [c.case_id for c in queue.cases] == [case_id]

    async def test_the_adjudicator_sees_a_redacted_case_only_while_it_waits(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """carol sees nothing before the round disagrees; then the case without the verdict,
        with only the current round's reviews and no resolutions; nothing once she decided.
        The operator sees everything throughout."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await frozen(p)
            carol, operator = p.as_("carol"), p.as_("operator")
            await p.review("alice", case_id, "key", round_=2)
            error = await failure(carol.GetCase(pb.GetCaseRequest(case_id=case_id)))
            assert_refused(error, grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND")
            await p.review("bob", case_id, "none")

            view = await carol.GetCase(pb.GetCaseRequest(case_id=case_id))
            assert not view.case.HasField("local_verdict")
            assert view.state == pb.CASE_STATE_DISAGREED
            assert [(r.reviewer_id, r.round) for r in view.reviews] == [("alice", 2), ("bob", 2)]
            assert list(view.resolutions) == []
            full = await operator.GetCase(pb.GetCaseRequest(case_id=case_id))
            assert full.case.local_verdict.string_value == "key"
            assert (len(full.reviews), len(full.resolutions)) == (4, 1)

            await carol.ResolveCase(decide(case_id, "carol", "none"))
            error = await failure(carol.GetCase(pb.GetCaseRequest(case_id=case_id)))
            assert_refused(error, grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND")

    async def test_an_adjudicator_who_reviewed_the_round_does_not_see_it(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """A disagreement carol is part of does not wait for her decision."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            await p.review("alice", case_id, "key")
            await p.review("carol", case_id, "none")
            error = await failure(p.as_("carol").GetCase(pb.GetCaseRequest(case_id=case_id)))
            assert_refused(error, grpc.StatusCode.NOT_FOUND, "CASE_NOT_FOUND")

    async def test_reviewers_look_up_only_themselves(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """alice gets her own reviewer record, bob's reads as REVIEWER_NOT_FOUND; the operator
        gets both."""
        async with parties(tmp_path, adjudication_db) as p:
            await acme_team(p)
            mine = await p.as_("alice").GetReviewer(pb.GetReviewerRequest(reviewer_id="alice"))
            assert mine.reviewer.reviewer_id == "alice"
            error = await failure(
                p.as_("alice").GetReviewer(pb.GetReviewerRequest(reviewer_id="bob"))
            )
            assert_refused(error, grpc.StatusCode.NOT_FOUND, "REVIEWER_NOT_FOUND")
            other = await p.as_("operator").GetReviewer(pb.GetReviewerRequest(reviewer_id="bob"))
            assert other.reviewer.reviewer_id == "bob"


class TestLedger:
    async def test_every_event_names_its_authenticated_actor(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Registration, enqueue, reviews, the decision, freezing and deletion each record the
        token's subject (and issuer) as the actor, and the chain verifies."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await disagreed(p)
            await p.as_("carol").ResolveCase(decide(case_id, "carol"))
            await p.as_("operator").FreezeGoldLabel(
                pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id)
            )
            await p.as_("gloria").DeleteTenantRecords(
                pb.DeleteTenantRecordsRequest(request_id=rid(), tenant="globex")
            )
            events = await p.events()
            assert [(e.event_type, e.actor.subject) for e in events] == [
                (pb.AUDIT_EVENT_TYPE_REVIEWER_REGISTERED, "operator"),
                (pb.AUDIT_EVENT_TYPE_REVIEWER_REGISTERED, "operator"),
                (pb.AUDIT_EVENT_TYPE_REVIEWER_REGISTERED, "operator"),
                (pb.AUDIT_EVENT_TYPE_CASE_ENQUEUED, "operator"),
                (pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED, "alice"),
                (pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED, "bob"),
                (pb.AUDIT_EVENT_TYPE_CASE_RESOLVED, "carol"),
                (pb.AUDIT_EVENT_TYPE_GOLD_LABEL_FROZEN, "operator"),
                (pb.AUDIT_EVENT_TYPE_TENANT_RECORDS_DELETED, "gloria"),
            ]
            assert {e.actor.issuer for e in events} == {DEV_ISSUER}
            verdict = await p.as_("operator").VerifyAuditChain(pb.VerifyAuditChainRequest())
            assert verdict.ok

    @pytest.mark.parametrize(
        "edit",
        [
            "UPDATE audit_events SET actor_subject = 'bob' WHERE sequence = 5",
            "UPDATE audit_events SET actor_issuer = NULL, actor_subject = NULL WHERE sequence = 5",
            "UPDATE audit_events SET actor_subject = 'alice' WHERE sequence = 4",
        ],
        ids=["forged", "erased", "moved"],
    )
    async def test_an_edited_actor_breaks_the_chain(
        self, tmp_path: Path, adjudication_db: str, edit: str
    ) -> None:
        """Changing, erasing or re-attributing an event's actor in the database is caught by
        VerifyAuditChain at that event (HASH_MISMATCH)."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            await p.review("alice", case_id)
        db = stored(tmp_path, adjudication_db)
        tamper_sql.edit(db, edit)
        sequence = int(edit.rsplit("=", 1)[1])
        async with adjudication_server(db) as server:
            verdict = await server.stub.VerifyAuditChain(pb.VerifyAuditChainRequest())
        assert (verdict.ok, verdict.first_bad_sequence, verdict.problem) == (
            False,
            sequence,
            pb.AUDIT_PROBLEM_HASH_MISMATCH,
        )


class TestCommitments:
    async def test_equal_answers_give_unequal_commitments(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """alice and bob both label "key" with no reason: their REVIEW_SUBMITTED commitments
        differ, neither is the label's plain digest, and each is recomputed from its stored
        review row."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            ids = [
                (await p.review(who, case_id, "key")).review.review_id for who in ("alice", "bob")
            ]
            answers = {
                e.payload["review_id"]: e.payload["answer"]
                for e in await p.events()
                if e.event_type == pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED
            }
        assert set(answers) == set(ids)
        assert len(set(answers.values())) == 2
        assert digest(["LABEL", '"key"', ""]) not in answers.values()
        with tamper_sql.tampering(stored(tmp_path, adjudication_db)) as raw:
            found = raw.all(f"SELECT {rows.REVIEW_COLUMNS} FROM reviews")
        assert len(found) == 2
        for row in found:
            review = rows.review(row)
            assert len(bytes.fromhex(review.salt)) == reviews.SALT_BYTES
            assert reviews.answer_commitment(review) == answers[review.review_id]


class TestRequestIds:
    async def test_request_ids_belong_to_their_caller(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """bob reusing alice's request id gets his own review (not alice's answer, not a
        REQUEST_ID_REUSED refusal), and alice's retry still returns hers."""
        async with parties(tmp_path, adjudication_db) as p:
            case_id = await acme_team(p)
            first = await p.review("alice", case_id, "key", request_id="shared-id")
            other = await p.review("bob", case_id, "none", request_id="shared-id")
            assert other.review.reviewer_id == "bob"
            assert other.review.review_id != first.review.review_id
            again = await p.review("alice", case_id, "key", request_id="shared-id")
            assert again == first
            state = await p.as_("operator").GetCaseState(pb.GetCaseStateRequest(case_id=case_id))
            assert state.review_count == 2


# SQLite only: PostgreSQL's files belong to its server, not to Assay.
class TestDatabaseFiles:
    async def test_database_and_wal_files_are_owner_only(self, tmp_path: Path) -> None:
        """Under a permissive umask, the database, -wal and -shm files are 0600."""
        previous = os.umask(0o002)
        try:
            async with parties(tmp_path, str(tmp_path / "assay.db")) as p:
                await p.enqueue()
                modes = {
                    suffix: _mode(tmp_path / f"assay.db{suffix}") for suffix in ("", "-wal", "-shm")
                }
        finally:
            os.umask(previous)
        assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600}

    async def test_an_existing_readable_database_is_tightened(self, tmp_path: Path) -> None:
        """A database file others could read is made owner-only when opened (side files too),
        and its data stays."""
        path = tmp_path / "old.db"
        store = await Store.open(path)
        await store.close()
        leftover = tmp_path / "old.db-wal"
        leftover.touch()
        for file in (path, leftover):
            os.chmod(file, 0o664)
        store = await Store.open(path)
        try:
            assert (_mode(path), _mode(leftover)) == (0o600, 0o600)
        finally:
            await store.close()


# SQLite only: there were never V1 PostgreSQL databases (its V2 has no back-fill to test).
class TestMigrationToV2:
    async def test_a_v1_file_migrates_and_keeps_verifying(self, tmp_path: Path) -> None:
        """A V1 ledger (no actors, no tenant column) opens at the current version: its chain
        still verifies, each event gets its tenant (from its payload, or from its case's
        CASE_ENQUEUED event when the case is gone), an unsalted review keeps its old
        commitment, and a V1 retry record still answers a dev-mode retry."""
        path = tmp_path / "v1.db"
        db = sqlite3.connect(path, isolation_level=None)
        db.executescript(f"BEGIN;\n{MIGRATIONS[0]}\nPRAGMA user_version = 1;\nCOMMIT;")
        at = datetime(2026, 1, 1, tzinfo=UTC)
        head = ChainHead(0, ledger.EMPTY_HEAD.hash)
        c2_row = ("c2", "acme", "s", "p", '["key"]', "[]", "", '"key"', "o", "", 0, 10**16 - 1)
        c2_case = rows.named(rows.CASE_COLUMNS, (*c2_row, "", cases.DIGEST_V1, 2, "[]", 0.0))
        c2_digest = cases.case_digest(rows.case(c2_case, check=False))
        r2_answer = digest(["LABEL", '"key"', ""])
        v1_events = [
            (AuditEventType.REVIEWER_REGISTERED, {"reviewer_id": "ann", "kind": "HUMAN"}),
            (AuditEventType.CASE_ENQUEUED, {"case_id": "c1", "tenant": "acme", "content": "x"}),
            (AuditEventType.REVIEW_SUBMITTED, {"case_id": "c1", "review_id": "r1"}),
            (AuditEventType.TENANT_RECORDS_DELETED, {"tenant": "acme", "cases": "1"}),
            # The surviving case and review, recorded as V1 recorded them.
            (
                AuditEventType.CASE_ENQUEUED,
                {"case_id": "c2", "tenant": "acme", "content": c2_digest},
            ),
            (
                AuditEventType.REVIEW_SUBMITTED,
                {
                    "review_id": "r2",
                    "case_id": "c2",
                    "reviewer_id": "ann",
                    "round": "1",
                    "answer": r2_answer,
                },
            ),
        ]
        for event_type, payload in v1_events:
            event, payload_json = ledger.extend(head, event_type, payload, at)
            db.execute(
                "INSERT INTO audit_events VALUES (?, ?, ?, ?, ?, ?)",
                rows.audit_params(event, payload_json, "")[:6],
            )
            head = ChainHead(event.sequence, event.hash)
        db.execute("INSERT INTO reviewers VALUES ('ann', 'HUMAN', 'lead', 0)")
        db.execute(
            "INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*c2_row, c2_digest)
        )
        db.execute("INSERT INTO reviews VALUES ('r2', 'c2', 'ann', 1, 'LABEL', '\"key\"', '', 0)")
        db.execute("INSERT INTO idempotency VALUES ('old-id', 'M', 'dg', x'01', 'acme', 'c2', 0)")
        db.close()

        store = await Store.open(path)
        try:
            assert (await store.verify_chain()).ok
            old = await store.write(lambda tx: tx.recall(("", ""), "old-id"), small=True)
            assert old is not None
            assert old.response == b"\x01"
            snap = await store.snapshot("c2")
            assert snap is not None
            (review,) = snap.round_reviews
            assert review.salt == ""
            assert reviews.answer_commitment(review) == digest(["LABEL", '"key"', ""])
            reviewer = await store.reviewer("ann")
            assert reviewer is not None
            assert reviewer.identity_subject == ""
        finally:
            await store.close()
        db = sqlite3.connect(path)
        try:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            tenants = db.execute("SELECT tenant FROM audit_events ORDER BY sequence").fetchall()
        finally:
            db.close()
        assert [t for (t,) in tenants] == ["", "acme", "acme", "acme", "acme", "acme"]


# --- helpers -----------------------------------------------------------------------------


async def drain(stream: Any) -> tuple[list[Any], Any]:
    """An export's records and its manifest."""
    records: list[Any] = []
    manifest = None
    async for message in stream:
        if message.HasField("batch"):
            records.extend(message.batch.records)
        else:
            manifest = message.manifest
    return records, manifest


def _timestamp(moment: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp


async def _expired(caller: As, case_id: str) -> bool:
    """Whether the server says the case has expired."""
    return bool((await caller.GetCaseState(pb.GetCaseStateRequest(case_id=case_id))).expired)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)
