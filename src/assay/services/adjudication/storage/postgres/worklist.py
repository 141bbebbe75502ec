"""An adjudicator's worklist on PostgreSQL.

The same page, the same checks and the same superset rule as SQLite's
(``storage.sqlite.worklist``: which rows decide whether a case is listed, and why each
is checked against its ledger event), in PostgreSQL's dialect: ``$n``
parameters, tenant arrays, and the reviews' ``position`` where SQLite orders by
``rowid``. Run inside one REPEATABLE READ snapshot.
"""

from __future__ import annotations

from datetime import datetime

from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import predicates, rows
from assay.services.adjudication.storage.postgres import ledger_checks, queries
from assay.services.adjudication.storage.predicates import snapshots

# $1 now, $2 after, $3 tenants, $4 adjudicator, $5 limit.
_WORKLIST = predicates.worklist_page(
    now="$1", after="$2", in_scope=queries.in_scope("c.tenant", 3), adjudicator="$4", limit="$5"
)
# $1 now, $2 after, $3 upto (NULL: to the end), $4 tenants; reviews add $5 adjudicator.
_RANGE = predicates.deciding_range(
    now="$1",
    after="$2",
    upto_unset="$3::text IS NULL",
    upto="$3",
    in_scope=queries.in_scope("c.tenant", 4),
)
_DECIDING_REVIEWS = predicates.deciding_reviews(
    _RANGE, adjudicator="$5", insertion_order="r.position"
)
_DECIDING_RESOLUTIONS = predicates.deciding_resolutions(_RANGE)


async def worklist(
    db: queries.Db,
    adjudicator_id: str,
    scope: TenantScope,
    after: str,
    limit: int,
    at: datetime,
) -> list[CaseSnapshot]:
    """As ``storage.sqlite.worklist.worklist``: candidates with their round's reviews, checked."""
    now, tenants = to_micros(at), queries.tenants_param(scope)
    found = await db.fetch(_WORKLIST, now, after, tenants, adjudicator_id, limit)
    candidates = [(rows.case(queries.row(r)), int(r["current_round"])) for r in found]
    await ledger_checks.check_cases(db, [case for case, _ in candidates])
    upto = candidates[-1][0].case_id if len(found) == limit else None
    deciding = await db.fetch(_DECIDING_REVIEWS, now, after, upto, tenants, adjudicator_id)
    reviews = [rows.review(queries.row(r)) for r in deciding]
    resolved = await db.fetch(_DECIDING_RESOLUTIONS, now, after, upto, tenants)
    await ledger_checks.check_reviews(db, reviews)
    await ledger_checks.check_resolutions(db, [rows.resolution(queries.row(r)) for r in resolved])
    return snapshots(candidates, reviews)
