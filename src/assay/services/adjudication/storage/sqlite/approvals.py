"""Approval reads on SQLite, each inside the caller's read transaction, rows checked
against the ledger (``ledger_checks.check_approvals``) before they are returned; an
export's pages keep the events they were checked against (``exported``)."""

from __future__ import annotations

import sqlite3

from assay.services.adjudication.domain.approvals import ExportedApproval
from assay.services.adjudication.domain.model import TenantScope
from assay.services.adjudication.storage import approval_export, approval_rows, ledger_rules, rows
from assay.services.adjudication.storage.interface import ApprovalRecord
from assay.services.adjudication.storage.sqlite import ledger_checks
from assay.services.adjudication.storage.sqlite.queries import IN_SCOPE, tenants_param


def _with_steps(db: sqlite3.Connection, found: list[sqlite3.Row]) -> list[ApprovalRecord]:
    records = _unchecked(db, found)
    ledger_checks.check_approvals(db, records)
    return records


def _unchecked(db: sqlite3.Connection, found: list[sqlite3.Row]) -> list[ApprovalRecord]:
    approvals = [approval_rows.approval(row) for row in found]
    ids = [a.approval_id for a in approvals]
    steps = []
    for start in range(0, len(ids), ledger_checks.CHUNK):
        chunk = ids[start : start + ledger_checks.CHUNK]
        sql = approval_rows.steps_sql(f"IN ({', '.join('?' * len(chunk))})")
        steps += [approval_rows.step(row) for row in db.execute(sql, chunk)]
    return approval_rows.with_steps(approvals, steps)


def one(db: sqlite3.Connection, approval_id: str) -> ApprovalRecord | None:
    found = db.execute(approval_rows.one_sql("?"), (approval_id,)).fetchall()
    records = _with_steps(db, found)
    return records[0] if records else None


def page(
    db: sqlite3.Connection, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[ApprovalRecord]:
    return _with_steps(db, _page_rows(db, scope, after, limit))


def exported(
    db: sqlite3.Connection, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[ExportedApproval]:
    """A page as ``page`` reads it, each approval with the events that recorded it
    (``approval_export``)."""
    records = _unchecked(db, _page_rows(db, scope, after, limit))
    requested = ledger_checks.check(db, ledger_rules.APPROVALS, [a for a, _ in records])
    steps = [s for _, found in records for s in found]
    stepped = ledger_checks.check(db, ledger_rules.APPROVAL_STEPS, steps)
    wanted = approval_export.following(stepped.values())
    after_events = []
    for start in range(0, len(wanted), ledger_checks.CHUNK):
        chunk = wanted[start : start + ledger_checks.CHUNK]
        sql = (
            f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events "
            f"WHERE sequence IN ({', '.join('?' * len(chunk))})"
        )
        after_events += [rows.audit_event(row) for row in db.execute(sql, chunk)]
    return approval_export.assemble(records, requested, stepped, after_events)


def _page_rows(
    db: sqlite3.Connection, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[sqlite3.Row]:
    in_scope = IN_SCOPE.format(column="tenant")
    params: dict[str, object] = {"tenants": tenants_param(scope), "limit": limit}
    marks = None
    if after is not None:
        marks = (":after_time", ":after_id")
        params["after_id"], params["after_time"] = after
    sql = approval_rows.page_sql(in_scope, ":limit", marks)
    return db.execute(sql, params).fetchall()


def still_open(db: sqlite3.Connection, limit: int) -> list[ApprovalRecord]:
    return _with_steps(db, db.execute(approval_rows.open_sql("?"), (limit,)).fetchall())
