"""Approval reads on PostgreSQL, each inside the caller's read snapshot, rows checked
against the ledger (``ledger_checks.check_approvals``) before they are returned (an
export's pages keep the events they were checked against: ``exported``); and the
listener that hears other replicas' approval changes (LISTEN on ``APPROVALS_CHANNEL``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import asyncpg

from assay.runtime.logging import get_logger
from assay.services.adjudication.domain.approvals import ExportedApproval
from assay.services.adjudication.domain.model import TenantScope
from assay.services.adjudication.storage import approval_export, approval_rows, ledger_rules, rows
from assay.services.adjudication.storage.interface import ApprovalRecord
from assay.services.adjudication.storage.postgres import ledger_checks, queries
from assay.services.adjudication.storage.postgres.tx import APPROVALS_CHANNEL

_log = get_logger("assay.adjudication.approvals")


async def _with_steps(db: queries.Db, found: list[asyncpg.Record]) -> list[ApprovalRecord]:
    records = await _unchecked(db, found)
    await ledger_checks.check_approvals(db, records)
    return records


async def _unchecked(db: queries.Db, found: list[asyncpg.Record]) -> list[ApprovalRecord]:
    approvals = [approval_rows.approval(queries.row(r)) for r in found]
    ids = [a.approval_id for a in approvals]
    read = await db.fetch(approval_rows.steps_sql("= ANY($1::text[])"), ids) if ids else []
    steps = [approval_rows.step(queries.row(r)) for r in read]
    return approval_rows.with_steps(approvals, steps)


async def one(db: queries.Db, approval_id: str) -> ApprovalRecord | None:
    records = await _with_steps(db, await db.fetch(approval_rows.one_sql("$1"), approval_id))
    return records[0] if records else None


async def page(
    db: queries.Db, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[ApprovalRecord]:
    return await _with_steps(db, await _page_rows(db, scope, after, limit))


async def exported(
    db: queries.Db, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[ExportedApproval]:
    """A page as ``page`` reads it, each approval with the events that recorded it
    (``approval_export``)."""
    records = await _unchecked(db, await _page_rows(db, scope, after, limit))
    requested = await ledger_checks.check(db, ledger_rules.APPROVALS, [a for a, _ in records])
    steps = [s for _, found in records for s in found]
    stepped = await ledger_checks.check(db, ledger_rules.APPROVAL_STEPS, steps)
    wanted = approval_export.following(stepped.values())
    sql = f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE sequence = ANY($1::bigint[])"
    found = await db.fetch(sql, wanted) if wanted else []
    after_events = [rows.audit_event(queries.row(r)) for r in found]
    return approval_export.assemble(records, requested, stepped, after_events)


async def _page_rows(
    db: queries.Db, scope: TenantScope, after: tuple[str, int] | None, limit: int
) -> list[asyncpg.Record]:
    tenants = None if scope.tenants is None else sorted(scope.tenants)
    if after is None:
        sql = approval_rows.page_sql(queries.in_scope("tenant", 1), "$2")
        found = await db.fetch(sql, tenants, limit)
    else:
        sql = approval_rows.page_sql(queries.in_scope("tenant", 1), "$4", ("$3", "$2"))
        found = await db.fetch(sql, tenants, after[0], after[1], limit)
    return found


async def still_open(db: queries.Db, limit: int) -> list[ApprovalRecord]:
    return await _with_steps(db, await db.fetch(approval_rows.open_sql("$1"), limit))


class Listener:
    """One pooled connection LISTENing for other replicas' approval changes."""

    def __init__(self, pool: asyncpg.Pool, changed: Callable[[str], None]) -> None:
        self.pool = pool
        self.changed = changed
        self._db: Any = None

    def _heard(self, _db: object, _pid: int, _channel: str, approval_id: str) -> None:
        self.changed(approval_id)

    async def start(self) -> None:
        try:
            self._db = await self.pool.acquire()
            await self._db.add_listener(APPROVALS_CHANNEL, self._heard)
        except (asyncpg.PostgresError, OSError) as error:
            # Watchers still hear this replica's own changes and every deadline.
            _log.warning("approval_listener_unavailable", error=type(error).__name__)

    async def close(self) -> None:
        if self._db is None:
            return
        with contextlib.suppress(asyncpg.PostgresError, OSError):
            await self._db.remove_listener(APPROVALS_CHANNEL, self._heard)
        with contextlib.suppress(Exception):
            await self.pool.release(self._db)
        self._db = None
