"""What only the PostgreSQL engine has, on a real server: migrations under an advisory
lock, insert-only rules enforced by triggers against plain SQL, two replicas on one database.

What every engine does (writes through jobs, retries, reads, export, verification,
deletions, a failing job's rollback) is the storage contract, ``test_store_contract``, run
on both. The writes are the service's own use cases (``operations.Adjudication``) over a
``PostgresStore``; two stores on one database are two replicas (two pools, two writers).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from assay.errors import AlreadyExists, Reason
from assay.services.adjudication.domain import ledger
from assay.services.adjudication.domain.model import (
    EVERY_TENANT,
    AuditEventType,
    Basis,
    ChainHead,
    Outcome,
    ReviewerKind,
)
from assay.services.adjudication.domain.resolution import ResolveRequest
from assay.services.adjudication.domain.reviewers import new_reviewer
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.storage.postgres import (
    PostgresStore,
    PostgresWriteTx,
    SchemaTooNew,
    schema,
)
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey
from tests.unit.adjudication.factories import case_input


@pytest.fixture
async def store(postgres_dsn: str) -> AsyncIterator[PostgresStore]:
    opened = await PostgresStore.open(postgres_dsn)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def replicas(postgres_dsn: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one database: two pools, two writers, as two processes would have."""
    first, second = await asyncio.gather(
        PostgresStore.open(postgres_dsn), PostgresStore.open(postgres_dsn)
    )
    try:
        yield first, second
    finally:
        await asyncio.gather(first.close(), second.close())


def service(store: PostgresStore) -> Adjudication:
    return Adjudication(store)


def key(method: str, request_id: str = "", digest: str = "d") -> RequestKey:
    return RequestKey(request_id, method, digest)


async def enqueue(app: Adjudication, request_id: str = "", tenant: str = "tenant-a") -> str:
    data = case_input(tenant=tenant, expire_time=datetime.now(UTC) + timedelta(days=1))
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


async def review(app: Adjudication, case_id: str, reviewer_id: str, label: str = "key") -> None:
    sub = ReviewSubmission(case_id, reviewer_id, 0, Outcome.LABEL, label, "")
    await app.submit_review(key("Review"), sub, lambda r: r[0].review_id.encode())


async def gold_case(app: Adjudication) -> str:
    """A case reviewed twice in agreement, resolved and frozen: a row in every table."""
    case_id = await enqueue(app)
    for reviewer_id in ("alice", "bob"):
        if await app.store.reviewer(reviewer_id) is None:
            await register(app, reviewer_id)
        await review(app, case_id, reviewer_id)
    request = ResolveRequest(case_id, Basis.UNANIMOUS_AGREEMENT, None, "")
    await app.resolve_case(key("Resolve"), request, lambda r: r[0].case_id.encode())
    await app.freeze(key("Freeze"), case_id, 1, lambda g: g.digest.encode())
    return case_id


class TestMigrations:
    async def test_a_fresh_database_reaches_the_current_version_once(
        self, postgres_dsn: str
    ) -> None:
        """Migrating twice applies every version once and leaves the version current."""
        db = await asyncpg.connect(postgres_dsn)
        try:
            assert await schema.version(db) == 0
            assert await schema.migrate(db) == schema.SCHEMA_VERSION
            assert await schema.migrate(db) == schema.SCHEMA_VERSION
            assert await schema.version(db) == schema.SCHEMA_VERSION
            columns = await db.fetch(
                "SELECT table_name FROM information_schema.columns "
                "WHERE column_name = 'digest_version' ORDER BY table_name"
            )
            assert [r["table_name"] for r in columns] == ["cases", "gold_labels"]
            indexes = {
                r["indexname"]
                for r in await db.fetch(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'audit_events'"
                )
            }
            assert {"audit_gold_events", "audit_case_events", "audit_review_events"} <= indexes
        finally:
            await db.close()

    async def test_replicas_starting_together_migrate_once(self, postgres_dsn: str) -> None:
        """Several stores opening one empty database at once all start, on one schema."""
        opened = await asyncio.gather(*(PostgresStore.open(postgres_dsn) for _ in range(3)))
        try:
            async with opened[0].pool.acquire() as db:
                assert await schema.version(db) == schema.SCHEMA_VERSION
        finally:
            await asyncio.gather(*(s.close() for s in opened))

    async def test_a_newer_schema_is_refused(self, postgres_dsn: str) -> None:
        """A database written by a newer Assay is not opened."""
        db = await asyncpg.connect(postgres_dsn)
        try:
            await schema.migrate(db)
            await db.execute("UPDATE schema_version SET version = $1", schema.SCHEMA_VERSION + 1)
        finally:
            await db.close()
        with pytest.raises(SchemaTooNew, match=f"knows up to {schema.SCHEMA_VERSION}"):
            await PostgresStore.open(postgres_dsn)


