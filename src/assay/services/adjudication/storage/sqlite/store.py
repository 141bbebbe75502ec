"""The adjudication store on SQLite: one file, one process, one writer, a few readers.

Opening takes the file's process lock (``single_process``: a second process
is refused at start), makes the file owner-only (``files``), applies pending migrations
(``PRAGMA user_version``) and refuses a file written by a newer schema. The
writer connection is the only one that writes (see ``tx.py``); reads go to a
small pool of read-only connections, which WAL lets proceed while the writer
commits. Multi-statement reads run inside one read transaction, so they see
one consistent snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from assay.services.adjudication.domain import cases
from assay.services.adjudication.domain.model import (
    ChainHead,
    ChainVerdict,
    ExportExclusion,
    TenantScope,
)
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import faults, rows, verify_walk
from assay.services.adjudication.storage.interface import (
    ApprovalBatch,
    ExportBatch,
    exported_record,
)
from assay.services.adjudication.storage.page_steps import PageReads, Steps
from assay.services.adjudication.storage.sqlite import (
    approvals,
    files,
    ledger_checks,
    pages,
    primitives,
    queries,
)
from assay.services.adjudication.storage.sqlite import faults as sqlite_faults
from assay.services.adjudication.storage.sqlite.schema import MIGRATIONS, PRAGMAS, SCHEMA_VERSION
from assay.services.adjudication.storage.sqlite.single_process import ProcessLock
from assay.services.adjudication.storage.sqlite.sqlite_thread import SqliteConnection
from assay.services.adjudication.storage.sqlite.tx import WriteTx
from assay.services.adjudication.storage.sqlite.writer import Writer
from assay.services.adjudication.storage.store_reads import SnapshotReads, StoreReads

__all__ = ["ExportBatch", "SchemaTooNew", "Store"]

T = TypeVar("T")
READERS = 2


class SchemaTooNew(RuntimeError):
    """The file was written by a newer Assay; opening it could corrupt it."""


async def _connect(path: str, read_only: bool) -> SqliteConnection:
    """A connection whose rows read by column name (``sqlite3.Row``)."""
    pragmas = (*PRAGMAS, "PRAGMA query_only = ON") if read_only else PRAGMAS
    db = await SqliteConnection.open(path, pragmas)
    db.raw.row_factory = sqlite3.Row
    return db


def _migrate(db: sqlite3.Connection, path: str) -> None:
    version = int(db.execute("PRAGMA user_version").fetchone()["user_version"])
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{path} has schema version {version}; this assay knows up to {SCHEMA_VERSION}"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        script = MIGRATIONS[target - 1]
        db.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {target};\nCOMMIT;")


class Store(PageReads, StoreReads[sqlite3.Connection]):
    """Everything the service keeps, behind domain-valued methods."""

    def __init__(
        self, path: str, writer: Writer, readers: list[SqliteConnection], lock: ProcessLock
    ) -> None:
        self.path = path
        self.writer = writer
        self._lock = lock
        self._readers: asyncio.Queue[SqliteConnection] = asyncio.Queue()
        self._all_readers = readers
        for reader in readers:
            self._readers.put_nowait(reader)

    @classmethod
    async def open(cls, path: str | Path) -> Store:
        """Open (and migrate) ``path``; ``DatabaseInUse`` if another process has it open."""
        path = str(path)
        lock = ProcessLock.acquire(path)
        db: SqliteConnection | None = None
        readers: list[SqliteConnection] = []
        try:
            files.owner_only(path)
            db = await _connect(path, read_only=False)
            await db.run(lambda raw: _migrate(raw, path))
            head = await db.run(queries.chain_head)
            for _ in range(READERS):
                readers.append(await _connect(path, read_only=True))
        except BaseException:
            for opened in (db, *readers):
                if opened is not None:
                    await opened.close()
            lock.release()
            raise
        writer = Writer(db, head)
        writer.start()
        return cls(path, writer, readers, lock)

    async def close(self) -> None:
        """Finish queued writes, close every connection, then release the process lock."""
        await self.writer.stop()
        async with self.writer.lock:
            await self.writer.db.close()
        for reader in self._all_readers:
            await reader.close()
        self._lock.release()

    async def write(self, job: Callable[[WriteTx], T], small: bool = False) -> T:
        """Run ``job`` in the writer's next group-committed transaction. ``small``: the job
        touches a few rows of one case, so it may run on the event loop (see ``writer``)."""
        return await self.writer.submit(job, small)

    @contextlib.asynccontextmanager
    async def _reader(self) -> AsyncIterator[SqliteConnection]:
        db = await self._readers.get()
        try:
            yield db
        finally:
            self._readers.put_nowait(db)

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one read transaction on a pooled reader: one consistent snapshot."""

        def transaction(raw: sqlite3.Connection) -> T:
            raw.execute("BEGIN")
            try:
                return work(raw)
            finally:
                raw.execute("COMMIT")

        async with self._reader() as db:
            try:
                return await db.run(transaction)
            except sqlite3.OperationalError as error:
                if sqlite_faults.is_unreachable(error):  # locked by another connection
                    raise faults.unreachable(error) from None
                raise

    async def _page(self, steps: Steps[T]) -> T:
        """The page ``steps`` return, run in one read snapshot."""
        return await self._read(lambda db: pages.run(db, steps))

    async def _in_snapshot(
        self, read: Callable[[SnapshotReads[sqlite3.Connection]], Coroutine[Any, Any, T]]
    ) -> T:
        """``read`` (``store_reads``) in one read transaction, run to its end on a reader's
        thread (``primitives.completed``)."""
        return await self._read(
            lambda db: primitives.completed(read(SnapshotReads(primitives, db)))
        )

    # --- whole-database walks ------------------------------------------------

    # The other reads come from ``StoreReads``, stated once for both engines: those that
    # return records check them against their ledger events in the same read transaction,
    # DATA_LOSS naming the first that disagrees.

    async def export(
        self,
        scope: TenantScope,
        batch_size: int,
        include_reviews: bool = False,
        include_approvals: bool = False,
    ) -> AsyncIterator[ChainHead | ExportBatch | ApprovalBatch]:
        """The chain head first, then batches: one consistent snapshot on its own connection.
        Only labels of ``scope``'s tenants, so the manifest counts only those too. Each
        batch's labels and cases (and with ``include_reviews`` every review of its cases)
        are checked against the ledger in that snapshot (DATA_LOSS ends the stream naming
        the record) and carry their GOLD_LABEL_FROZEN events. With ``include_approvals``,
        then ``scope``'s approvals, newest first, in the same snapshot, checked likewise
        and carrying their events."""
        db = await _connect(self.path, read_only=True)
        sql = (
            f"SELECT {', '.join('g.' + c.strip() for c in rows.GOLD_COLUMNS.split(','))}, "
            "c.case_id AS present, c.subject, c.predicate, c.candidate_values, c.evidence_refs, "
            "c.context, c.claims, c.spot_check_rate "
            "FROM gold_labels g LEFT JOIN cases c ON c.case_id = g.case_id "
            "WHERE g.revision = (SELECT MAX(revision) FROM gold_labels m "
            f"WHERE m.case_id = g.case_id) AND {queries.IN_SCOPE.format(column='g.tenant')} "
            "ORDER BY g.case_id"
        )
        cursor: list[sqlite3.Cursor] = []

        def begin(raw: sqlite3.Connection) -> ChainHead:
            raw.execute("BEGIN")
            head = queries.chain_head(raw)
            cursor.append(raw.execute(sql, {"tenants": queries.tenants_param(scope)}))
            return head

        def next_batch(raw: sqlite3.Connection) -> ExportBatch | None:
            found = cursor[0].fetchmany(batch_size)
            return _checked(raw, _export_batch(found), include_reviews) if found else None

        def next_approvals(raw: sqlite3.Connection) -> ApprovalBatch | None:
            found = approvals.exported(raw, scope, last[0] if last else None, batch_size)
            if not found:
                return None
            newest = found[-1].approval
            last[:] = [(newest.approval_id, to_micros(newest.request_time))]
            return ApprovalBatch(found)

        last: list[tuple[str, int]] = []
        try:
            yield await db.run(begin)
            while (batch := await db.run(next_batch)) is not None:
                yield batch
            while include_approvals and (more := await db.run(next_approvals)) is not None:
                yield more
        finally:
            # Closing ends the read transaction. Shielded: a client that cancels the stream
            # must not leave the connection open.
            await asyncio.shield(db.close())

    # --- approvals -----------------------------------------------------------

    def listen_approvals(self, changed: Callable[[str], None]) -> None:
        """One process holds the file: its own commits are every change there is."""

    async def verify_chain(self) -> ChainVerdict:
        """Walk every event, then cross-check every gold-label row against the ledger."""
        db = await _connect(self.path, read_only=True)
        try:
            return await db.run(_verify)
        finally:
            await db.close()


