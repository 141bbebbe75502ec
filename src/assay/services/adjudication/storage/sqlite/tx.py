"""What a writer job may do inside the writer's transaction: the SQLite ``WriteTx``.

Every mutation is a *job* — a plain function of a ``WriteTx`` (the protocol in
``interface``) that reads, checks the domain rules and writes (the row, its audit
event and the retry record). ``writer.Writer`` runs the jobs, group-committed;
a ``WriteTx`` is the job's view of the open transaction plus the writer's
in-memory state (``WriterState``: the audit chain head, the rows remembered).
The writer depends on this module, never the reverse.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assay.services.adjudication.domain import ledger, model
from assay.services.adjudication.domain.approvals import Approval, Step
from assay.services.adjudication.domain.assignment import AssignmentChange
from assay.services.adjudication.domain.times import now, to_micros
from assay.services.adjudication.storage import approval_rows, conflicts, ledger_rules, rows
from assay.services.adjudication.storage.interface import ApprovalRecord, StoredResponse
from assay.services.adjudication.storage.sqlite import assignments, queries
from assay.services.adjudication.storage.sqlite.case_cache import Remembered
from assay.services.adjudication.storage.sqlite.ledger_checks import recorded_sql

__all__ = ["StoredResponse", "WriteTx", "WriterState"]

# The IntegrityError texts that mean a duplicate review or gold-label revision (any other,
# a NOT NULL or CHECK failure say, is raised as it is). A reviewer's insert takes every
# IntegrityError for a duplicate (``_insert`` given no texts).
_UNIQUE = ("UNIQUE",)
_UNIQUE_OR_KEY = ("UNIQUE", "PRIMARY KEY")


@functools.cache
def insert_sql(table: str, columns: str) -> str:
    """The INSERT of one row of ``table``'s ``columns`` (one ``?`` each)."""
    return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(rows.names(columns)))})"


@dataclass
class WriterState:
    """What the single writer keeps between jobs and a job may move on: the chain head and
    the rows it remembers (``case_cache``)."""

    head: model.ChainHead
    memory: Remembered = field(default_factory=Remembered)


