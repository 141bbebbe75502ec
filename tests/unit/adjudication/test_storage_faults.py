"""A database that cannot be reached is UNAVAILABLE with a retry delay, never an unexpected error.

On a real PostgreSQL server, the store's connections are cut from the server side
(``pg_terminate_backend``, what a fast shutdown does to every session: SQLSTATE 57P01),
with new ones refused (a role's connection limit of 0: SQLSTATE 53300) or allowed;
a whole restart of the server under two replicas is the process test
``tests/process/test_adjudication_db_restart.py``. On SQLite: a file locked by another
connection. Then the status the runtime builds from the domain error
carries RetryInfo and the pushback trailer, and a write whose commit outcome is unknown
carries RetryInfo only when its request id makes a repeat safe.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import asyncpg
import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from assay.errors import Reason, Unavailable
from assay.runtime.status import PUSHBACK_KEY, to_status
from assay.services.adjudication.domain.model import EVERY_TENANT, ReviewerKind
from assay.services.adjudication.storage import faults
from assay.services.adjudication.storage.postgres import PostgresStore
from assay.services.adjudication.storage.postgres.faults import is_unreachable
from assay.services.adjudication.storage.postgres.store import POOL_MAX
from assay.services.adjudication.storage.sqlite import faults as sqlite_faults
from assay.services.adjudication.storage.sqlite.store import Store as SqliteStore
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import KeyedJob, RequestKey
from tests.support.eventually import eventually_async
from tests.support.postgres import PostgresServer

T = TypeVar("T")


@dataclass
class Limited:
    """A database reached as a role of its own (not a superuser), whose connections the
    test can cut and refuse: ``CONNECTION LIMIT 0`` makes the server answer each new one
    with TooManyConnectionsError, as a full server does."""

    admin_dsn: str
    role: str
    dsn: str

    async def _admin(self, sql: str) -> None:
        admin = await asyncpg.connect(self.admin_dsn)
        try:
            await admin.execute(sql)
        finally:
            await admin.close()

    async def refuse_connections(self) -> None:
        await self._admin(f"ALTER ROLE {self.role} CONNECTION LIMIT 0")
        await self._admin(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{self.role}'"
        )

    async def allow_connections(self) -> None:
        await self._admin(f"ALTER ROLE {self.role} CONNECTION LIMIT -1")


@pytest.fixture
async def limited(postgres_server: PostgresServer, postgres_dsn: str) -> AsyncIterator[Limited]:
    role, password = f"app_{secrets.token_hex(4)}", secrets.token_hex(12)
    database = postgres_dsn.rsplit("/", 1)[1]
    admin = await asyncpg.connect(postgres_dsn)
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        await admin.execute(f'GRANT ALL ON DATABASE "{database}" TO {role}')
        await admin.execute(f"GRANT ALL ON SCHEMA public TO {role}")
    finally:
        await admin.close()
    dsn = f"postgresql://{role}:{password}@127.0.0.1:{postgres_server.port}/{database}"
    try:
        yield Limited(postgres_dsn, role, dsn)
    finally:
        admin = await asyncpg.connect(postgres_dsn)
        try:
            await admin.execute(f"DROP OWNED BY {role}")
            await admin.execute(f"DROP ROLE {role}")
        finally:
            await admin.close()


async def register(app: Adjudication, reviewer_id: str, request_id: str = "") -> bytes:
    return await app.register_reviewer(
        RequestKey(request_id, "Register", "digest"),
        reviewer_id,
        ReviewerKind.MECHANISM_TEST_FIXTURE,
        "",
        lambda r: r.reviewer_id.encode(),
    )


async def cut_connections(dsn: str) -> int:
    """Terminate every other session on the store's database, as a fast shutdown does."""
    admin = await asyncpg.connect(dsn)
    try:
        found = await admin.fetchval(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await admin.close()
    return int(found)


async def until_answered(call: Callable[[], Awaitable[T]]) -> T:
    """``call()`` repeated while it is STORAGE_UNAVAILABLE: each pooled connection the server
    cut fails once, then the pool reconnects (bounded by the pool's size)."""
    for _ in range(POOL_MAX + 2):
        try:
            return await call()
        except Unavailable as error:
            last = error
    raise AssertionError(f"still unavailable: {last}")


def details(error: Unavailable) -> tuple[grpc.StatusCode, dict[str, str], float | None, str]:
    """The status the runtime sends for ``error``: code, ErrorInfo metadata, RetryInfo delay
    (None: no RetryInfo) and the pushback trailer ("" when absent)."""
    status = to_status(error, "rid")
    trailers = dict(status.trailing_metadata)
    proto = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    metadata: dict[str, str] = {}
    delay = None
    for detail in proto.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            assert info.reason == Reason.STORAGE_UNAVAILABLE
            metadata = dict(info.metadata)
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            delay = retry.retry_delay.ToTimedelta().total_seconds()
    return status.code, metadata, delay, str(trailers.get(PUSHBACK_KEY, ""))


class TestPostgresConnectionsLost:
    async def test_a_write_while_the_server_refuses_connections_is_unavailable_then_succeeds(
        self, limited: Limited
    ) -> None:
        """Connections cut and new ones refused (TooManyConnectionsError): a write is
        STORAGE_UNAVAILABLE with a retry delay; once connections are allowed again the same
        write, repeated with its request id, succeeds once."""
        store = await PostgresStore.open(limited.dsn)
        try:
            app = Adjudication(store)
            await register(app, "before")  # the writer holds a live connection now
            await limited.refuse_connections()
            with pytest.raises(Unavailable) as caught:
                await register(app, "during", "rid-1")
            assert caught.value.reason == Reason.STORAGE_UNAVAILABLE
            assert caught.value.retry_delay == faults.RETRY_DELAY_SECONDS
            await limited.allow_connections()
            assert await register(app, "during", "rid-1") == b"during"
            assert await register(app, "during", "rid-1") == b"during"  # answered, not redone
            events = await store.audit_events(0, 10, EVERY_TENANT)
            assert [e.payload["reviewer_id"] for e in events] == ["before", "during"]
        finally:
            await store.close()

    async def test_a_read_while_the_server_refuses_connections_is_unavailable_then_answers(
        self, limited: Limited
    ) -> None:
        """Reads on cut connections, new ones refused: STORAGE_UNAVAILABLE (never an
        unexpected error); allowed again, the pool reconnects and the read answers."""
        store = await PostgresStore.open(limited.dsn)
        try:
            await register(Adjudication(store), "kept")
            await limited.refuse_connections()
            with pytest.raises(Unavailable) as caught:
                await store.reviewer("kept")
            assert caught.value.reason == Reason.STORAGE_UNAVAILABLE
            await limited.allow_connections()
            found = await until_answered(lambda: store.reviewer("kept"))
            assert found is not None
        finally:
            await store.close()

    async def test_cut_connections_are_unavailable_or_reconnected_never_internal(
        self, postgres_dsn: str
    ) -> None:
        """Connections the server terminated (what a fast shutdown does), reconnection
        allowed: each call either answers, the pool having reconnected, or is
        STORAGE_UNAVAILABLE; nothing else, and the store carries on by itself."""
        store = await PostgresStore.open(postgres_dsn)
        try:
            app = Adjudication(store)
            for round_number in range(5):
                await until_answered(lambda: store.reviewer("anyone"))
                await cut_connections(postgres_dsn)
                name = f"r{round_number}"
                write = functools.partial(register, app, name, name)
                assert await until_answered(write) == name.encode()
            listed = await until_answered(lambda: store.reviewers("", 10))
            assert [r.reviewer_id for r in listed] == [f"r{i}" for i in range(5)]
        finally:
            await store.close()


# A deferred constraint trigger runs during COMMIT: sleeping there holds the COMMIT open, so
# the test can cut the connection while it is under way, as a crash at that moment would.
SLOW_COMMIT = """
CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_sleep(30); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON reviewers
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();
"""


async def cut_during_commit(dsn: str) -> None:
    """Wait until a session of the database runs COMMIT, then terminate it."""
    admin = await asyncpg.connect(dsn)
    try:

        async def committing() -> int | None:
            pid: int | None = await admin.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'active' AND query = 'COMMIT' AND pid <> pg_backend_pid()"
            )
            return pid

        pid = await eventually_async(committing, message="a COMMIT under way", timeout=20)
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


