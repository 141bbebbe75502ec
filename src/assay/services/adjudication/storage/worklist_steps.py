"""An adjudicator's worklist page, as the steps both engines run: the rule stated once.

One page is read in one read snapshot: the candidate cases (``predicates.worklist_page``),
then every row that decided whether a case of the page's range is in it, checked against
its ledger event, as the reviewer's queue does: the adjudicator's own reviews and the
resolutions of the current rounds (a forged one must not hide a case), and every review of
a round that is unresolved with two or more reviews (an edited label must neither hide a
disagreement nor invent one). The returned cases' reviews are among the latter, so they are
read once.

``page`` is a generator of steps (no I/O of its own): it yields a ``Read`` and is sent
its rows, or a ``Check`` and is sent none, and returns the snapshots. SQLite
(``storage.sqlite.worklist``) runs the steps synchronously, PostgreSQL
(``storage.postgres.worklist``) by awaiting each; each engine holds its own statements.
"""

from __future__ import annotations

import enum
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from assay.services.adjudication.domain.model import CaseSnapshot, TenantScope
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import ledger_rules, rows
from assay.services.adjudication.storage.ledger_rules import Rule
from assay.services.adjudication.storage.predicates import snapshots

T = TypeVar("T")


class Statement(enum.Enum):
    """Which of the worklist's statements a ``Read`` runs, in the engine's dialect:
    ``predicates.worklist_page`` (parameters now, after, tenants, adjudicator, limit),
    ``predicates.deciding_reviews`` (now, after, upto, tenants, adjudicator) and
    ``predicates.deciding_resolutions`` (now, after, upto, tenants)."""

    PAGE = "page"
    DECIDING_REVIEWS = "reviews"
    DECIDING_RESOLUTIONS = "resolutions"


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


Step = Read | Check[Any]
Steps = Generator[Step, Sequence[rows.Row], list[CaseSnapshot]]


def page(adjudicator_id: str, scope: TenantScope, after: str, limit: int, at: datetime) -> Steps:
    """Up to ``limit`` candidate cases after ``after``, each with its current round's
    reviews, every deciding row checked."""
    params: dict[str, str | int | None] = {"now": to_micros(at), "after": after}
    found = yield Read(
        Statement.PAGE, {**params, "adjudicator": adjudicator_id, "limit": limit}, scope
    )
    candidates = [(rows.case(r), int(r["current_round"])) for r in found]
    yield Check(ledger_rules.CASES, [case for case, _ in candidates])
    # The range the page covers: to its last case when full, else to the end.
    ranged = {**params, "upto": candidates[-1][0].case_id if len(found) == limit else None}
    deciding = yield Read(
        Statement.DECIDING_REVIEWS, {**ranged, "adjudicator": adjudicator_id}, scope
    )
    reviews = [rows.review(r) for r in deciding]
    resolved = yield Read(Statement.DECIDING_RESOLUTIONS, ranged, scope)
    yield Check(ledger_rules.REVIEWS, reviews)
    yield Check(ledger_rules.RESOLUTIONS, [rows.resolution(r) for r in resolved])
    return snapshots(candidates, reviews)
