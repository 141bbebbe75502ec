"""The write side: one long-lived writer connection, group commit, and the per-job API.

Every mutation is a *job* — an async function of a ``WriteTx`` that reads,
checks the domain rules, and writes (the row, its audit event and the
idempotency record). A single writer task takes jobs from a queue and runs all
that are waiting inside one ``BEGIN IMMEDIATE`` transaction, then commits once:
with ``synchronous=FULL`` the fsync — the cost of durability — is shared by
every job in the batch (group commit). No job's caller is answered before
that commit returns, so an acknowledged write is on disk.

Jobs check their rules before writing, so a refused job leaves nothing
behind and the batch goes on. If a job fails *after* writing (a constraint
the code did not foresee), the whole batch is rolled back and every job is
re-run alone in its own transaction, so one bad job can never take a
partial write of itself, or anyone else's, into a commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiosqlite

from assay.errors import AlreadyExists, Reason
from assay.services.adjudication import ledger
from assay.services.adjudication.canonical import now, to_micros
from assay.services.adjudication.model import (
    AuditEvent,
    AuditEventType,
    Case,
    CaseSnapshot,
    ChainHead,
    DeletedCounts,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
)
from assay.services.adjudication.storage import queries, rows

T = TypeVar("T")
Job = Callable[["WriteTx"], Awaitable[Any]]
MAX_BATCH = 256


@dataclass(frozen=True)
class StoredResponse:
    method: str
    request_digest: str
    response: bytes


class WriteTx:
    """What a job may do inside the writer's transaction."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self._db = writer.db
        self.wrote = False

    async def _write(self, sql: str, params: Iterable[Any]) -> None:
        await self._db.execute(sql, tuple(params))
        self.wrote = True

    async def recall(self, request_id: str) -> StoredResponse | None:
        found = await self._db.execute_fetchall(
            "SELECT method, request_digest, response FROM idempotency WHERE request_id = ?",
            (request_id,),
        )
        for method, digest, response in found:
            return StoredResponse(method, digest, bytes(response))
        return None

    async def remember(
        self, request_id: str, stored: StoredResponse, tenant: str, case_id: str
    ) -> None:
        await self._write(
            "INSERT INTO idempotency VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                request_id,
                stored.method,
                stored.request_digest,
                stored.response,
                tenant,
                case_id,
                to_micros(now()),
            ),
        )

    async def reviewer(self, reviewer_id: str) -> Reviewer | None:
        return await queries.reviewer(self._db, reviewer_id)

    async def reviewers(self, reviewer_ids: Iterable[str]) -> dict[str, Reviewer]:
        return await queries.reviewers(self._db, reviewer_ids)

    async def snapshot(self, case_id: str) -> CaseSnapshot | None:
        return await queries.snapshot(self._db, case_id)

    async def insert_reviewer(self, value: Reviewer) -> None:
        try:
            await self._write(
                f"INSERT INTO reviewers ({rows.REVIEWER_COLUMNS}) VALUES (?, ?, ?, ?)",
                rows.reviewer_params(value),
            )
        except sqlite3.IntegrityError:
            raise AlreadyExists(
                Reason.REVIEWER_ALREADY_EXISTS, f"reviewer {value.reviewer_id} exists already"
            ) from None

    async def insert_case(self, value: Case) -> None:
        await self._write(
            f"INSERT INTO cases ({rows.CASE_COLUMNS}) VALUES ({', '.join('?' * 13)})",
            rows.case_params(value),
        )

    async def insert_review(self, value: Review) -> None:
        try:
            await self._write(
                f"INSERT INTO reviews ({rows.REVIEW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows.review_params(value),
            )
        except sqlite3.IntegrityError as error:
            if "UNIQUE" not in str(error):
                raise
            raise AlreadyExists(
                Reason.REVIEW_ALREADY_SUBMITTED,
                f"{value.reviewer_id} already reviewed case {value.case_id} in round {value.round}",
            ) from None

    async def insert_resolution(self, value: Resolution) -> None:
        await self._write(
            f"INSERT INTO resolutions ({rows.RESOLUTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows.resolution_params(value),
        )

    async def insert_gold_label(self, value: GoldLabelRevision) -> None:
        try:
            await self._write(
                f"INSERT INTO gold_labels ({rows.GOLD_COLUMNS}) VALUES ({', '.join('?' * 13)})",
                rows.gold_params(value),
            )
        except sqlite3.IntegrityError as error:
            if "UNIQUE" not in str(error) and "PRIMARY KEY" not in str(error):
                raise
            raise AlreadyExists(
                Reason.GOLD_LABEL_REVISION_EXISTS,
                f"gold label {value.case_id} revision {value.revision} exists already",
                metadata={"case_id": value.case_id, "revision": str(value.revision)},
            ) from None

    async def delete_cases(self, where: str, params: tuple[Any, ...]) -> DeletedCounts:
        """Delete the matching cases with their reviews, resolutions and stored responses."""
        ids = [
            row[0]
            for row in await self._db.execute_fetchall(
                f"SELECT case_id FROM cases WHERE {where}", params
            )
        ]
        if not ids:
            return DeletedCounts()
        counts = [0, 0]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for i, table in enumerate(("reviews", "resolutions")):
                found = await self._db.execute_fetchall(
                    f"SELECT COUNT(*) FROM {table} WHERE case_id IN ({marks})", chunk
                )
                counts[i] += int(next(iter(found))[0])
            await self._write(f"DELETE FROM idempotency WHERE case_id IN ({marks})", chunk)
            # Reviews and resolutions go with their case (ON DELETE CASCADE).
            await self._write(f"DELETE FROM cases WHERE case_id IN ({marks})", chunk)
        return DeletedCounts(len(ids), counts[0], counts[1])

    async def delete_tenant_responses(self, tenant: str) -> None:
        await self._write("DELETE FROM idempotency WHERE tenant = ?", (tenant,))

    async def append_event(self, event_type: AuditEventType, payload: dict[str, str]) -> AuditEvent:
        event = ledger.next_event(self._writer.head, event_type, payload, now())
        await self._write(
            f"INSERT INTO audit_events ({rows.AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            rows.audit_params(event),
        )
        self._writer.head = ChainHead(event.sequence, event.hash)
        return event