class WriteTx:
    """What a job may do inside the writer's transaction (runs on the writer's thread)."""

    def __init__(self, writer: WriterState, db: sqlite3.Connection) -> None:
        self._writer = writer
        self._db = db
        self._at: datetime | None = None
        # Set before the job's first write: a job that fails with it unset left nothing to
        # undo (``writer`` then rolls nothing back).
        self.wrote = False

    def _now(self) -> datetime:
        """One clock reading per job for the rows it stamps (the audit event, the retry record)."""
        if self._at is None:
            self._at = now()
        return self._at

    def recall(self, owner: tuple[str, str], request_id: str) -> StoredResponse | None:
        """The response stored for ``owner``'s (issuer, subject) ``request_id``."""
        found = self._db.execute(
            "SELECT method, request_digest, response FROM idempotency "
            "WHERE caller_issuer = ? AND caller_subject = ? AND request_id = ?",
            (*owner, request_id),
        ).fetchone()
        if found is None:
            return None
        return StoredResponse(found["method"], found["request_digest"], bytes(found["response"]))

    def remember(
        self,
        owner: tuple[str, str],
        request_id: str,
        stored: StoredResponse,
        tenant: str,
        case_id: str,
    ) -> None:
        params = rows.idempotency_params(owner, request_id, stored, tenant, case_id, self._now())
        self._insert("idempotency", rows.IDEMPOTENCY_COLUMNS, params)

    def reviewer(self, reviewer_id: str) -> model.Reviewer | None:
        # Reviewers are never changed or deleted (a trigger refuses it), so one found stays
        # valid: remembered, it saves a query on every review by the same person.
        memory = self._writer.memory
        found = memory.reviewer(reviewer_id)
        if found is None:
            found = queries.reviewer(self._db, reviewer_id)
            if found is not None:
                memory.keep_reviewer(found)
        return found

    def reviewers(self, reviewer_ids: Iterable[str]) -> dict[str, model.Reviewer]:
        return queries.reviewers(self._db, reviewer_ids)

    def recorded(
        self, event_type: model.AuditEventType, key: str, values: Iterable[str], tenant: str
    ) -> list[dict[str, str]]:
        """The payloads of ``tenant``'s ``event_type`` events whose ``key`` field is one of
        ``values``: what the ledger committed to for those records."""
        ids = sorted(set(values))
        if not ids:
            return []
        found = self._db.execute(recorded_sql(event_type, key, len(ids)), (*ids, tenant))
        return [json.loads(row["payload"]) for row in found]

    def review(self, review_id: str) -> model.Review | None:
        return queries.review(self._db, review_id)

    def snapshot(self, case_id: str) -> model.CaseSnapshot | None:
        # Only this writer changes a case's round (reviews, resolutions, gold labels are
        # written through the methods below, which drop the case's remembered round), so the
        # round a job left is current until then: a case's second review reads none of its
        # rows. Case rows are never updated (only deleted, which forgets every case:
        # ``_delete``), so a case read once is remembered too. See ``case_cache``.
        memory = self._writer.memory
        found = memory.snapshot(case_id)
        if found is None:
            found = queries.snapshot(self._db, case_id, memory.case(case_id))
            if found is not None:
                memory.keep_snapshot(found)
        return found

    def remember_snapshot(self, value: model.CaseSnapshot) -> None:
        """The case's round as this job leaves it, after its last write to the case."""
        self.wrote = True  # the writer's memory changes: a failure after this undoes it
        self._writer.memory.keep_snapshot(value)

    def _insert(
        self,
        table: str,
        columns: str,
        params: Sequence[Any],
        refused: Callable[[], Exception] | None = None,
        when: tuple[str, ...] = (),
        case_id: str | None = None,
    ) -> None:
        """Insert one row of ``table``. An IntegrityError whose text has one of ``when`` (none
        given: any IntegrityError) is the conflict ``refused`` builds; any other is raised as
        it is. ``case_id``: the case whose remembered round the row changes (dropped first)."""
        self.wrote = True
        if case_id is not None:
            self._writer.memory.drop_snapshot(case_id)
        try:
            self._db.execute(insert_sql(table, columns), params)
        except sqlite3.IntegrityError as error:
            if refused is None or (when and not any(text in str(error) for text in when)):
                raise
            raise refused() from None

    def insert_reviewer(self, value: model.Reviewer) -> None:
        refused = functools.partial(conflicts.reviewer_exists, value)
        self._insert("reviewers", rows.REVIEWER_COLUMNS, rows.reviewer_params(value), refused)

    def insert_case(self, value: model.Case) -> None:
        self._insert("cases", rows.CASE_COLUMNS, rows.case_params(value))

    def insert_review(self, value: model.Review) -> None:
        refused = functools.partial(conflicts.review_submitted, value)
        params = rows.review_params(value)
        self._insert("reviews", rows.REVIEW_COLUMNS, params, refused, _UNIQUE, value.case_id)

    def insert_resolution(self, value: model.Resolution) -> None:
        params = rows.resolution_params(value)
        self._insert("resolutions", rows.RESOLUTION_COLUMNS, params, case_id=value.case_id)

    def insert_gold_label(self, value: model.GoldLabelRevision) -> None:
        refused = functools.partial(conflicts.gold_revision_exists, value)
        params = rows.gold_params(value)
        self._insert(
            "gold_labels", rows.GOLD_COLUMNS, params, refused, _UNIQUE_OR_KEY, value.case_id
        )

    def bulk_insert(
        self, cases: Iterable[model.Case], gold_labels: Iterable[model.GoldLabelRevision]
    ) -> None:
        """Seed many rows at once (benchmarks, imports), each with the ledger event its
        operation writes (CASE_ENQUEUED, GOLD_LABEL_FROZEN: the same payloads), so reads and
        exports, which check every record against its event, accept them. No retry records."""
        self.wrote = True
        self._writer.memory.forget_cases()
        case_list, gold_list = list(cases), list(gold_labels)
        self._db.executemany(
            insert_sql("cases", rows.CASE_COLUMNS), [rows.case_params(c) for c in case_list]
        )
        self._db.executemany(
            insert_sql("gold_labels", rows.GOLD_COLUMNS), [rows.gold_params(g) for g in gold_list]
        )
        params, head = ledger_rules.seeded_events(
            self._writer.head, case_list, gold_list, self._now()
        )
        self._db.executemany(insert_sql("audit_events", rows.AUDIT_INSERT_COLUMNS), params)
        self._writer.head = head

    def delete_tenant_cases(self, tenant: str) -> model.DeletedCounts:
        """Delete ``tenant``'s cases with their reviews, resolutions and stored responses."""
        self.wrote = True
        return self._delete("tenant = ?", (tenant,))

    def delete_expired(self, at: datetime, scope: model.TenantScope) -> model.DeletedCounts:
        """Delete the cases of ``scope``'s tenants that expired by ``at``, likewise."""
        self.wrote = True
        tenants = queries.tenants_param(scope)
        return self._delete(
            "expire_time <= ? AND (? IS NULL OR tenant IN (SELECT value FROM json_each(?)))",
            (to_micros(at), tenants, tenants),
        )

    def _delete(self, where: str, params: tuple[str | int | None, ...]) -> model.DeletedCounts:
        sql = f"SELECT case_id FROM cases WHERE {where}"
        ids = [row["case_id"] for row in self._db.execute(sql, params)]
        self._writer.memory.forget_cases()
        counts = [0, 0]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for i, table in enumerate(("reviews", "resolutions")):
                sql = f"SELECT COUNT(*) AS n FROM {table} WHERE case_id IN ({marks})"
                counts[i] += int(self._db.execute(sql, chunk).fetchone()["n"])
            self._db.execute(f"DELETE FROM idempotency WHERE case_id IN ({marks})", chunk)
            # Reviews and resolutions go with their case (ON DELETE CASCADE).
            self._db.execute(f"DELETE FROM cases WHERE case_id IN ({marks})", chunk)
            assignments.delete_of_cases(self._db, chunk)  # not counted: no reviewer's work
        return model.DeletedCounts(len(ids), counts[0], counts[1])

    def delete_tenant_responses(self, tenant: str) -> None:
        self.wrote = True
        self._db.execute("DELETE FROM idempotency WHERE tenant = ?", (tenant,))

    def append_event(
        self,
        event_type: model.AuditEventType,
        payload: dict[str, str],
        tenant: str = "",
        actor: model.Actor | None = None,
    ) -> model.AuditEvent:
        """Extend the chain. ``tenant``: the one tenant the event is about ("" when none or
        several: then only principals granted every tenant see it); ``actor``: who did it."""
        self.wrote = True
        event, payload_json = ledger.extend(
            self._writer.head, event_type, payload, self._now(), actor
        )
        params = rows.audit_params(event, payload_json, tenant)
        self._insert("audit_events", rows.AUDIT_INSERT_COLUMNS, params)
        self._writer.head = model.ChainHead(event.sequence, event.hash)
        return event

    # --- approvals -------------------------------------------------------------

    def approval(self, approval_id: str) -> ApprovalRecord | None:
        """The approval and its steps, checked against the ledger: this writer is the only
        one, so what it reads stays current until the job ends."""
        row = self._db.execute(approval_rows.one_sql("?"), (approval_id,)).fetchone()
        if row is None:
            return None
        found = approval_rows.approval(row)
        steps = [
            approval_rows.step(r)
            for r in self._db.execute(approval_rows.steps_sql("IN (?)"), (approval_id,))
        ]
        ledger_rules.check_recorded(self.recorded, found, steps)
        return found, steps

    def insert_approval(self, value: Approval) -> None:
        params = approval_rows.approval_params(value)
        self._insert("approvals", approval_rows.APPROVAL_COLUMNS, params)

    def insert_step(self, value: Step) -> None:
        self._insert("approval_steps", approval_rows.STEP_COLUMNS, approval_rows.step_params(value))

    def notify_approval(self, approval_id: str) -> None:
        """One process holds a SQLite file: its own hub hears of every change."""

    # --- assignments -------------------------------------------------------------

    def assignments(self, case_ids: Sequence[str]) -> dict[str, list[AssignmentChange]]:
        """Each case's assignment changes, checked against the ledger (the writer is the
        only one, so they stay current until the job ends)."""
        return assignments.of_cases(self._db, case_ids)

    def insert_assignment(self, value: AssignmentChange) -> None:
        self.wrote = True
        assignments.insert(self._db, value)

    def open_assignments(self, reviewer_ids: Iterable[str], at: datetime) -> dict[str, int]:
        return assignments.open_load(self._db, reviewer_ids, at)
