"""Records checked against their ledger events as they are read.

A row edited in the file (a review's label, a reviewer's kind, a gold label forged with a
recomputed digest) still decodes and may match its own digest, but no longer matches the
event written in the same transaction. So every read that returns records looks their
events up in the same read transaction (one snapshot: a row and its event are committed
together) and fails with DATA_LOSS naming the first record that disagrees or has no event
(``records.record_loss``). Each kind costs one query over the partial index of its event
type (schema V3, V4), however long the ledger is. What each kind is compared with is
``ledger_rules``, shared with PostgreSQL; only the fetching is here.

The writer's own reads skip this: the freeze checks what it builds on
(``operations._check_recorded``), and SubmitReview's hot path stays one query besides the
case's assignment, which it reads checked (``assignments``: they decide who may review).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import TypeVar

from assay.services.adjudication.domain import model
from assay.services.adjudication.domain.approvals import Approval, Step
from assay.services.adjudication.storage import ledger_rules, rows
from assay.services.adjudication.storage.ledger_rules import Rule

T = TypeVar("T")

# Ids per query: under SQLite's smallest default limit on bound variables (999).
CHUNK = 500


def recorded_sql(
    event_type: model.AuditEventType,
    key: str,
    count: int,
    columns: str = "payload",
    by_tenant: bool = True,
) -> str:
    """The events of ``event_type`` whose payload ``key`` is one of ``count`` record ids,
    then (``by_tenant``) the tenant, as bound parameters.

    The event type and key are spelled out (they come from our own enum and code, never from
    a request) so that SQLite uses the partial index of that event type (schema ``_V3``,
    ``_V4``): a bound parameter would hide which index applies, and ``+tenant`` keeps the
    planner off the tenant index, which would scan every event of the tenant."""
    marks = ", ".join("?" * count)
    tenant = " AND +tenant = ?" if by_tenant else ""
    return (
        f"SELECT {columns} FROM audit_events WHERE event_type = '{event_type.value}' "
        f"AND json_extract(payload, '$.{key}') IN ({marks}){tenant}"
    )


def events(
    db: sqlite3.Connection, event_type: model.AuditEventType, key: str, ids: Sequence[str]
) -> Iterator[model.AuditEvent]:
    """The events of ``event_type`` whose payload ``key`` is one of ``ids``."""
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        sql = recorded_sql(event_type, key, len(chunk), rows.AUDIT_COLUMNS, by_tenant=False)
        yield from (rows.audit_event(row) for row in db.execute(sql, chunk))


def check(
    db: sqlite3.Connection, rule: Rule[T], values: Sequence[T]
) -> dict[str, model.AuditEvent]:
    """DATA_LOSS at the first of ``values`` that disagrees with its event; else the events,
    by record id."""
    if not values:
        return {}
    ids = rule.ids(values)
    found = [e for event_type in rule.event_types for e in events(db, event_type, rule.key, ids)]
    return rule.match(values, found)


def check_cases(
    db: sqlite3.Connection, values: Sequence[model.Case]
) -> dict[str, model.AuditEvent]:
    """Check the cases; their CASE_ENQUEUED events by case id."""
    return check(db, ledger_rules.CASES, values)


def check_case_ids(db: sqlite3.Connection, case_ids: Sequence[str]) -> dict[str, model.AuditEvent]:
    """Read the cases (their content re-digested) and check them: for reads that return
    only part of a case (an export's blinded case). Their CASE_ENQUEUED events by case id."""
    found: list[model.Case] = []
    for start in range(0, len(case_ids), CHUNK):
        chunk = case_ids[start : start + CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT {rows.CASE_COLUMNS} FROM cases WHERE case_id IN ({marks})"
        found.extend(rows.case(row) for row in db.execute(sql, chunk))
    return check_cases(db, found)


def check_reviews(
    db: sqlite3.Connection, values: Sequence[model.Review]
) -> dict[str, model.AuditEvent]:
    """Check the reviews; their REVIEW_SUBMITTED events by review id."""
    return check(db, ledger_rules.REVIEWS, values)


def check_resolutions(
    db: sqlite3.Connection, values: Sequence[model.Resolution]
) -> dict[str, model.AuditEvent]:
    """Check the resolutions; their CASE_RESOLVED events by ``records.resolution_id``."""
    return check(db, ledger_rules.RESOLUTIONS, values)


def check_gold_labels(
    db: sqlite3.Connection, values: Sequence[model.GoldLabelRevision]
) -> dict[str, model.AuditEvent]:
    """Check the revisions; their GOLD_LABEL_FROZEN events by ``records.gold_id``."""
    return check(db, ledger_rules.GOLD_LABELS, values)


def check_events(db: sqlite3.Connection, values: Sequence[model.AuditEvent]) -> None:
    """``ledger_rules.check_links`` with the stored hashes it needs: one primary-key query
    per page."""
    missing = ledger_rules.previous_sequences(values)
    stored: dict[int, str] = {}
    for start in range(0, len(missing), CHUNK):
        chunk = missing[start : start + CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT sequence, hash FROM audit_events WHERE sequence IN ({marks})"
        stored.update((int(row["sequence"]), str(row["hash"])) for row in db.execute(sql, chunk))
    ledger_rules.check_links(values, stored)


def check_approvals(db: sqlite3.Connection, found: Sequence[tuple[Approval, list[Step]]]) -> None:
    """Each approval and each of its steps against the events that recorded them, and no
    recorded step without its row."""
    check(db, ledger_rules.APPROVALS, [a for a, _ in found])
    rule = ledger_rules.APPROVAL_STEPS
    steps = [s for _, steps in found for s in steps]
    ids = sorted({a.approval_id for a, _ in found})
    recorded = [e for t in rule.event_types for e in events(db, t, rule.key, ids)]
    ledger_rules.check_no_step_missing(rule.match(steps, recorded), steps)
