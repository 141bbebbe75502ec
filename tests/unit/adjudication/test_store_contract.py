"""The storage contract: what every engine behind ``storage.interface.Store`` / ``WriteTx`` does.

Each test runs once per engine (``engine``: a SQLite file, a fresh database on the
session's real PostgreSQL server) through the interface only — the service's own use cases
(``operations.Adjudication``) or plain jobs of a ``WriteTx`` — so one engine cannot pass
by an answer the other would not give. What only one engine has stays with it: advisory
locks, replicas and SQL-level guards in ``test_postgres_store``; the file lock, owner-only
files and migrations of old files in the SQLite tests.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assay.errors import AlreadyExists, DataLoss, InvalidArgument, Reason
from assay.services.adjudication.domain import ledger
from assay.services.adjudication.domain.model import (
    EVERY_TENANT,
    AuditEventType,
    Basis,
    ChainHead,
    DeletedCounts,
    Outcome,
    Reviewer,
    ReviewerKind,
    TenantScope,
)
from assay.services.adjudication.domain.resolution import ResolveRequest
from assay.services.adjudication.domain.reviewers import new_reviewer
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.storage import Store as SqliteStore
from assay.services.adjudication.storage.interface import ExportBatch, Store, WriteTx
from assay.services.adjudication.storage.postgres import PostgresStore, is_postgres_url
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey
from tests.service import tamper_sql
from tests.unit.adjudication.factories import case_input, make_case


@dataclass
class Engine:
    """An open store and where its data lives (a SQLite path or a PostgreSQL URL), for the
    few tests that edit rows behind its back."""

    store: Store
    db: str

    @property
    def app(self) -> Adjudication:
        return Adjudication(self.store)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where each engine keeps its data: a SQLite file, a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "a.db")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture
async def engine(engine_db: str) -> AsyncIterator[Engine]:
    """Each engine in turn, open on an empty database."""
    if is_postgres_url(engine_db):
        store: Store = await PostgresStore.open(engine_db)
    else:
        store = await SqliteStore.open(engine_db)
    try:
        yield Engine(store, engine_db)
    finally:
        await store.close()


def key(method: str, request_id: str = "", digest: str = "d") -> RequestKey:
    return RequestKey(request_id, method, digest)


async def enqueue(
    app: Adjudication, request_id: str = "", tenant: str = "tenant-a", days: float = 1
) -> str:
    data = case_input(tenant=tenant, expire_time=datetime.now(UTC) + timedelta(days=days))
    raw = await app.enqueue_case(key("Enqueue", request_id), data, lambda c: c.case_id.encode())
    return raw.decode()


async def register(app: Adjudication, reviewer_id: str) -> None:
    await app.register_reviewer(
        key("Register"),
        reviewer_id,
        ReviewerKind.MECHANISM_TEST_FIXTURE,
        "",
        lambda r: r.reviewer_id.encode(),
    )


async def review(app: Adjudication, case_id: str, reviewer_id: str, label: str = "key") -> str:
    sub = ReviewSubmission(case_id, reviewer_id, 0, Outcome.LABEL, label, "")
    raw = await app.submit_review(key("Review"), sub, lambda r: r[0].review_id.encode())
    return raw.decode()


async def gold_case(app: Adjudication, tenant: str = "tenant-a") -> str:
    """A case reviewed twice in agreement, resolved and frozen: a row in every table."""
    case_id = await enqueue(app, tenant=tenant)
    for reviewer_id in ("alice", "bob"):
        if await app.store.reviewer(reviewer_id) is None:
            await register(app, reviewer_id)
        await review(app, case_id, reviewer_id)
    request = ResolveRequest(case_id, Basis.UNANIMOUS_AGREEMENT, None, "")
    await app.resolve_case(key("Resolve"), request, lambda r: r[0].case_id.encode())
    await app.freeze(key("Freeze"), case_id, 1, lambda g: g.digest.encode())
    return case_id


def fixture_reviewer(reviewer_id: str) -> Reviewer:
    return new_reviewer(reviewer_id, ReviewerKind.MECHANISM_TEST_FIXTURE, "", datetime.now(UTC))


def registering(reviewer_id: str) -> Callable[[WriteTx], int]:
    """A job registering ``reviewer_id`` with its event; it returns the event's sequence."""

    def job(tx: WriteTx) -> int:
        tx.insert_reviewer(fixture_reviewer(reviewer_id))
        payload = {"reviewer_id": reviewer_id, "kind": "MECHANISM_TEST_FIXTURE"}
        return tx.append_event(AuditEventType.REVIEWER_REGISTERED, payload).sequence

    return job


