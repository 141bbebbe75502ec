"""ListCases' and filtered ListAuditEvents' reads on PostgreSQL (statements: ``listing_sql``).

The same reads as SQLite's (``storage.sqlite.listings``), inside the store's
read-only snapshot: a page's case ids (each case then read and checked as GetCaseState
reads it: ``store_reads``), each audit page's events re-hashed and linked.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.services.adjudication.domain.audit_filters import AuditScan, AuditWhere
from assay.services.adjudication.domain.case_listing import CaseWhere
from assay.services.adjudication.domain.model import TenantScope
from assay.services.adjudication.storage import listing_sql, rows
from assay.services.adjudication.storage.postgres import ledger_checks, queries


def _texts(values: Sequence[str]) -> list[str]:
    return list(values)


DIALECT = listing_sql.Dialect(
    marker=lambda _, number: f"${number}",
    one_of=lambda column, marker: f"{column} = ANY({marker}::text[])",
    texts=_texts,
    payload=lambda key: f"(payload ->> '{key}')",
)


async def case_ids(
    db: queries.Db,
    scope: TenantScope,
    where: CaseWhere,
    after: tuple[str, int] | None,
    limit: int,
) -> list[str]:
    """The ids of up to ``limit`` cases after ``after`` that ``where`` keeps (each then read
    and checked as GetCaseState reads it: ``store_reads``)."""
    sql, params = listing_sql.case_page(where, after, limit, scope, DIALECT)
    return [str(row["case_id"]) for row in await db.fetch(sql, *params.positional())]


async def audit_page(
    db: queries.Db,
    scope: TenantScope,
    where: AuditWhere,
    after: int,
    scan: int,
    limit: int,
) -> AuditScan:
    """The matching events of a window of ``scan`` events after ``after``, checked."""
    sql, params = listing_sql.audit_matches(where, after, scan, limit, scope, DIALECT)
    found = await db.fetch(sql, *params.positional())
    events = [rows.audit_event(queries.row(r)) for r in found]
    await ledger_checks.check_events(db, events)
    sql, params = listing_sql.audit_extent(where, after, scan, scope, DIALECT)
    extent = await db.fetchrow(sql, *params.positional())
    examined = int(extent["examined"]) if extent is not None else 0
    reached = int(extent["reached"] or 0) if extent is not None else 0
    return AuditScan(events, examined, reached)
