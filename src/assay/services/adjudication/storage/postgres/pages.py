"""A reviewer's queue and an adjudicator's worklist on PostgreSQL.

The same steps, checks and superset rule as SQLite's (``storage.page_steps``: which rows
decide whether a case is listed, and why each is checked against its ledger event), run
here by awaiting each, in PostgreSQL's dialect: ``$n`` parameters, tenant arrays, and the
reviews' ``position`` where SQLite orders by ``rowid``. Run inside one REPEATABLE READ
snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast

from assay.services.adjudication.storage import assignment_rows, predicates, rows
from assay.services.adjudication.storage.page_steps import CheckAssignments, Read, Statement, Steps
from assay.services.adjudication.storage.postgres import assignments, ledger_checks, queries

T = TypeVar("T")

# $1 now, $2 after, $3 tenants, $4 reviewer, $5 limit.
_PAGE = {"now": "$1", "after": "$2", "in_scope": queries.in_scope("c.tenant", 3), "limit": "$5"}
_PAGE_PARAMS = ("now", "after", "tenants", "reviewer", "limit")
# $1 now, $2 after, $3 upto (NULL: to the end), $4 tenants; reviews add $5 reviewer.
_RANGE = predicates.deciding_range(
    now="$1",
    after="$2",
    upto_unset="$3::text IS NULL",
    upto="$3",
    in_scope=queries.in_scope("c.tenant", 4),
)
_RANGE_PARAMS = ("now", "after", "upto", "tenants")
# Each statement and the parameters its $1, $2, ... are.
_STATEMENTS = {
    Statement.QUEUE: (predicates.queue_page(**_PAGE, reviewer="$4"), _PAGE_PARAMS),
    Statement.WORKLIST: (predicates.worklist_page(**_PAGE, adjudicator="$4"), _PAGE_PARAMS),
    Statement.REVIEWER_REVIEWS: (
        predicates.reviewer_reviews(_RANGE, reviewer="$5"),
        (*_RANGE_PARAMS, "reviewer"),
    ),
    Statement.DECIDING_REVIEWS: (
        predicates.deciding_reviews(_RANGE, adjudicator="$5", insertion_order="r.position"),
        (*_RANGE_PARAMS, "reviewer"),
    ),
    Statement.RANGE_RESOLUTIONS: (predicates.deciding_resolutions(_RANGE), _RANGE_PARAMS),
    Statement.QUEUE_ASSIGNED: (
        predicates.queue_page(
            **_PAGE, reviewer="$4", only=assignment_rows.assigned_to("counted.case_id", "$4")
        ),
        _PAGE_PARAMS,
    ),
    # $6: the assigned-only tenants, as a JSON array.
    Statement.QUEUE_OPEN: (
        predicates.queue_page(
            **_PAGE,
            reviewer="$4",
            only=assignment_rows.open_tier(
                "counted.case_id",
                "counted.tenant NOT IN (SELECT jsonb_array_elements_text($6::text::jsonb))",
            ),
        ),
        (*_PAGE_PARAMS, "closed"),
    ),
    Statement.RANGE_ASSIGNMENTS: (assignment_rows.range_sql(_RANGE), _RANGE_PARAMS),
}


async def run(db: queries.Db, steps: Steps[T]) -> T:
    """As ``storage.sqlite.pages.run``: the page ``steps`` return, each step awaited on
    ``db``."""
    step = next(steps)
    while True:
        found: Sequence[rows.Row] = ()
        if isinstance(step, Read):
            statement, order = _STATEMENTS[step.statement]
            params = {**step.params, "tenants": queries.tenants_param(step.scope)}
            found = cast(list[rows.Row], await db.fetch(statement, *(params[n] for n in order)))
        elif isinstance(step, CheckAssignments):
            await assignments.check(db, step.case_ids, step.changes)
        else:
            await ledger_checks.check(db, step.rule, step.values)
        try:
            step = steps.send(found)
        except StopIteration as done:
            page: T = done.value
            return page