def counted(result: tuple[DeletedCounts, int]) -> bytes:
    counts, _ = result
    return f"{counts.cases}/{counts.reviews}/{counts.resolutions}".encode()


class TestWrites:
    async def test_a_job_reads_its_own_writes(self, engine: Engine) -> None:
        """A row written by a job is visible to the job's next read, and to readers once
        committed."""

        def job(tx: WriteTx) -> Reviewer | None:
            registering("dave")(tx)
            return tx.reviewer("dave")

        found = await engine.store.write(job)
        assert found is not None
        assert found.reviewer_id == "dave"
        assert await engine.store.reviewer("dave") == found

    async def test_a_duplicate_row_is_refused_as_already_exists(self, engine: Engine) -> None:
        """A duplicate key fails the job with its reason, and nothing of the job stays."""

        def job(tx: WriteTx) -> None:
            tx.insert_reviewer(fixture_reviewer("erin"))
            tx.append_event(AuditEventType.REVIEWER_REGISTERED, {"reviewer_id": "erin"})
            tx.insert_reviewer(fixture_reviewer("erin"))

        with pytest.raises(AlreadyExists) as refused:
            await engine.store.write(job)
        assert refused.value.reason is Reason.REVIEWER_ALREADY_EXISTS
        assert await engine.store.reviewer("erin") is None
        assert await engine.store.audit_events(0, 10, EVERY_TENANT) == []

    async def test_a_failing_job_leaves_the_others_of_its_batch(self, engine: Engine) -> None:
        """Jobs before and after a failing one, queued together, commit in one chain; the
        failing one's event is rolled back with it."""

        def failing(tx: WriteTx) -> int:
            tx.append_event(AuditEventType.REVIEWER_REGISTERED, {"reviewer_id": "ghost"})
            raise AlreadyExists(Reason.REVIEWER_ALREADY_EXISTS, "refused after writing")

        store = engine.store
        outcomes = await asyncio.gather(
            store.write(registering("fay")),
            store.write(failing),
            store.write(registering("gus")),
            return_exceptions=True,
        )
        assert outcomes[0] == 1
        assert isinstance(outcomes[1], AlreadyExists)
        assert outcomes[2] == 2
        events = await store.audit_events(0, 10, EVERY_TENANT)
        assert [e.payload["reviewer_id"] for e in events] == ["fay", "gus"]
        assert await store.reviewer("ghost") is None
        assert (await store.verify_chain()).ok

    async def test_concurrent_writes_form_one_gap_free_chain(self, engine: Engine) -> None:
        """Many writes at once get sequences 1..n, each event linked to the one before."""
        app = engine.app
        await asyncio.gather(*(enqueue(app) for _ in range(30)))
        events = await engine.store.audit_events(0, 100, EVERY_TENANT)
        assert [e.sequence for e in events] == list(range(1, 31))
        assert all(e.previous_hash == p.hash for p, e in itertools.pairwise(events))
        assert (await engine.store.verify_chain()).events_checked == 30

    async def test_a_bulk_insert_records_its_rows_on_the_ledger(self, engine: Engine) -> None:
        """Seeded cases get their CASE_ENQUEUED events, after the events already there."""
        await gold_case(engine.app)
        store = engine.store
        before = len(await store.audit_events(0, 100, EVERY_TENANT))
        seeded = [make_case(f"case-seed-{i}") for i in range(3)]

        def job(tx: WriteTx) -> None:
            tx.bulk_insert(seeded, [])

        await store.write(job)
        events = await store.audit_events(before, 100, EVERY_TENANT)
        assert [e.payload["case_id"] for e in events] == [c.case_id for c in seeded]
        assert [e.sequence for e in events] == [before + 1, before + 2, before + 3]
        assert (await store.snapshot("case-seed-1")) is not None
        assert (await store.verify_chain()).ok


