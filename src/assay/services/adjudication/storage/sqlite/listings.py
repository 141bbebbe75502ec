"""ListCases' and filtered ListAuditEvents' reads on SQLite (statements: ``listing_sql``).

Each runs inside the store's read transaction. A listed case is read the way
GetCaseState reads one (``checked``: the store's checked snapshot), so a tampered
case, review, resolution or gold label is DATA_LOSS here as it is there; the
events of an audit page are re-hashed and linked like every other page of them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from assay.services.adjudication.domain.assignment import current
from assay.services.adjudication.domain.audit_filters import AuditScan, AuditWhere
from assay.services.adjudication.domain.case_listing import CaseWhere, ListedCase
from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.storage import listing_sql, rows
from assay.services.adjudication.storage.sqlite import assignments, ledger_checks


def _texts(values: Sequence[str]) -> str:
    return json.dumps(list(values))


DIALECT = listing_sql.Dialect(
    marker=lambda name, _: f":{name}",
    one_of=lambda column, marker: f"{column} IN (SELECT value FROM json_each({marker}))",
    texts=_texts,
    payload=lambda key: f"json_extract(payload, '$.{key}')",
)


def case_page(
    db: sqlite3.Connection,
    scope: TenantScope,
    where: CaseWhere,
    after: tuple[str, int] | None,
    limit: int,
    checked: Callable[[sqlite3.Connection, Sequence[str]], dict[str, CaseSnapshot]],
) -> list[ListedCase]:
    """Up to ``limit`` cases after ``after``, each with its checked snapshot (``checked``
    reads the page's cases together)."""
    sql, params = listing_sql.case_page(where, after, limit, scope, DIALECT)
    ids = [str(row["case_id"]) for row in db.execute(sql, params.values).fetchall()]
    snaps = checked(db, ids)
    found = [ListedCase(snaps[case_id]) for case_id in ids if case_id in snaps]
    # Who each is assigned to, every change checked against its ledger event.
    held = assignments.of_cases(db, [listed.snapshot.case.case_id for listed in found])
    return [ListedCase(c.snapshot, current(held.get(c.snapshot.case.case_id, []))) for c in found]


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