class TestCommitOutcomeUnknown:
    @pytest.mark.parametrize(
        ("request_id", "retry_safe"),
        [("rid-commit", True), ("", False)],
    )
    async def test_a_connection_lost_during_commit_is_retryable_only_with_a_request_id(
        self, postgres_dsn: str, request_id: str, retry_safe: bool
    ) -> None:
        """The connection cut while COMMIT runs: STORAGE_UNAVAILABLE either way; with a
        request id it carries a retry delay and the repeat stores the write once, without
        one it carries none and says the outcome is unknown."""
        store = await PostgresStore.open(postgres_dsn)
        try:
            app = Adjudication(store)
            await register(app, "before")
            admin = await asyncpg.connect(postgres_dsn)
            try:
                await admin.execute(SLOW_COMMIT)
            finally:
                await admin.close()
            write = asyncio.create_task(register(app, "during", request_id))
            await cut_during_commit(postgres_dsn)
            with pytest.raises(Unavailable) as caught:
                await write
            error = caught.value
            assert error.reason == Reason.STORAGE_UNAVAILABLE
            assert "while committing" in error.message
            admin = await asyncpg.connect(postgres_dsn)
            try:
                await admin.execute("DROP TRIGGER slow_commit ON reviewers")
            finally:
                await admin.close()
            if retry_safe:
                assert error.retry_delay == faults.RETRY_DELAY_SECONDS
                again = functools.partial(register, app, "during", request_id)
                assert await until_answered(again) == b"during"
                events = await store.audit_events(0, 10, EVERY_TENANT)
                assert [e.payload["reviewer_id"] for e in events] == ["before", "during"]
            else:
                assert error.retry_delay is None
                assert error.metadata == {"commit_outcome": "unknown"}
        finally:
            await store.close()


