"""A reviewer's queue page and an adjudicator's worklist page, as the steps both engines
run: each rule stated once.

A page is read in one read snapshot: its candidate cases (``predicates.queue_page``,
``predicates.worklist_page``), checked against their ledger events, then every row that
decided whether a case of the page's range is in it, checked the same way: the
reviewer's or adjudicator's own reviews and the resolutions of the current rounds (a
forged one must not hide a case) and, for a worklist, every review of a round that is
unresolved with two or more reviews (an edited label must neither hide a disagreement
nor invent one), which include the worklist's returned reviews, so they are read once.

``queue`` and ``worklist`` are generators of steps (no I/O of their own): each yields a
``Read`` and is sent its rows, or a ``Check`` and is sent none, and returns the page.
SQLite (``storage.sqlite.pages``) runs them synchronously, PostgreSQL
(``storage.postgres.pages``) by awaiting each, with its own statements; both stores
take ``queue`` and ``worklist`` from ``PageReads``.
"""

from __future__ import annotations

import enum
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeAlias, TypeVar

from assay.services.adjudication.domain.assignment import AssignmentChange, QueueTier
from assay.services.adjudication.domain.model import Case, CaseSnapshot, Review, TenantScope
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import assignment_rows, ledger_rules, rows
from assay.services.adjudication.storage.ledger_rules import Rule
from assay.services.adjudication.storage.predicates import snapshots

T = TypeVar("T")


class Statement(enum.Enum):
    """Which statement a ``Read`` runs, in the engine's dialect, and its parameters:

    - ``QUEUE``: ``predicates.queue_page`` (now, after, tenants, reviewer, limit);
    - ``WORKLIST``: ``predicates.worklist_page`` (now, after, tenants, reviewer, limit);
    - ``REVIEWER_REVIEWS``: ``predicates.reviewer_reviews`` of the range (now, after, upto,
      tenants, reviewer);
    - ``DECIDING_REVIEWS``: ``predicates.deciding_reviews`` of the range (the same);
    - ``RANGE_RESOLUTIONS``: ``predicates.deciding_resolutions`` (now, after, upto, tenants).
    """

    QUEUE = "queue"
    WORKLIST = "worklist"
    REVIEWER_REVIEWS = "reviewer_reviews"
    DECIDING_REVIEWS = "deciding_reviews"
    RANGE_RESOLUTIONS = "range_resolutions"
    # ``queue_tiers``: QUEUE of the cases assigned to the reviewer, or of the cases assigned
    # to nobody outside the ``closed`` tenants; the assignment rows of a range.
    QUEUE_ASSIGNED = "queue_assigned"
    QUEUE_OPEN = "queue_open"
    RANGE_ASSIGNMENTS = "range_assignments"


@dataclass(frozen=True)
class Read:
    """Run ``statement`` and send back its rows. ``params`` by name (``upto`` None: to the
    end); the ``tenants`` parameter is ``scope``, spelled by the engine."""

    statement: Statement
    params: dict[str, str | int | None]
    scope: TenantScope


@dataclass(frozen=True)
class Check(Generic[T]):
    """Check ``values`` against their ledger events by ``rule`` (``ledger_checks.check``:
    DATA_LOSS naming the first that disagrees); send back no rows."""

    rule: Rule[T]
    values: Sequence[T]


@dataclass(frozen=True)
class CheckAssignments:
    """Check ``changes`` against their ledger events, and that no change recorded for
    ``case_ids`` is missing (``assignment_rows.check``); send back no rows."""

    case_ids: Sequence[str]
    changes: Sequence[AssignmentChange]


Step = Read | Check[Any] | CheckAssignments
Steps: TypeAlias = Generator[Step, Sequence[rows.Row], T]


