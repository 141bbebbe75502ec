"""How a server runs review work: reviews per round, and which tenants review assigned work only.

Read from the auth policy's ``[review]`` table::

    [review]
    required_reviews = 2                  # the default for every case (2 to 10)
    assigned_only_tenants = ["acme"]      # reviewers there see and review assigned cases only

    [review.required_reviews_by_predicate]
    "safety.blocks_release" = 3

A case's own ``required_reviews`` (or its batch's) wins over the predicate's, and the
predicate's over the default. A server without an auth policy uses the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.services.adjudication.domain.state import (
    DEFAULT_REQUIRED_REVIEWS,
    REQUIRED_REVIEWS_RANGE,
    required_reviews_allowed,
)

_KEYS = frozenset({"required_reviews", "required_reviews_by_predicate", "assigned_only_tenants"})


@dataclass(frozen=True)
class ReviewPolicy:
    required_reviews: int = DEFAULT_REQUIRED_REVIEWS
    by_predicate: Mapping[str, int] = field(default_factory=dict)
    assigned_only_tenants: frozenset[str] = frozenset()

    def reviews_for(self, predicate: str) -> int:
        """The reviews per round a case of ``predicate`` takes when it does not say."""
        return self.by_predicate.get(predicate, self.required_reviews)

    def unassigned_work(self, tenant: str) -> bool:
        """Whether ``tenant``'s reviewers may review cases assigned to nobody."""
        return tenant not in self.assigned_only_tenants


def _count(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not required_reviews_allowed(value):
        raise ValueError(f"{where}: expected an integer from {REQUIRED_REVIEWS_RANGE}")
    return value


def parse_review_policy(table: Mapping[str, Any]) -> ReviewPolicy:
    """The ``[review]`` table; ValueError names the key at fault."""
    unknown = set(table) - _KEYS
    if unknown:
        raise ValueError(f"review: unknown keys {sorted(unknown)}")
    default = _count("review.required_reviews", table.get("required_reviews", 2))
    by_table = table.get("required_reviews_by_predicate", {})
    if not isinstance(by_table, dict):
        raise ValueError("review.required_reviews_by_predicate: expected a table")
    by_predicate = {
        str(name): _count(f"review.required_reviews_by_predicate.{name}", count)
        for name, count in by_table.items()
    }
    tenants = table.get("assigned_only_tenants", [])
    if not isinstance(tenants, list) or not all(isinstance(t, str) and t for t in tenants):
        raise ValueError("review.assigned_only_tenants: expected an array of tenant names")
    return ReviewPolicy(default, by_predicate, frozenset(tenants))
