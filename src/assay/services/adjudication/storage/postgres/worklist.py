"""An adjudicator's worklist on PostgreSQL.

The same page, the same checks and the same superset rule as SQLite's
(``storage.sqlite.worklist``: which rows decide whether a case is listed, and why each
is checked against its ledger event), in PostgreSQL's dialect: ``$n``
parameters, tenant arrays, and the reviews' ``position`` where SQLite orders by
``rowid``. Run inside one REPEATABLE READ snapshot.
"""

from __future__ import annotations

from datetime import datetime

from assay.services.adjudication.domain.canonical import to_micros
from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.storage import rows
from assay.services.adjudication.storage.postgres import ledger_checks, queries
from assay.services.adjudication.storage.predicates import (
    CURRENT_ROUND,
    ROUND_RESOLVED,
    prefixed,
    snapshots,
)

# $1 now, $2 after, $3 tenants, $4 adjudicator, $5 limit.
_WORKLIST = f"""
WITH k AS (
    SELECT {prefixed("c", rows.CASE_COLUMNS)}, {CURRENT_ROUND} AS current_round
    FROM cases c
    WHERE c.expire_time > $1 AND c.case_id > $2 AND {queries.in_scope("c.tenant", 3)}
)
SELECT * FROM k
WHERE NOT {ROUND_RESOLVED}
  AND NOT EXISTS (SELECT 1 FROM reviews r WHERE r.case_id = k.case_id
                     AND r.round = k.current_round AND r.reviewer_id = $4)
  AND EXISTS (SELECT 1 FROM reviews a JOIN reviews b
                ON b.case_id = a.case_id AND b.round = a.round
               WHERE a.case_id = k.case_id AND a.round = k.current_round
                 AND (a.outcome <> b.outcome OR a.label_key <> b.label_key))
ORDER BY case_id
LIMIT $5
"""

# $1 now, $2 after, $3 upto (NULL: to the end), $4 tenants; reviews add $5 adjudicator.
_RANGE = f"""
WITH k AS (
    SELECT c.case_id, {CURRENT_ROUND} AS current_round
    FROM cases c
    WHERE c.expire_time > $1 AND c.case_id > $2 AND ($3::text IS NULL OR c.case_id <= $3)
      AND {queries.in_scope("c.tenant", 4)}
)
"""
_DECIDING_REVIEWS = (
    _RANGE
    + f"""
SELECT {prefixed("r", rows.REVIEW_COLUMNS)}
FROM k JOIN reviews r ON r.case_id = k.case_id AND r.round = k.current_round
WHERE r.reviewer_id = $5
   OR (NOT {ROUND_RESOLVED}
       AND (SELECT COUNT(*) FROM reviews n
             WHERE n.case_id = k.case_id AND n.round = k.current_round) >= 2)
ORDER BY r.case_id, r.position
"""
)
_DECIDING_RESOLUTIONS = (
    _RANGE
    + f"""
SELECT {prefixed("x", rows.RESOLUTION_COLUMNS)}
FROM k JOIN resolutions x ON x.case_id = k.case_id AND x.round = k.current_round
"""
)


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