def _page(
    statement: Statement,
    excluding: Statement,
    reviewer_id: str,
    scope: TenantScope,
    after: str,
    limit: int,
    at: datetime,
) -> Steps[tuple[list[tuple[Case, int]], list[Review]]]:
    """The candidates of a page (each case with its current round), checked; then the rows
    ``excluding`` reads of the page's range and the range's resolutions, checked. Returns
    the candidates and the reviews ``excluding`` read."""
    params: dict[str, str | int | None] = {"now": to_micros(at), "after": after}
    found = yield Read(statement, {**params, "reviewer": reviewer_id, "limit": limit}, scope)
    candidates = [(rows.case(r), int(r["current_round"])) for r in found]
    yield Check(ledger_rules.CASES, [case for case, _ in candidates])
    # The range the page covers: to its last case when full, else to the end.
    ranged = {**params, "upto": candidates[-1][0].case_id if len(found) == limit else None}
    reviews = [
        rows.review(r) for r in (yield Read(excluding, {**ranged, "reviewer": reviewer_id}, scope))
    ]
    resolved = yield Read(Statement.RANGE_RESOLUTIONS, ranged, scope)
    yield Check(ledger_rules.REVIEWS, reviews)
    yield Check(ledger_rules.RESOLUTIONS, [rows.resolution(r) for r in resolved])
    return candidates, reviews


def queue(
    reviewer_id: str, scope: TenantScope, after: str, limit: int, at: datetime
) -> Steps[list[tuple[Case, int]]]:
    """Up to ``limit`` cases after ``after`` awaiting a first or second review that the
    reviewer has not reviewed, each with its current round; every deciding row checked."""
    candidates, _ = yield from _page(
        Statement.QUEUE, Statement.REVIEWER_REVIEWS, reviewer_id, scope, after, limit, at
    )
    return candidates


def queue_tier(tier: QueueTier, after: str, limit: int) -> Steps[list[tuple[Case, int]]]:
    """``queue`` of one tier: the cases assigned to the reviewer, or those assigned to nobody
    in a tenant outside ``tier.closed``. The assignment rows of the page's range decide too,
    so they are checked, with every change recorded for the range's assigned cases and the
    page's cases present (a deleted row must not move a case into the page)."""
    statement = Statement.QUEUE_ASSIGNED if tier.assigned else Statement.QUEUE_OPEN
    params: dict[str, str | int | None] = {"now": to_micros(tier.at), "after": after}
    found = yield Read(
        statement,
        {**params, "reviewer": tier.reviewer_id, "limit": limit, "closed": tier.closed_param},
        tier.scope,
    )
    candidates = [(rows.case(r), int(r["current_round"])) for r in found]
    yield Check(ledger_rules.CASES, [case for case, _ in candidates])
    ranged = {**params, "upto": candidates[-1][0].case_id if len(found) == limit else None}
    mine = {**ranged, "reviewer": tier.reviewer_id}
    reviews = yield Read(Statement.REVIEWER_REVIEWS, mine, tier.scope)
    resolved = yield Read(Statement.RANGE_RESOLUTIONS, ranged, tier.scope)
    held = yield Read(Statement.RANGE_ASSIGNMENTS, ranged, tier.scope)
    assigned = assignment_rows.changes(held)
    yield Check(ledger_rules.REVIEWS, [rows.review(r) for r in reviews])
    yield Check(ledger_rules.RESOLUTIONS, [rows.resolution(r) for r in resolved])
    case_ids = {c.case_id for c in assigned} | {case.case_id for case, _ in candidates}
    yield CheckAssignments(sorted(case_ids), assigned)
    return candidates


def worklist(
    adjudicator_id: str, scope: TenantScope, after: str, limit: int, at: datetime
) -> Steps[list[CaseSnapshot]]:
    """Up to ``limit`` candidate cases after ``after``, each with its current round's
    reviews, every deciding row checked."""
    candidates, reviews = yield from _page(
        Statement.WORKLIST, Statement.DECIDING_REVIEWS, adjudicator_id, scope, after, limit, at
    )
    return snapshots(candidates, reviews)


class PageReads:
    """A store's queue and worklist reads, the same on both engines: each page's steps run
    by the engine's ``_page`` in one read snapshot."""

    async def _page(self, steps: Steps[T]) -> T:
        raise NotImplementedError

    async def queue(
        self, reviewer_id: str, scope: TenantScope, after: str, limit: int, at: datetime
    ) -> list[tuple[Case, int]]:
        return await self._page(queue(reviewer_id, scope, after, limit, at))

    async def worklist(
        self, adjudicator_id: str, scope: TenantScope, after: str, limit: int, at: datetime
    ) -> list[CaseSnapshot]:
        return await self._page(worklist(adjudicator_id, scope, after, limit, at))

    async def queue_tier(self, tier: QueueTier, after: str, limit: int) -> list[tuple[Case, int]]:
        return await self._page(queue_tier(tier, after, limit))
