"""An adjudicator's worklist on SQLite: the disagreed rounds they may decide, checked.

One page is read in one read transaction: the candidate cases (not expired,
in scope, current round unresolved, not reviewed by the adjudicator, and two
of the round's reviews with different answers), then every row that decided
whether a case of the page's range is in it, checked against its ledger
event, as the reviewer's queue does (``store.queue``): the adjudicator's own
reviews and the resolutions of the current rounds (a forged one must not hide
a case), and every review of a round that is unresolved with two or more
reviews (an edited label must neither hide a disagreement nor invent one). The
returned cases' reviews are among the latter, so they are read once.

The query compares stored label keys, so it keeps a superset of the DISAGREED
rounds (two keys of one value, stored before and after JCS, differ as text);
``permissions.awaits_decision_by`` decides for each case it returns.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import predicates, rows
from assay.services.adjudication.storage.predicates import snapshots
from assay.services.adjudication.storage.sqlite import ledger_checks
from assay.services.adjudication.storage.sqlite.queries import IN_SCOPE, tenants_param

_IN_SCOPE = IN_SCOPE.format(column="c.tenant")
_WORKLIST = predicates.worklist_page(
    now=":now", after=":after", in_scope=_IN_SCOPE, adjudicator=":adjudicator", limit=":limit"
)
_RANGE = predicates.deciding_range(
    now=":now", after=":after", upto_unset=":upto IS NULL", upto=":upto", in_scope=_IN_SCOPE
)
_DECIDING_REVIEWS = predicates.deciding_reviews(
    _RANGE, adjudicator=":adjudicator", insertion_order="r.rowid"
)
_DECIDING_RESOLUTIONS = predicates.deciding_resolutions(_RANGE)


def worklist(
    db: sqlite3.Connection,
    adjudicator_id: str,
    scope: TenantScope,
    after: str,
    limit: int,
    at: datetime,
) -> list[CaseSnapshot]:
    """Up to ``limit`` candidate cases after ``after``, each with its current round's
    reviews, every deciding row checked (DATA_LOSS naming the first that disagrees).
    Call inside one read transaction."""
    params = {"now": to_micros(at), "after": after, "tenants": tenants_param(scope)}
    found = db.execute(
        _WORKLIST, {**params, "adjudicator": adjudicator_id, "limit": limit}
    ).fetchall()
    candidates = [(rows.case(r), int(r["current_round"])) for r in found]
    ledger_checks.check_cases(db, [case for case, _ in candidates])
    # The range the page covers: to its last case when full, else to the end.
    ranged = {**params, "upto": candidates[-1][0].case_id if len(found) == limit else None}
    reviews = [
        rows.review(r)
        for r in db.execute(_DECIDING_REVIEWS, {**ranged, "adjudicator": adjudicator_id})
    ]
    resolutions = [rows.resolution(r) for r in db.execute(_DECIDING_RESOLUTIONS, ranged)]
    ledger_checks.check_reviews(db, reviews)
    ledger_checks.check_resolutions(db, resolutions)
    return snapshots(candidates, reviews)
