"""An adjudicator's worklist on PostgreSQL.

The same steps, checks and superset rule as SQLite's (``storage.worklist_steps``: which
rows decide whether a case is listed, and why each is checked against its ledger event),
run here by awaiting each, in PostgreSQL's dialect: ``$n`` parameters, tenant arrays, and
the reviews' ``position`` where SQLite orders by ``rowid``. Run inside one REPEATABLE READ
snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.storage import predicates, rows, worklist_steps
from assay.services.adjudication.storage.postgres import ledger_checks, queries
from assay.services.adjudication.storage.worklist_steps import Read, Statement, Step

# $1 now, $2 after, $3 upto (NULL: to the end), $4 tenants; reviews add $5 adjudicator.
_RANGE = predicates.deciding_range(
    now="$1",
    after="$2",
    upto_unset="$3::text IS NULL",
    upto="$3",
    in_scope=queries.in_scope("c.tenant", 4),
)
# Each statement and the parameters its $1, $2, ... are.
_STATEMENTS = {
    Statement.PAGE: (
        predicates.worklist_page(
            now="$1",
            after="$2",
            in_scope=queries.in_scope("c.tenant", 3),
            adjudicator="$4",
            limit="$5",
        ),
        ("now", "after", "tenants", "adjudicator", "limit"),
    ),
    Statement.DECIDING_REVIEWS: (
        predicates.deciding_reviews(_RANGE, adjudicator="$5", insertion_order="r.position"),
        ("now", "after", "upto", "tenants", "adjudicator"),
    ),
    Statement.DECIDING_RESOLUTIONS: (
        predicates.deciding_resolutions(_RANGE),
        ("now", "after", "upto", "tenants"),
    ),
}


async def worklist(
    db: queries.Db,
    adjudicator_id: str,
    scope: TenantScope,
    after: str,
    limit: int,
    at: datetime,
) -> list[CaseSnapshot]:
    """As ``storage.sqlite.worklist.worklist``: candidates with their round's reviews, checked."""
    steps = worklist_steps.page(adjudicator_id, scope, after, limit, at)
    step = next(steps)
    while True:
        try:
            step = steps.send(await _run(db, step))
        except StopIteration as done:
            result: list[CaseSnapshot] = done.value
            return result


async def _run(db: queries.Db, step: Step) -> Sequence[rows.Row]:
    """One step of a page: a read's rows, or a check's none."""
    if isinstance(step, Read):
        statement, order = _STATEMENTS[step.statement]
        params = {**step.params, "tenants": queries.tenants_param(step.scope)}
        found = await db.fetch(statement, *(params[name] for name in order))
        return cast(list[rows.Row], found)
    await ledger_checks.check(db, step.rule, step.values)
    return ()
