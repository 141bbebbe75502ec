"""What ListCases asks for and what it answers: the filters checked, and a case's summary.

A case's state is never stored (``state``), so a state filter cannot run in SQL:
storage pages through the cases that match the stored columns (tenant, predicate,
creation time), each with the snapshot GetCaseState derives its state from, and
the listing keeps those whose derived state was asked for. ``CaseQuery`` is the
request as the wire read it; ``check_query`` reports every bad field at once and
gives the ``CaseWhere`` storage filters by.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import datetime

from assay.errors import FieldViolation, Violations
from assay.services.adjudication.domain.cases import MAX_TEXT
from assay.services.adjudication.domain.fields import bounded_text, optional_id, optional_tenant
from assay.services.adjudication.domain.model import CaseSnapshot, CaseState
from assay.services.adjudication.domain.times import to_micros


class CaseOrder(enum.Enum):
    OLDEST_FIRST = "OLDEST_FIRST"
    NEWEST_FIRST = "NEWEST_FIRST"


# States a listing may filter on: every derived state. AWAITING_RESOLUTION is how some
# callers see AGREED or DISAGREED, never a state of its own.
FILTERABLE = frozenset(CaseState) - {CaseState.AWAITING_RESOLUTION}


@dataclass(frozen=True)
class CaseQuery:
    """ListCases' request as read off the wire: a state or order None is one the wire could
    not name (UNSPECIFIED or unknown); ``unreadable``: times no datetime can hold."""

    tenant: str
    states: tuple[CaseState | None, ...]
    predicate: str
    assigned_reviewer_id: str
    create_after: datetime | None
    create_before: datetime | None
    order: CaseOrder | None
    page_size: int
    page_token: str
    unreadable: tuple[FieldViolation, ...] = ()


@dataclass(frozen=True)
class CaseWhere:
    """What storage filters cases by (every field optional), and their order."""

    predicate: str = ""
    assigned_reviewer_id: str = ""
    create_after: datetime | None = None
    create_before: datetime | None = None
    newest_first: bool = False

    def fingerprint(self) -> str:
        """What a page token is bound to besides the states and the tenants."""
        after = to_micros(self.create_after) if self.create_after else None
        before = to_micros(self.create_before) if self.create_before else None
        fields = [self.predicate, self.assigned_reviewer_id, after, before, self.newest_first]
        return json.dumps(fields, separators=(",", ":"))


@dataclass(frozen=True)
class ListedCase:
    """A case as storage lists it: its checked snapshot and its assigned reviewers."""

    snapshot: CaseSnapshot
    assigned_reviewer_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseSummary:
    """One line of a case listing."""

    snapshot: CaseSnapshot
    state: CaseState
    required_reviews: int
    assigned_reviewer_ids: tuple[str, ...]


def check_query(query: CaseQuery, problems: Violations) -> tuple[CaseWhere, frozenset[CaseState]]:
    """The filters and the states asked for (empty: every state), each bad field recorded in
    ``problems`` (the caller adds the page's fields and raises them all at once)."""
    problems.extend(query.unreadable)
    problems.check(optional_tenant, query.tenant, "tenant")
    problems.check(bounded_text, query.predicate, "predicate", MAX_TEXT)
    problems.check(optional_id, query.assigned_reviewer_id, "assigned_reviewer_id")
    states: set[CaseState] = set()
    for index, state in enumerate(query.states):
        if state is None or state not in FILTERABLE:
            problems.add(
                f"states[{index}]",
                "must be a case state other than UNSPECIFIED and AWAITING_RESOLUTION",
            )
        else:
            states.add(state)
    after, before = query.create_after, query.create_before
    if after is not None and before is not None and before <= after:
        problems.add("create_before", "must be after create_after")
    if query.order is None:
        problems.add("order", "must be OLDEST_FIRST, NEWEST_FIRST or unset")
    where = CaseWhere(
        predicate=query.predicate,
        assigned_reviewer_id=query.assigned_reviewer_id,
        create_after=after,
        create_before=before,
        newest_first=query.order is CaseOrder.NEWEST_FIRST,
    )
    return where, frozenset(states)