def _verify(raw: sqlite3.Connection) -> ChainVerdict:
    """``verify_walk`` over this connection's cursors, in one read transaction: the record
    rows stream through the verifier."""
    raw.execute("BEGIN")
    try:
        walk = verify_walk.ChainWalk()
        if not walk.events(raw.execute(verify_walk.EVENTS_SQL)):
            return walk.finish([], [])
        stored = (
            record
            for kind, sql in verify_walk.RECORD_SQL
            for record in verify_walk.stored_records(kind, raw.execute(sql))
        )
        return walk.finish(raw.execute(verify_walk.GOLD_SQL), stored)
    finally:
        raw.execute("COMMIT")


def _checked(raw: sqlite3.Connection, batch: ExportBatch, include_reviews: bool) -> ExportBatch:
    """``batch`` with every label checked against its GOLD_LABEL_FROZEN event and every
    case's content against its CASE_ENQUEUED event; each record carries both events, and
    with ``include_reviews`` its case's reviews, each checked against its REVIEW_SUBMITTED
    event, which it carries too."""
    frozen = ledger_checks.check_gold_labels(raw, [r.revision for r in batch.records])
    case_ids = [r.revision.case_id for r in batch.records]
    enqueued = ledger_checks.check_case_ids(raw, case_ids)
    found = queries.reviews_of_cases(raw, case_ids) if include_reviews else []
    submitted = ledger_checks.check_reviews(raw, found)
    decided = queries.frozen_resolutions(raw, batch.frozen_rounds())
    resolved = ledger_checks.check_resolutions(raw, decided)
    batch.attach_events(frozen, enqueued)
    batch.attach_reviews(found, submitted)
    batch.attach_resolutions(decided, resolved)
    return batch


def blinded_case_row(row: rows.Row) -> dict[str, Any]:
    """The export's case columns as a case row: only what the blinded view shows; the rest
    is filler (never digested: decoded with check=False)."""
    return {
        "case_id": row["present"],
        "tenant": "",
        "subject": row["subject"],
        "predicate": row["predicate"],
        "candidate_values": row["candidate_values"],
        "evidence_refs": row["evidence_refs"],
        "context": row["context"],
        "local_verdict": "null",
        "lineage_origin": "",
        "lineage_ref": "",
        "create_time": 0,
        "expire_time": 0,
        "content_digest": "",
        "digest_version": cases.DIGEST_V2,
        "required_reviews": 2,
        "claims": row["claims"],
        "spot_check_rate": row["spot_check_rate"],
    }


def _export_batch(chunk: list[Any]) -> ExportBatch:
    batch = ExportBatch([], [])
    for row in chunk:
        revision = rows.gold_label(row)
        if row["present"] is None:
            batch.exclusions.append(ExportExclusion(revision.case_id, revision.revision))
            continue
        case = rows.case(blinded_case_row(row), check=False)
        batch.records.append(exported_record(case, revision))
    return batch
