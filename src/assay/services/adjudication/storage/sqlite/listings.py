"""ListCases' and filtered ListAuditEvents' reads on SQLite (statements: ``listing_sql``).

Each runs inside the store's read transaction. ``case_ids`` finds a page's cases, which
``store_reads`` then reads the way GetCaseState reads one, so a tampered case, review,
resolution or gold label is DATA_LOSS there as it is for GetCaseState; the events of an
audit page are re-hashed and linked like every other page of them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from assay.services.adjudication.domain.audit_filters import AuditScan, AuditWhere
from assay.services.adjudication.domain.case_listing import CaseWhere
from assay.services.adjudication.domain.model import TenantScope
from assay.services.adjudication.storage import listing_sql, rows
from assay.services.adjudication.storage.sqlite import ledger_checks


def _texts(values: Sequence[str]) -> str:
    return json.dumps(list(values))


DIALECT = listing_sql.Dialect(
    marker=lambda name, _: f":{name}",
    one_of=lambda column, marker: f"{column} IN (SELECT value FROM json_each({marker}))",
    texts=_texts,
    payload=lambda key: f"json_extract(payload, '$.{key}')",
)


def case_ids(
    db: sqlite3.Connection,
    scope: TenantScope,
    where: CaseWhere,
    after: tuple[str, int] | None,
    limit: int,
) -> list[str]:
    """The ids of up to ``limit`` cases after ``after`` that ``where`` keeps (each then read
    and checked as GetCaseState reads it: ``store_reads``)."""
    sql, params = listing_sql.case_page(where, after, limit, scope, DIALECT)
    return [str(row["case_id"]) for row in db.execute(sql, params.values).fetchall()]


def audit_page(
    db: sqlite3.Connection,
    scope: TenantScope,
    where: AuditWhere,
    after: int,
    scan: int,
    limit: int,
) -> AuditScan:
    """The matching events of a window of ``scan`` events after ``after``, checked."""
    sql, params = listing_sql.audit_matches(where, after, scan, limit, scope, DIALECT)
    events = [rows.audit_event(r) for r in db.execute(sql, params.values)]
    ledger_checks.check_events(db, events)
    sql, params = listing_sql.audit_extent(where, after, scan, scope, DIALECT)
    extent = db.execute(sql, params.values).fetchone()
    return AuditScan(events, int(extent["examined"]), int(extent["reached"] or 0))