class TestRetries:
    async def test_a_retried_request_id_returns_the_first_response_once(
        self, engine: Engine
    ) -> None:
        """The same request id sent again (after, and at once) answers the first response;
        the write is done once."""
        app = engine.app
        first = await enqueue(app, request_id="req-1")
        assert await enqueue(app, request_id="req-1") == first
        racing = await asyncio.gather(*(enqueue(app, request_id="req-2") for _ in range(5)))
        assert len(set(racing)) == 1
        assert racing[0] != first
        events = await engine.store.audit_events(0, 100, EVERY_TENANT)
        assert [e.payload["case_id"] for e in events] == [first, racing[0]]

    async def test_a_reused_request_id_with_another_request_is_refused(
        self, engine: Engine
    ) -> None:
        """A request id reused for a different request is not answered with the first one."""
        app = engine.app
        await enqueue(app, request_id="req-1")
        data = case_input(expire_time=datetime.now(UTC) + timedelta(days=1))
        with pytest.raises(InvalidArgument) as refused:
            await app.enqueue_case(
                key("Enqueue", "req-1", digest="other"), data, lambda c: c.case_id.encode()
            )
        assert refused.value.reason is Reason.REQUEST_ID_REUSED
        assert len(await engine.store.audit_events(0, 100, EVERY_TENANT)) == 1


class TestReads:
    async def test_reads_return_what_was_written(self, engine: Engine) -> None:
        """Every read of the store returns the rows the use cases wrote."""
        store, app = engine.store, engine.app
        case_id = await gold_case(app)
        other = await enqueue(app, tenant="tenant-b")

        alice = await store.reviewer("alice")
        assert alice is not None
        assert alice.kind is ReviewerKind.MECHANISM_TEST_FIXTURE
        assert [r.reviewer_id for r in await store.reviewers("", 10)] == ["alice", "bob"]
        assert [r.reviewer_id for r in await store.reviewers("alice", 10)] == ["bob"]
        assert await store.reviewer("nobody") is None

        detail = await store.case_detail(case_id)
        assert detail is not None
        snap, reviews, resolutions = detail
        assert snap.revision_count == 1
        assert [r.reviewer_id for r in reviews] == ["alice", "bob"]
        assert [r.basis for r in resolutions] == [Basis.UNANIMOUS_AGREEMENT]
        state = await store.case_state(case_id)
        assert state is not None
        assert state.case == snap.case
        assert await store.snapshot("case-none") is None
        assert await store.case_detail("case-none") is None

        labels = await store.gold_labels(case_id, None, 10, EVERY_TENANT)
        assert [(g.case_id, g.revision, g.label_key) for g in labels] == [(case_id, 1, '"key"')]
        assert await store.gold_labels("", None, 10, TenantScope(frozenset({"tenant-b"}))) == []

        now = datetime.now(UTC)
        queued = await store.queue("alice", EVERY_TENANT, "", 10, now)
        assert [(c.case_id, r) for c, r in queued] == [(other, 1)]
        scoped = await store.queue("alice", TenantScope(frozenset({"tenant-a"})), "", 10, now)
        assert scoped == []

        events = await store.audit_events(0, 100, EVERY_TENANT)
        kinds = [e.event_type for e in events]
        assert kinds.count(AuditEventType.REVIEW_SUBMITTED) == 2
        assert kinds[-1] is AuditEventType.CASE_ENQUEUED
        tenant_b = await store.audit_events(0, 100, TenantScope(frozenset({"tenant-b"})))
        assert [e.payload["case_id"] for e in tenant_b] == [other]
        assert await store.audit_events(2, 2, EVERY_TENANT) == events[2:4]

        assert len(await store.rated_rounds(EVERY_TENANT)) == 1
        assert await store.rated_rounds(TenantScope(frozenset({"tenant-b"}))) == []

    async def test_chain_hashes_are_the_events_hashes(self, engine: Engine) -> None:
        """chain_hashes lists (sequence, hash) of every event after the one given."""
        await gold_case(engine.app)
        events = await engine.store.audit_events(0, 100, EVERY_TENANT)
        assert await engine.store.chain_hashes(0) == [(e.sequence, e.hash) for e in events]
        assert await engine.store.chain_hashes(3) == [(e.sequence, e.hash) for e in events[3:]]
        assert await engine.store.chain_hashes(len(events)) == []

    async def test_an_export_is_the_head_then_the_frozen_labels(self, engine: Engine) -> None:
        """The chain head first, then every frozen label in batches, scoped by tenant."""
        app = engine.app
        first = await gold_case(app)
        second = await gold_case(app, tenant="tenant-b")
        await enqueue(app)  # not frozen: not exported
        events = await engine.store.audit_events(0, 100, EVERY_TENANT)

        exported: list[Any] = [item async for item in engine.store.export(EVERY_TENANT, 1)]
        assert exported[0] == ChainHead(events[-1].sequence, events[-1].hash)
        batches = exported[1:]
        assert all(isinstance(b, ExportBatch) for b in batches)
        records = [r for b in batches for r in b.records]
        assert sorted(r.revision.case_id for r in records) == sorted([first, second])
        assert all(r.event is not None for r in records)

        only_b = TenantScope(frozenset({"tenant-b"}))
        scoped: list[Any] = [item async for item in engine.store.export(only_b, 10)]
        assert [r.revision.case_id for b in scoped[1:] for r in b.records] == [second]

    async def test_an_empty_database_verifies(self, engine: Engine) -> None:
        """No events: the chain is ok with nothing checked, and nothing is exported."""
        verdict = await engine.store.verify_chain()
        assert (verdict.ok, verdict.events_checked) == (True, 0)
        exported = [item async for item in engine.store.export(EVERY_TENANT, 10)]
        assert exported[0] == ChainHead(0, ledger.EMPTY_HEAD.hash)
        assert [r for b in exported[1:] if isinstance(b, ExportBatch) for r in b.records] == []


