"""The PostgreSQL ``WriteTx``: what a writer job may do inside the writer's transaction.

The same methods, arguments and results as ``storage.sqlite.tx.WriteTx``, so the service's
jobs run unchanged on either engine; each method's SQL is one coroutine, awaited by the
writer's task through the ``Bridge``.

Round trips, not Python, are what a write costs here, so rows are not sent as they are
written: they wait in the batch's ``pending`` list and travel inside the next read's
statement as data-modifying WITH clauses, unless one touches what that read reads (those go
first, alone). On a batch's first attempt (``carry``) rows may wait for the next job's read;
a failure then is the batch's, and the writer runs it again with each job's rows sent before
it returns. Cases are not remembered between batches (another replica may change one):
within a batch they are read ahead (``prefetch``), and a job's ``remember_snapshot`` stands
in until it ends; committed reviewers, never changed, are kept (``known``). The transaction
holds the chain lock from its first statement, so what a job reads is what it writes on.
"""

from __future__ import annotations

import json
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

import asyncpg

from assay.services.adjudication.domain import ledger
from assay.services.adjudication.domain.approvals import Approval, Step
from assay.services.adjudication.domain.assignment import AssignmentChange
from assay.services.adjudication.domain.model import (
    Actor,
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
    TenantScope,
)
from assay.services.adjudication.domain.times import now, to_micros
from assay.services.adjudication.storage import (
    approval_rows,
    assignment_rows,
    conflicts,
    ledger_rules,
    rows,
)
from assay.services.adjudication.storage.interface import ApprovalRecord, StoredResponse
from assay.services.adjudication.storage.postgres import assignments, prefetch, queries
from assay.services.adjudication.storage.postgres.greenlet_bridge import Bridge

T = TypeVar("T")
V = TypeVar("V")
# The LISTEN/NOTIFY channel on which replicas tell each other an approval changed.
APPROVALS_CHANNEL = "assay_approvals"


# What a pending row touches, for telling whether a read could miss it: ("case", id),
# ("reviewer", id), ("request", issuer, subject, request id) or ("audit",).
Touch = tuple[str, ...]


@dataclass
class BatchState:
    """What the jobs of one attempt at a batch share: the chain head as the batch has
    extended it, the rows not sent yet, the reviewers committed before it (``known``, the
    writer's) and those it read (``seen``: known once it commits), and the error that
    failed the transaction, if one did (PostgreSQL then refuses every later statement)."""

    head: ChainHead
    known: Mapping[str, Reviewer] = field(default_factory=dict)
    carry: bool = False
    pending: list[PendingInsert] = field(default_factory=list)
    seen: dict[str, Reviewer] = field(default_factory=dict)
    failed: Exception | None = None
    # Request ids and cases read for the whole batch before its jobs ran (``prefetch``),
    # and the keys the batch has written rows under since (those are read through).
    # A case a job left as ``remember_snapshot`` says stands in for its fetched row.
    fetched: dict[Touch, Any] | None = None
    dirty: set[Touch] = field(default_factory=set)
    left: dict[str, CaseSnapshot] = field(default_factory=dict)

    def prefetched(self, key: Touch) -> tuple[bool, Any]:
        """(True, the row fetched under ``key``) if it still stands, else (False, None)."""
        if self.fetched is None or key in self.dirty or key not in self.fetched:
            return False, None
        return True, self.fetched[key]


def marks(count: int, start: int = 1) -> str:
    """``$start, …`` for ``count`` parameters."""
    return ", ".join(f"${i}" for i in range(start, start + count))


def recorded_sql(event_type: AuditEventType, key: str) -> str:
    """``WriteTx.recorded``'s query. The event type and key are spelled out (our own enum and
    code, never a request) so that the planner matches the partial expression index."""
    return (
        f"SELECT payload FROM audit_events WHERE event_type = '{event_type.value}' "
        f"AND payload ->> '{key}' = ANY($1::text[]) AND tenant = $2"
    )