class TestInsertOnly:
    @pytest.mark.parametrize(
        "statement",
        [
            "UPDATE gold_labels SET label_key = '\"none\"'",
            "DELETE FROM gold_labels",
            "TRUNCATE gold_labels",
            "UPDATE audit_events SET hash = 'x'",
            "DELETE FROM audit_events",
            "TRUNCATE audit_events CASCADE",
            "UPDATE reviewers SET attested_by = 'mallory'",
            "DELETE FROM reviewers",
        ],
    )
    async def test_the_database_refuses_changes(self, store: PostgresStore, statement: str) -> None:
        """Gold labels, audit events and reviewers cannot be changed or removed, even by SQL."""
        await gold_case(service(store))
        async with store.pool.acquire() as db:
            with pytest.raises(asyncpg.IntegrityConstraintViolationError):
                await db.execute(statement)
        assert (await store.verify_chain()).ok


class TestReplicas:
    async def test_concurrent_appends_form_one_gap_free_chain(
        self, replicas: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """Writes spread over two replicas at once give one total order with no gap or fork."""
        apps = [service(s) for s in replicas]
        per_replica = 40
        await asyncio.gather(*(enqueue(apps[i % 2]) for i in range(2 * per_replica)))
        events = await replicas[1].audit_events(0, 1000, EVERY_TENANT)
        assert [e.sequence for e in events] == list(range(1, 2 * per_replica + 1))
        head = ledger.EMPTY_HEAD
        for event in events:
            assert event.previous_hash == head.hash
            head = ChainHead(event.sequence, event.hash)
        verdict = await replicas[0].verify_chain()
        assert verdict.ok, verdict
        assert verdict.events_checked == 2 * per_replica

    async def test_a_retry_on_the_other_replica_returns_the_first_response(
        self, replicas: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """A request id answered by one replica is answered the same by the other, once."""
        first, second = (service(s) for s in replicas)
        answered = await enqueue(first, request_id="req-1")
        assert await enqueue(second, request_id="req-1") == answered
        events = await replicas[0].audit_events(0, 100, EVERY_TENANT)
        assert [e.event_type for e in events] == [AuditEventType.CASE_ENQUEUED]

    async def test_a_request_sent_to_both_replicas_at_once_is_done_once(
        self, replicas: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """The same request id racing on both replicas: one case, one answer for both."""
        apps = [service(s) for s in replicas]
        answers = await asyncio.gather(
            *(enqueue(apps[i % 2], request_id=f"race-{i // 2}") for i in range(20))
        )
        assert all(answers[i] == answers[i + 1] for i in range(0, 20, 2))
        assert len(set(answers)) == 10
        events = await replicas[1].audit_events(0, 100, EVERY_TENANT)
        assert len(events) == 10

    async def test_a_review_written_by_one_replica_is_seen_by_the_other(
        self, replicas: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """No replica works from a stale copy: the second review's round counts the first."""
        first, second = (service(s) for s in replicas)
        case_id = await enqueue(first)
        await register(first, "alice")
        await register(second, "bob")
        await review(first, case_id, "alice")
        await review(second, case_id, "bob")
        with pytest.raises(AlreadyExists):
            await review(second, case_id, "alice")
        snap = await replicas[0].snapshot(case_id)
        assert snap is not None
        assert [r.reviewer_id for r in snap.round_reviews] == ["alice", "bob"]

    async def test_a_failing_job_rolls_back_alone(
        self, replicas: tuple[PostgresStore, PostgresStore]
    ) -> None:
        """The same reviewer registered on both replicas at once: one wins, the chain holds."""
        apps = [service(s) for s in replicas]
        outcomes = await asyncio.gather(
            *(register(apps[i % 2], "carol") for i in range(4)),
            *(enqueue(apps[i % 2]) for i in range(4)),
            return_exceptions=True,
        )
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(failed) == 3
        assert all(isinstance(o, AlreadyExists) for o in failed)
        assert (await replicas[0].verify_chain()).ok
        assert len(await replicas[0].audit_events(0, 100, EVERY_TENANT)) == 5


class TestBatchedWrites:
    async def test_a_row_refused_in_a_later_jobs_statement_fails_only_its_job(
        self, store: PostgresStore
    ) -> None:
        """A job's rows travel with the next job's read; refused there, they fail their own job."""
        app = service(store)
        case_id = await enqueue(app)
        await register(app, "alice")
        await review(app, case_id, "alice")
        snap = await store.snapshot(case_id)
        assert snap is not None
        sizes: list[int] = []
        store.writer.on_batch = lambda jobs, _: sizes.append(jobs)

        def duplicate(tx: PostgresWriteTx) -> str:
            tx.insert_review(snap.round_reviews[0])
            return "written"

        def reader(tx: PostgresWriteTx) -> str:
            return "read" if tx.recall(("", ""), "unknown") is None else "found"

        first, second = await asyncio.gather(
            store.write(duplicate), store.write(reader), return_exceptions=True
        )
        assert sizes == [2]
        assert isinstance(first, AlreadyExists)
        assert first.reason == Reason.REVIEW_ALREADY_SUBMITTED
        assert second == "read"
        assert (await store.verify_chain()).ok

    async def test_a_reviewer_read_in_a_rolled_back_batch_is_not_remembered(
        self, store: PostgresStore
    ) -> None:
        """Only reviewers of committed batches are kept: a rolled-back one stays unknown."""

        def register_then_fail(tx: PostgresWriteTx) -> None:
            tx.insert_reviewer(
                new_reviewer("dave", ReviewerKind.MECHANISM_TEST_FIXTURE, "", datetime.now(UTC))
            )
            assert tx.reviewer("dave") is not None
            raise RuntimeError("refused after reading")

        with pytest.raises(RuntimeError):
            await store.write(register_then_fail)
        assert await store.write(lambda tx: tx.reviewer("dave")) is None
        await register(service(store), "dave")
        found = await store.write(lambda tx: tx.reviewer("dave"))
        assert found is not None
        assert found.reviewer_id == "dave"


class TestReadsFetchedAhead:
    """A batch's request ids and cases are read in one statement each before its jobs run."""

    @pytest.mark.parametrize("reviewers_known", [False, True])
    async def test_jobs_of_one_batch_see_what_earlier_jobs_of_it_wrote(
        self, store: PostgresStore, reviewers_known: bool
    ) -> None:
        """Two reviews of each of two cases and a retry of the first, in one batch: a second
        review sees the first (the case's state), the retry is answered with the first's
        bytes, and the rows keep their order, whether they travel with a reviewer's read
        (reviewers not known yet) or all together when the retry reads through."""
        app = service(store)
        case_id, other_id = await enqueue(app), await enqueue(app)
        for reviewer_id in ("alice", "bob"):
            await register(app, reviewer_id)
        if reviewers_known:  # read once, then known: the batch below reads no reviewer
            await store.write(lambda tx: tx.reviewers(["alice", "bob"]))
        sizes: list[int] = []
        store.writer.on_batch = lambda jobs, _: sizes.append(jobs)

        async def submit(
            reviewer_id: str, request_id: str, label: str, case: str = case_id
        ) -> bytes:
            sub = ReviewSubmission(case, reviewer_id, 0, Outcome.LABEL, label, "")
            return await app.submit_review(
                key("Review", request_id, reviewer_id),
                sub,
                lambda r: f"{r[0].review_id} {r[1].value}".encode(),
            )

        first, second, third, fourth, retried = await asyncio.gather(
            submit("alice", "req-1", "key"),
            submit("bob", "req-2", "none"),
            submit("bob", "req-3", "key", other_id),
            submit("alice", "req-4", "key", other_id),
            submit("alice", "req-1", "key"),
        )
        assert sizes == [5]
        assert third.endswith(b" AWAITING_SECOND_REVIEW")
        assert fourth.endswith(b" AGREED")
        assert first.endswith(b" AWAITING_SECOND_REVIEW")
        assert second.endswith(b" DISAGREED")
        assert retried == first
        snap = await store.snapshot(case_id)
        assert snap is not None
        assert [r.reviewer_id for r in snap.round_reviews] == ["alice", "bob"]
        other = await store.snapshot(other_id)
        assert other is not None
        assert [r.reviewer_id for r in other.round_reviews] == ["bob", "alice"]
        assert (await store.verify_chain()).ok
        assert len(await store.audit_events(0, 100, EVERY_TENANT)) == 2 + 2 + 4

    async def test_a_broad_write_stops_the_batch_reading_what_it_fetched(
        self, store: PostgresStore
    ) -> None:
        """A tenant's cases deleted by one job are gone for the next job of the same batch,
        although the batch fetched that case before either ran."""
        case_id = await enqueue(service(store), tenant="tenant-gone")
        sizes: list[int] = []
        store.writer.on_batch = lambda jobs, _: sizes.append(jobs)

        def delete(tx: PostgresWriteTx) -> int:
            return tx.delete_tenant_cases("tenant-gone").cases

        def read(tx: PostgresWriteTx) -> bool:
            return tx.snapshot(case_id) is not None

        deleted, found = await asyncio.gather(store.write(delete), store.write(read))
        assert sizes == [2]
        assert deleted == 1
        assert found is False