class TestVerification:
    async def test_a_written_database_verifies(self, engine: Engine) -> None:
        """Every event and record the use cases wrote checks out."""
        await gold_case(engine.app)
        events = await engine.store.audit_events(0, 100, EVERY_TENANT)
        verdict = await engine.store.verify_chain()
        assert verdict.ok, verdict
        assert verdict.events_checked == len(events)

    async def test_verification_finds_an_edited_record(self, engine: Engine) -> None:
        """A case row changed behind the service's back fails verification, naming it."""
        case_id = await gold_case(engine.app)
        tamper_sql.edit(engine.db, "UPDATE cases SET subject = 'forged' WHERE case_id = ?", case_id)
        verdict = await engine.store.verify_chain()
        assert not verdict.ok
        assert case_id in verdict.detail

    async def test_an_edited_case_is_caught_after_it_was_read(self, engine: Engine) -> None:
        """A case read (and checked) once is checked again when its row changes."""
        case_id = await enqueue(engine.app)
        assert await engine.store.snapshot(case_id) is not None
        tamper_sql.edit(engine.db, "UPDATE cases SET subject = 'forged' WHERE case_id = ?", case_id)
        with pytest.raises(DataLoss):
            await engine.store.snapshot(case_id)


class TestDeletions:
    async def test_a_tenant_deletion_removes_its_cases_and_keeps_the_chain(
        self, engine: Engine
    ) -> None:
        """Deleting tenant-a removes its cases, reviews and resolutions (counted), keeps
        tenant-b's and every gold label, and the chain still verifies."""
        store, app = engine.store, engine.app
        gone = await gold_case(app)
        kept = await enqueue(app, tenant="tenant-b")
        raw = await app.delete_tenant(key("Delete"), "tenant-a", counted)
        assert raw == b"1/2/1"
        assert await store.snapshot(gone) is None
        assert await store.snapshot(kept) is not None
        assert [g.case_id for g in await store.gold_labels(gone, None, 10, EVERY_TENANT)] == [gone]
        events = await store.audit_events(0, 100, EVERY_TENANT)
        assert events[-1].event_type is AuditEventType.TENANT_RECORDS_DELETED
        assert (await store.verify_chain()).ok

    async def test_a_sweep_removes_only_expired_cases(self, engine: Engine) -> None:
        """A sweep two days on removes the case that expired, not the one still open."""
        early = await enqueue(engine.app, days=1)
        late = await enqueue(engine.app, days=5)
        later = Adjudication(engine.store, clock=lambda: datetime.now(UTC) + timedelta(days=2))
        assert await later.sweep(key("Sweep"), counted) == b"1/0/0"
        assert await engine.store.snapshot(early) is None
        assert await engine.store.snapshot(late) is not None
        events = await engine.store.audit_events(0, 100, EVERY_TENANT)
        assert events[-1].event_type is AuditEventType.EXPIRED_RECORDS_SWEPT
        assert (await engine.store.verify_chain()).ok