@dataclass(frozen=True)
class PendingInsert:
    """A row a job wrote, not yet sent; ``refused``: the error a duplicate key means."""

    table: str
    columns: str
    params: Sequence[Any]
    touches: Touch
    refused: Callable[[], Exception] | None = None


@dataclass(frozen=True)
class RowKind(Generic[V]):
    """Where a record of one kind is written: its table, columns and values, what its row
    touches, and the refusal a duplicate key means (None: a bug, reported as it is)."""

    table: str
    columns: str
    params: Callable[[V], Sequence[Any]]
    touches: Callable[[V], Touch]
    refused: Callable[[V], Exception] | None = None


def _case(value: Case | Review | Resolution | GoldLabelRevision) -> Touch:
    return ("case", value.case_id)


def _approval(value: Approval | Step) -> Touch:
    return ("approval", value.approval_id)


def _reviewer(value: Reviewer) -> Touch:
    return ("reviewer", value.reviewer_id)


# The record kinds a job inserts one by one (``_insert``); the idempotency, audit and
# assignment rows, whose values a method works out, go through ``_insert_row`` directly.
REVIEWERS = RowKind(
    "reviewers", rows.REVIEWER_COLUMNS, rows.reviewer_params, _reviewer, conflicts.reviewer_exists
)
CASES = RowKind("cases", rows.CASE_COLUMNS, rows.case_params, _case)
REVIEWS = RowKind(
    "reviews", rows.REVIEW_COLUMNS, rows.review_params, _case, conflicts.review_submitted
)
RESOLUTIONS = RowKind("resolutions", rows.RESOLUTION_COLUMNS, rows.resolution_params, _case)
GOLD_LABELS = RowKind(
    "gold_labels", rows.GOLD_COLUMNS, rows.gold_params, _case, conflicts.gold_revision_exists
)
APPROVALS = RowKind(
    "approvals", approval_rows.APPROVAL_COLUMNS, approval_rows.approval_params, _approval
)
STEPS = RowKind("approval_steps", approval_rows.STEP_COLUMNS, approval_rows.step_params, _approval)


def insert_sql(table: str, columns: str, width: int, start: int = 1) -> str:
    return f"INSERT INTO {table} ({columns}) VALUES ({marks(width, start)})"


def _inserts(writes: Sequence[PendingInsert], start: int) -> tuple[list[str], list[Any]]:
    """One INSERT per table, its rows as one VALUES list in the order written: PostgreSQL
    runs a statement's data-modifying WITH clauses in no set order, so two clauses into one
    table could number a round's reviews (``position``) out of order."""
    by_table: dict[tuple[str, str], list[Sequence[Any]]] = {}
    for write in writes:
        by_table.setdefault((write.table, write.columns), []).append(write.params)
    parts: list[str] = []
    params: list[Any] = []
    for (table, columns), table_rows in by_table.items():
        values = []
        for row_params in table_rows:
            values.append(f"({marks(len(row_params), start + len(params))})")
            params.extend(row_params)
        parts.append(f"INSERT INTO {table} ({columns}) VALUES {', '.join(values)}")
    return parts, params


def combined_insert(writes: Sequence[PendingInsert]) -> tuple[str, list[Any]]:
    """One statement inserting every row of ``writes`` (data-modifying WITH clauses), so
    rows cost one round trip together."""
    parts, params = _inserts(writes, 1)
    if len(parts) == 1:
        return parts[0], params
    clauses = ", ".join(f"w{i} AS ({part})" for i, part in enumerate(parts[:-1]))
    return f"WITH {clauses} {parts[-1]}", params


def read_with_inserts(
    read: str, width: int, writes: Sequence[PendingInsert]
) -> tuple[str, list[Any]]:
    """``read`` (a query of ``width`` parameters) as one statement that also inserts
    ``writes``; the read does not see them (it reads the statement's snapshot). The text
    depends only on how many rows go to which table, so a job's statements stay prepared."""
    parts, params = _inserts(writes, width + 1)
    clauses = ", ".join(f"w{i} AS ({part})" for i, part in enumerate(parts))
    return f"WITH {clauses} SELECT * FROM ({read}) AS carried_read", params


