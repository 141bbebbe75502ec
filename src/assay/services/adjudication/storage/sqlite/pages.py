"""A reviewer's queue and an adjudicator's worklist on SQLite: pages of cases, checked.

The steps of a page, and which rows decide whether a case is listed and why each is
checked against its ledger event, are ``storage.page_steps``'; here are SQLite's
statements for them and the run of the steps on one connection, inside one read
transaction.

The worklist's query compares stored label keys, so it keeps a superset of the DISAGREED
rounds (two keys of one value, stored before and after JCS, differ as text);
``permissions.awaits_decision_by`` decides for each case it returns.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TypeVar

from assay.services.adjudication.storage import assignment_rows, predicates, rows
from assay.services.adjudication.storage.page_steps import CheckAssignments, Read, Statement, Steps
from assay.services.adjudication.storage.sqlite import assignments, ledger_checks
from assay.services.adjudication.storage.sqlite.queries import IN_SCOPE, tenants_param

T = TypeVar("T")

_IN_SCOPE = IN_SCOPE.format(column="c.tenant")
_RANGE = predicates.deciding_range(
    now=":now", after=":after", upto_unset=":upto IS NULL", upto=":upto", in_scope=_IN_SCOPE
)
_PAGE = {"now": ":now", "after": ":after", "in_scope": _IN_SCOPE, "limit": ":limit"}
_STATEMENTS = {
    Statement.QUEUE: predicates.queue_page(**_PAGE, reviewer=":reviewer"),
    Statement.WORKLIST: predicates.worklist_page(**_PAGE, adjudicator=":reviewer"),
    Statement.REVIEWER_REVIEWS: predicates.reviewer_reviews(_RANGE, reviewer=":reviewer"),
    Statement.DECIDING_REVIEWS: predicates.deciding_reviews(
        _RANGE, adjudicator=":reviewer", insertion_order="r.position"
    ),
    Statement.RANGE_RESOLUTIONS: predicates.deciding_resolutions(_RANGE),
    Statement.QUEUE_ASSIGNED: predicates.queue_page(
        **_PAGE,
        reviewer=":reviewer",
        only=assignment_rows.assigned_to("counted.case_id", ":reviewer"),
    ),
    Statement.QUEUE_OPEN: predicates.queue_page(
        **_PAGE,
        reviewer=":reviewer",
        only=assignment_rows.open_tier(
            "counted.case_id", "counted.tenant NOT IN (SELECT value FROM json_each(:closed))"
        ),
    ),
    Statement.RANGE_ASSIGNMENTS: assignment_rows.range_sql(_RANGE),
}


def run(db: sqlite3.Connection, steps: Steps[T]) -> T:
    """The page ``steps`` (``page_steps.queue``, ``page_steps.worklist``) return, each read
    and check run on ``db``. Call inside one read transaction."""
    step = next(steps)
    while True:
        found: Sequence[rows.Row] = ()
        if isinstance(step, Read):
            params = {**step.params, "tenants": tenants_param(step.scope)}
            found = db.execute(_STATEMENTS[step.statement], params).fetchall()
        elif isinstance(step, CheckAssignments):
            assignments.check(db, step.case_ids, step.changes)
        else:
            ledger_checks.check(db, step.rule, step.values)
        try:
            step = steps.send(found)
        except StopIteration as done:
            page: T = done.value
            return page
