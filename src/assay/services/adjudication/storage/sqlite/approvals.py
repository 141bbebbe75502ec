"""Approval reads on SQLite, each inside the caller's read transaction, rows checked
against the ledger (``ledger_checks.check_approvals``) before they are returned."""

from __future__ import annotations

import sqlite3

from assay.services.adjudication.domain.model import TenantScope
from assay.services.adjudication.storage import approval_rows
from assay.services.adjudication.storage.interface import ApprovalRecord
from assay.services.adjudication.storage.sqlite import ledger_checks
from assay.services.adjudication.storage.sqlite.queries import IN_SCOPE, tenants_param


def _with_steps(db: sqlite3.Connection, found: list[sqlite3.Row]) -> list[ApprovalRecord]:
    approvals = [approval_rows.approval(row) for row in found]
    ids = [a.approval_id for a in approvals]
    steps = []
    for start in range(0, len(ids), ledger_checks.CHUNK):
        chunk = ids[start : start + ledger_checks.CHUNK]
        sql = approval_rows.steps_sql(f"IN ({', '.join('?' * len(chunk))})")
        steps += [approval_rows.step(row) for row in db.execute(sql, chunk)]
    records = approval_rows.with_steps(approvals, steps)
    ledger_checks.check_approvals(db, records)
    return records


def one(db: sqlite3.Connection, approval_id: str) -> ApprovalRecord | None:
    found = db.execute(approval_rows.one_sql("?"), (approval_id,)).fetchall()
    records = _with_steps(db, found)
    return records[0] if records else None


def page(
    db: sqlite3.Connection, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[ApprovalRecord]:
    in_scope = IN_SCOPE.format(column="tenant")
    params: dict[str, object] = {"tenants": tenants_param(scope), "limit": limit}
    marks = None
    if after is not None:
        marks = (":after_time", ":after_id")
        params["after_id"], params["after_time"] = after
    sql = approval_rows.page_sql(in_scope, ":limit", marks)
    return _with_steps(db, db.execute(sql, params).fetchall())


def still_open(db: sqlite3.Connection, limit: int) -> list[ApprovalRecord]:
    return _with_steps(db, db.execute(approval_rows.open_sql("?"), (limit,)).fetchall())