# Up to this many rows are sent as one statement (``combined_insert``); more by table.
COMBINED_ROWS = 6
# Each column's type, for casting the arrays of ``_unnest_insert``.
COLUMN_TYPES = (
    "SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute "
    "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped"
)
_COLUMN_TYPES: dict[str, dict[str, str]] = {}

RECALL = (
    "SELECT method, request_digest, response FROM idempotency "
    "WHERE caller_issuer = $1 AND caller_subject = $2 AND request_id = $3"
)


class PostgresWriteTx:
    """What a job may do inside the writer's transaction (runs in the writer's greenlet)."""

    def __init__(self, bridge: Bridge, db: queries.Db, state: BatchState) -> None:
        self._bridge = bridge
        self._db = db
        self._state = state
        self._at: datetime | None = None

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        """``work``'s result, after every pending row: what it reads sees them all. It may
        write more than one key's rows, so what the batch fetched ahead is no longer used."""
        self._state.fetched = None
        return self._bridge.run(self._after_writes(work))

    async def _after_writes(self, work: Coroutine[Any, Any, T]) -> T:
        try:
            await self._send_pending()
        except BaseException:
            work.close()
            raise
        return await self._checked(work, ())

    def _read(self, sql: str, params: Sequence[Any], touches: Collection[Touch]) -> Any:
        """The rows of the read ``sql``, with the pending rows in the same statement unless
        one touches what it reads (then they are sent first, on their own)."""
        if any(write.touches in touches for write in self._state.pending):
            self.flush()
        return self._bridge.run(self._read_carrying(sql, params))

    async def _read_carrying(self, sql: str, params: Sequence[Any]) -> list[asyncpg.Record]:
        writes, self._state.pending = self._state.pending, []
        if not writes:
            return await self._checked(self._db.fetch(sql, *params), ())
        combined, extra = read_with_inserts(sql, len(params), writes)
        return await self._checked(self._db.fetch(combined, *params, *extra), writes)

    def flush(self) -> None:
        """Send every pending row (the writer calls this when a job returns unless rows may
        wait for the next job, so a refused row fails the job as if refused on the spot)."""
        if self._state.pending:
            self._bridge.run(self._send_pending())

    async def _send_pending(self) -> None:
        writes, self._state.pending = self._state.pending, []
        if len(writes) > COMBINED_ROWS:
            await self._checked(self._insert_by_table(writes), writes)
        elif writes:
            sql, params = combined_insert(writes)
            await self._checked(self._db.execute(sql, *params), writes)

    async def _insert_by_table(self, writes: Sequence[PendingInsert]) -> None:
        """Many rows (a batch's, when its reads were fetched ahead) in one statement: one
        data-modifying clause per table, its rows as one array per column (``unnest``) in
        the order written, so the text depends only on the tables and stays prepared. The
        foreign keys are checked at the statement's end, when every clause has run."""
        by_table: dict[tuple[str, str], list[Sequence[Any]]] = {}
        for write in writes:
            by_table.setdefault((write.table, write.columns), []).append(write.params)
        parts: list[str] = []
        params: list[Any] = []
        for table, columns in by_table:
            rows_of = by_table[table, columns]
            parts.append(await self._unnest_insert(table, columns, len(params) + 1))
            params += [list(column) for column in zip(*rows_of, strict=True)]
        clauses = "".join(f"w{i} AS ({part}), " for i, part in enumerate(parts[:-1]))
        sql = f"WITH {clauses[:-2]} {parts[-1]}" if clauses else parts[-1]
        await self._db.execute(sql, *params)

    async def _unnest_insert(self, table: str, columns: str, start: int) -> str:
        """``INSERT … SELECT … FROM unnest(…)`` for ``table``'s ``columns``, each array cast
        to its column's type (read from the catalog once per process: migrations fix them)."""
        if table not in _COLUMN_TYPES:
            found = await self._db.fetch(COLUMN_TYPES, table)
            _COLUMN_TYPES[table] = {row["attname"]: row["type"] for row in found}
        types = _COLUMN_TYPES[table]
        names = rows.names(columns)
        arrays = ", ".join(f"${i}::{types[name]}[]" for i, name in enumerate(names, start))
        listed = ", ".join(names)
        return (
            f"INSERT INTO {table} ({listed}) SELECT {listed} FROM unnest({arrays}) "
            f"WITH ORDINALITY AS batch ({listed}, written) ORDER BY written"
        )

    async def _checked(self, work: Awaitable[T], writes: Sequence[PendingInsert]) -> T:
        """``work``'s result; a database error fails the transaction, so it is kept in the
        batch's state, as the refusal a duplicate key of one of ``writes`` stands for."""
        try:
            return await work
        except asyncpg.PostgresError as error:
            refusal: Exception = error
            if isinstance(error, asyncpg.UniqueViolationError):
                for write in writes:
                    if write.table == error.table_name and write.refused is not None:
                        refusal = write.refused()
                        break
            self._state.failed = refusal
            if refusal is error:
                raise
            raise refusal from None

    def _execute(self, sql: str, *args: Any) -> str:
        return self._run(self._db.execute(sql, *args))

    def _now(self) -> datetime:
        """One clock reading per job for the rows it stamps (the audit event, the retry record)."""
        if self._at is None:
            self._at = now()
        return self._at

    def recall(self, owner: tuple[str, str], request_id: str) -> StoredResponse | None:
        """The response stored for ``owner``'s (issuer, subject) ``request_id``, whichever
        replica stored it (its commit came before this transaction took the chain lock)."""
        touch = ("request", *owner, request_id)
        ahead, record = self._state.prefetched(touch)
        if ahead:
            return prefetch.stored_response(record)
        found = self._read(RECALL, (*owner, request_id), (touch,))
        if not found:
            return None
        found = found[0]
        return StoredResponse(found["method"], found["request_digest"], bytes(found["response"]))

    def remember(
        self,
        owner: tuple[str, str],
        request_id: str,
        stored: StoredResponse,
        tenant: str,
        case_id: str,
    ) -> None:
        # A plain INSERT: under the chain lock ``recall`` saw every committed response, so a
        # conflict here would be a bug, which the primary key reports instead of hiding.
        self._insert_row(
            ("request", *owner, request_id),
            "idempotency",
            rows.IDEMPOTENCY_COLUMNS,
            rows.idempotency_params(owner, request_id, stored, tenant, case_id, self._now()),
        )

    def _known(self, reviewer_id: str) -> Reviewer | None:
        return self._state.known.get(reviewer_id) or self._state.seen.get(reviewer_id)

    def reviewer(self, reviewer_id: str) -> Reviewer | None:
        return self.reviewers([reviewer_id]).get(reviewer_id)

    def reviewers(self, reviewer_ids: Iterable[str]) -> dict[str, Reviewer]:
        """Committed reviewers from memory, the others from the database (then remembered:
        a reviewer, once it exists, never changes)."""
        ids = sorted(set(reviewer_ids))
        found = {i: known for i in ids if (known := self._known(i)) is not None}
        missing = [i for i in ids if i not in found]
        if len(missing) == 1:
            read = self._read(queries.REVIEWER, missing, [("reviewer", missing[0])])
        elif missing:
            read = self._read(queries.REVIEWERS, [missing], [("reviewer", i) for i in missing])
        else:
            read = []
        for record in read:
            value = rows.reviewer(queries.row(record))
            found[value.reviewer_id] = self._state.seen[value.reviewer_id] = value
        return found

    def recorded(
        self, event_type: AuditEventType, key: str, values: Iterable[str], tenant: str
    ) -> list[dict[str, str]]:
        """The payloads of ``tenant``'s ``event_type`` events whose ``key`` field is one of
        ``values``: what the ledger committed to for those records."""
        ids = sorted(set(values))
        if not ids:
            return []
        found = self._run(self._db.fetch(recorded_sql(event_type, key), ids, tenant))
        return [json.loads(row["payload"]) for row in found]

    def review(self, review_id: str) -> Review | None:
        # Sent first: a review an earlier job of the batch wrote is then visible to the read.
        self.flush()
        found = self._read(queries.REVIEW, (review_id,), ())
        return rows.review(queries.row(found[0])) if found else None

    def snapshot(self, case_id: str) -> CaseSnapshot | None:
        state = self._state
        if state.fetched is not None and ("case", case_id) not in state.dirty:
            if case_id in state.left:
                return state.left[case_id]
            if ("case", case_id) in state.fetched:
                return queries.snapshot_of(state.fetched["case", case_id])
        found = self._read(queries.SNAPSHOT, (case_id,), [("case", case_id)])
        return queries.snapshot_of(found[0] if found else None)

    def remember_snapshot(self, value: CaseSnapshot) -> None:
        """The case's round as this job leaves it, after its last write to the case: while
        the batch reads from what it fetched ahead, later jobs read this instead of reading
        the case again. Nothing outlives the batch: another replica may change the case
        once this batch's transaction ends (and with it the chain lock)."""
        if self._state.fetched is not None:
            self._state.left[value.case.case_id] = value
            self._state.dirty.discard(("case", value.case.case_id))

    def _insert_row(
        self,
        touches: Touch,
        table: str,
        columns: str,
        params: Sequence[Any],
        refused: Callable[[], Exception] | None = None,
    ) -> None:
        """Queue a row: it is sent with a later read, or when the job or the batch ends."""
        self._state.dirty.add(touches)
        self._state.pending.append(PendingInsert(table, columns, params, touches, refused))

    def _insert(self, kind: RowKind[V], value: V) -> None:
        """Queue ``value``'s row (``_insert_row``) as ``kind`` says."""
        refused = kind.refused
        self._insert_row(
            kind.touches(value),
            kind.table,
            kind.columns,
            kind.params(value),
            None if refused is None else lambda: refused(value),
        )

    def insert_reviewer(self, value: Reviewer) -> None:
        self._insert(REVIEWERS, value)

    def insert_case(self, value: Case) -> None:
        queries.written_case(value)
        self._insert(CASES, value)

    def insert_review(self, value: Review) -> None:
        self._insert(REVIEWS, value)

    def insert_resolution(self, value: Resolution) -> None:
        self._insert(RESOLUTIONS, value)

    def insert_gold_label(self, value: GoldLabelRevision) -> None:
        self._insert(GOLD_LABELS, value)

    def bulk_insert(self, cases: Iterable[Case], gold_labels: Iterable[GoldLabelRevision]) -> None:
        """Seed many rows at once (benchmarks, imports), each with the ledger event its
        operation writes (CASE_ENQUEUED, GOLD_LABEL_FROZEN: the same payloads), as on SQLite,
        so reads and exports, which check records against their events, accept them."""
        case_list, gold_list = list(cases), list(gold_labels)
        event_rows, head = ledger_rules.seeded_events(
            self._state.head, case_list, gold_list, self._now()
        )
        tables = (
            ("cases", rows.CASE_COLUMNS, [rows.case_params(c) for c in case_list]),
            ("gold_labels", rows.GOLD_COLUMNS, [rows.gold_params(g) for g in gold_list]),
            ("audit_events", rows.AUDIT_INSERT_COLUMNS, event_rows),
        )

        async def work() -> None:
            for table, columns, params in tables:
                if params:
                    await self._db.executemany(insert_sql(table, columns, len(params[0])), params)

        self._run(work())
        self._state.head = head

    def delete_tenant_cases(self, tenant: str) -> DeletedCounts:
        """Delete ``tenant``'s cases with their reviews, resolutions and stored responses."""
        return self._run(self._delete("tenant = $1", (tenant,)))

    async def _delete(self, where: str, params: Sequence[Any]) -> DeletedCounts:
        found = await self._db.fetch(f"SELECT case_id FROM cases WHERE {where}", *params)
        ids = [row["case_id"] for row in found]
        if not ids:
            return DeletedCounts(0, 0, 0)
        reviews = await self._db.fetchval(
            "SELECT COUNT(*) FROM reviews WHERE case_id = ANY($1::text[])", ids
        )
        resolutions = await self._db.fetchval(
            "SELECT COUNT(*) FROM resolutions WHERE case_id = ANY($1::text[])", ids
        )
        await self._db.execute("DELETE FROM idempotency WHERE case_id = ANY($1::text[])", ids)
        # Reviews and resolutions go with their case (ON DELETE CASCADE).
        await self._db.execute("DELETE FROM cases WHERE case_id = ANY($1::text[])", ids)
        # Assignment rows after it (a trigger refuses it before); not counted.
        await self._db.execute("DELETE FROM case_assignments WHERE case_id = ANY($1::text[])", ids)
        return DeletedCounts(len(ids), int(reviews), int(resolutions))

    def delete_expired(self, at: datetime, scope: TenantScope) -> DeletedCounts:
        """Delete the cases of ``scope``'s tenants that expired by ``at``."""
        where = f"expire_time <= $1 AND {queries.in_scope('tenant', 2)}"
        return self._run(self._delete(where, (to_micros(at), queries.tenants_param(scope))))

    def delete_tenant_responses(self, tenant: str) -> None:
        self._execute("DELETE FROM idempotency WHERE tenant = $1", tenant)

    def append_event(
        self,
        event_type: AuditEventType,
        payload: dict[str, str],
        tenant: str = "",
        actor: Actor | None = None,
    ) -> AuditEvent:
        """Extend the chain from the head read under the chain lock (see ``writer``)."""
        event, payload_json = ledger.extend(
            self._state.head, event_type, payload, self._now(), actor
        )
        self._insert_row(
            ("audit",),
            "audit_events",
            rows.AUDIT_INSERT_COLUMNS,
            rows.audit_params(event, payload_json, tenant),
        )
        self._state.head = ChainHead(event.sequence, event.hash)
        return event

    # --- approvals -------------------------------------------------------------

    def approval(self, approval_id: str) -> ApprovalRecord | None:
        """The approval and its steps, checked against the ledger. The transaction holds the
        chain lock, so no other replica changes the approval until it commits."""
        touch = ("approval", approval_id)
        found = self._read(approval_rows.one_sql("$1"), (approval_id,), [touch])
        if not found:
            return None
        value = approval_rows.approval(queries.row(found[0]))
        read = self._read(approval_rows.steps_sql("= ANY($1::text[])"), ([approval_id],), [touch])
        steps = [approval_rows.step(queries.row(r)) for r in read]
        ledger_rules.check_recorded(self.recorded, value, steps)
        return value, steps

    def insert_approval(self, value: Approval) -> None:
        self._insert(APPROVALS, value)

    def insert_step(self, value: Step) -> None:
        self._insert(STEPS, value)

    def notify_approval(self, approval_id: str) -> None:
        """NOTIFY the other replicas; PostgreSQL delivers it when this transaction commits."""
        self._execute("SELECT pg_notify($1, $2)", APPROVALS_CHANNEL, approval_id)

    # --- assignments -------------------------------------------------------------

    def assignments(self, case_ids: Sequence[str]) -> dict[str, list[AssignmentChange]]:
        """Each case's assignment changes, checked against the ledger (under the chain lock:
        no other replica changes them until this transaction ends), in one round trip. An
        assignment event is always written with its rows, which touch the case: pending rows
        of the case are sent first, the rest travel with the read."""
        touches = [("case", c) for c in case_ids]
        return assignments.in_tx(lambda sql, p: self._read(sql, p, touches), case_ids)

    def insert_assignment(self, value: AssignmentChange) -> None:
        for params in assignment_rows.params(value):
            self._insert_row(
                ("case", value.case_id), "case_assignments", assignment_rows.COLUMNS, params
            )

    def open_assignments(self, reviewer_ids: Iterable[str], at: datetime) -> dict[str, int]:
        ids = sorted(set(reviewer_ids))
        found = self._run(self._db.fetch(assignments.LOAD_SQL, ids, to_micros(at)))
        return {str(r["reviewer_id"]): int(r["open_count"]) for r in found}