class TestSqliteLocked:
    async def test_a_write_while_another_connection_holds_the_lock_is_unavailable(
        self, tmp_path: Path
    ) -> None:
        """Another connection holding the file's write lock past the busy timeout: the write
        is STORAGE_UNAVAILABLE with a retry delay (nothing stored); once the lock is gone the
        same write succeeds."""
        path = tmp_path / "assay.db"
        store = await SqliteStore.open(path)
        try:
            app = Adjudication(store)
            await register(app, "before")
            holder = sqlite3.connect(path, isolation_level=None)
            try:
                holder.execute("BEGIN IMMEDIATE")
                with pytest.raises(Unavailable) as caught:
                    await register(app, "during", "rid-1")
            finally:
                holder.close()
            assert caught.value.reason == Reason.STORAGE_UNAVAILABLE
            assert caught.value.retry_delay == faults.RETRY_DELAY_SECONDS
            assert await register(app, "during", "rid-1") == b"during"
            events = await store.audit_events(0, 10, EVERY_TENANT)
            assert [e.payload["reviewer_id"] for e in events] == ["before", "during"]
        finally:
            await store.close()


class TestClassification:
    @pytest.mark.parametrize(
        ("error", "unreachable"),
        [
            (ConnectionRefusedError(111, "Connection refused"), True),
            (asyncpg.ConnectionDoesNotExistError("connection was closed"), True),
            (asyncpg.CannotConnectNowError("the database system is starting up"), True),
            (asyncpg.AdminShutdownError("terminating connection"), True),
            (asyncpg.CrashShutdownError("terminating connection"), True),
            (asyncpg.TooManyConnectionsError("too many clients"), True),
            (asyncpg.TargetServerAttributeNotMatched("None of the hosts match"), True),
            (asyncpg.InterfaceError("connection is closed"), True),
            (asyncpg.InterfaceError("cannot perform operation: another operation"), False),
            (asyncpg.UniqueViolationError("duplicate key"), False),
            (asyncpg.PostgresSyntaxError("syntax error"), False),
            (RuntimeError("a bug"), False),
        ],
    )
    def test_only_errors_saying_the_server_is_gone_are_unreachable(
        self, error: Exception, unreachable: bool
    ) -> None:
        """Lost, refused, shutting down, starting, full: unreachable; a constraint, a syntax
        error or a client mistake stays an unexpected failure."""
        assert is_unreachable(error) is unreachable

    def test_a_locked_sqlite_file_is_unreachable_and_other_errors_are_not(
        self, tmp_path: Path
    ) -> None:
        """SQLite's "database is locked" (another connection holds the write lock) is busy,
        not broken; a syntax error is not."""
        path = tmp_path / "locked.db"
        holder = sqlite3.connect(path, isolation_level=None)
        other = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            holder.execute("CREATE TABLE t (x)")
            holder.execute("BEGIN EXCLUSIVE")
            with pytest.raises(sqlite3.OperationalError) as locked:
                other.execute("BEGIN EXCLUSIVE")
            with pytest.raises(sqlite3.OperationalError) as syntax:
                other.execute("SELEC 1")
        finally:
            holder.close()
            other.close()
        assert sqlite_faults.is_unreachable(locked.value)
        assert not sqlite_faults.is_unreachable(syntax.value)


class TestStatus:
    def test_an_unreachable_database_is_unavailable_with_retry_info_and_pushback(self) -> None:
        """UNAVAILABLE, STORAGE_UNAVAILABLE, a RetryInfo delay and the same pushback in ms."""
        error = faults.unreachable(ConnectionRefusedError(111, "refused"))
        code, metadata, delay, pushback = details(error)
        assert code == grpc.StatusCode.UNAVAILABLE
        assert delay == faults.RETRY_DELAY_SECONDS
        assert pushback == str(round(faults.RETRY_DELAY_SECONDS * 1000))
        assert "commit_outcome" not in metadata
        assert "ConnectionRefusedError" in error.message  # the kind, not the driver's text
        assert "refused" not in error.message

    @pytest.mark.parametrize(
        ("request_id", "retry_safe"),
        [("rid-7", True), ("", False)],
    )
    def test_an_unknown_commit_is_retryable_only_with_a_request_id(
        self, request_id: str, retry_safe: bool
    ) -> None:
        """A lost COMMIT: with a request id, RetryInfo (the repeat returns the stored answer);
        without, no RetryInfo, no pushback, and metadata commit_outcome=unknown."""
        job = KeyedJob(lambda tx: b"", request_id)
        error = faults.commit_unknown(asyncpg.ConnectionDoesNotExistError("lost"), job)
        code, metadata, delay, pushback = details(error)
        assert code == grpc.StatusCode.UNAVAILABLE
        if retry_safe:
            assert delay == faults.RETRY_DELAY_SECONDS
            assert pushback
            assert "commit_outcome" not in metadata
        else:
            assert delay is None
            assert pushback == ""
            assert metadata["commit_outcome"] == "unknown"