class Writer:
    """The single writer connection and the task that group-commits jobs."""

    def __init__(self, db: aiosqlite.Connection, head: ChainHead) -> None:
        self.db = db
        self.head = head
        self.lock = asyncio.Lock()
        self._queue: asyncio.Queue[tuple[Job, asyncio.Future[Any]] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.jobs = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="adjudication-writer")

    async def submit(self, job: Callable[[WriteTx], Awaitable[T]]) -> T:
        if self._task is None or self._task.done():
            raise RuntimeError("the adjudication writer is not running")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((job, future))
        result: T = await asyncio.shield(future)
        return result

    async def stop(self) -> None:
        """Finish every queued job, then stop."""
        if self._task is not None:
            self._queue.put_nowait(None)
            await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            batch = [item]
            stopping = False
            while len(batch) < MAX_BATCH and not self._queue.empty():
                more = self._queue.get_nowait()
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            async with self.lock:
                await self._run_batch(batch)
            if stopping:
                return

    async def _reload_head(self) -> None:
        self.head = await queries.chain_head(self.db)

    async def _run_batch(self, batch: list[tuple[Job, asyncio.Future[Any]]]) -> None:
        self.batches += 1
        self.jobs += len(batch)
        await self.db.execute("BEGIN IMMEDIATE")
        settled: list[tuple[asyncio.Future[Any], BaseException | None, Any]] = []
        for job, future in batch:
            tx = WriteTx(self)
            try:
                settled.append((future, None, await job(tx)))
            except Exception as error:
                if tx.wrote:
                    await self._rollback()
                    for single in batch:
                        await self._run_alone(*single)
                    return
                settled.append((future, error, None))
        try:
            await self.db.execute("COMMIT")
        except Exception as error:
            await self._rollback()
            for future, _, _ in settled:
                _settle(future, error, None)
            return
        for future, failure, value in settled:
            _settle(future, failure, value)

    async def _run_alone(self, job: Job, future: asyncio.Future[Any]) -> None:
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            value = await job(WriteTx(self))
            await self.db.execute("COMMIT")
        except Exception as error:
            await self._rollback()
            _settle(future, error, None)
            return
        _settle(future, None, value)

    async def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.OperationalError):
            await self.db.execute("ROLLBACK")
        await self._reload_head()


def _settle(future: asyncio.Future[Any], failure: BaseException | None, value: Any) -> None:
    if future.done():
        return
    if failure is not None:
        future.set_exception(failure)
    else:
        future.set_result(value)
