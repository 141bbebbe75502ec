"""An adjudicator's worklist on SQLite: the disagreed rounds they may decide, checked.

The steps of a page, and which rows decide whether a case is listed and why each is
checked against its ledger event, are ``storage.worklist_steps``'; here are SQLite's
statements for them and the run of the steps on one connection.

The query compares stored label keys, so it keeps a superset of the DISAGREED
rounds (two keys of one value, stored before and after JCS, differ as text);
``permissions.awaits_decision_by`` decides for each case it returns.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.storage import predicates, rows, worklist_steps
from assay.services.adjudication.storage.sqlite import ledger_checks
from assay.services.adjudication.storage.sqlite.queries import IN_SCOPE, tenants_param
from assay.services.adjudication.storage.worklist_steps import Read, Statement, Step

_IN_SCOPE = IN_SCOPE.format(column="c.tenant")
_RANGE = predicates.deciding_range(
    now=":now", after=":after", upto_unset=":upto IS NULL", upto=":upto", in_scope=_IN_SCOPE
)
_STATEMENTS = {
    Statement.PAGE: predicates.worklist_page(
        now=":now", after=":after", in_scope=_IN_SCOPE, adjudicator=":adjudicator", limit=":limit"
    ),
    Statement.DECIDING_REVIEWS: predicates.deciding_reviews(
        _RANGE, adjudicator=":adjudicator", insertion_order="r.rowid"
    ),
    Statement.DECIDING_RESOLUTIONS: predicates.deciding_resolutions(_RANGE),
}


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
    steps = worklist_steps.page(adjudicator_id, scope, after, limit, at)
    step = next(steps)
    while True:
        try:
            step = steps.send(_run(db, step))
        except StopIteration as done:
            result: list[CaseSnapshot] = done.value
            return result


def _run(db: sqlite3.Connection, step: Step) -> Sequence[rows.Row]:
    """One step of a page: a read's rows, or a check's none."""
    if isinstance(step, Read):
        params = {**step.params, "tenants": tenants_param(step.scope)}
        found: list[rows.Row] = db.execute(_STATEMENTS[step.statement], params).fetchall()
        return found
    ledger_checks.check(db, step.rule, step.values)
    return ()
