"""Every table the adjudication corpus has, in an order a copy can insert them in.

Parents before the rows that refer to them (reviewers and cases before reviews, approvals
before their steps); each engine's schema holds exactly these tables at the current
version (PostgreSQL adds its ``schema_version``). A copy reads each table in insertion order
(``rowid``) and, for reviews, carries that order over as PostgreSQL's ``position``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

TABLES: tuple[str, ...] = (
    "reviewers",
    "cases",
    "reviews",
    "resolutions",
    "gold_labels",
    "audit_events",
    "idempotency",
    "approvals",
    "approval_steps",
    "case_assignments",
)
# The column PostgreSQL keeps where SQLite has the ``rowid`` (the order reviews were stored).
ORDER_COLUMNS: dict[str, str] = {"reviews": "position"}


@dataclass(frozen=True)
class TableRows:
    """One table's rows, read in insertion order: ``columns`` name each tuple's values."""

    table: str
    columns: Sequence[str]
    batches: Iterator[list[tuple[Any, ...]]]
