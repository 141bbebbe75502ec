"""Who a case is assigned to: the insert-only changes, the distribution rules, the checks.

A case's assignment is never stored as a set: each AssignCases or UnassignCase that
changes a case adds one ``AssignmentChange`` (numbered 1, 2, ... per case, each recorded
by its own CASE_ASSIGNED, CASE_UNASSIGNED or CASE_REASSIGNED event), and the current
reviewers are what the changes leave (``current``). ``distribute`` states the three rules
of ``AssignCases`` once; ``check_may_review`` is what SubmitReview asks of an assignment.
A reviewer never learns who else is assigned: only operators read the sets.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from assay.errors import FailedPrecondition, NotFound, Reason
from assay.services.adjudication.domain.model import AuditEventType, BlindedCase, TenantScope

MAX_CASES = 1000
MAX_REVIEWERS = 100
# A case and who it is assigned to, by id.
Assigned = tuple[str, tuple[str, ...]]


class AssignmentRule(Enum):
    EACH = "EACH"
    ROUND_ROBIN = "ROUND_ROBIN"
    LEAST_LOADED = "LEAST_LOADED"


@dataclass(frozen=True)
class AssignmentChange:
    """One change to a case's assignment: the reviewers it added and removed (by id,
    sorted). Adding only is CASE_ASSIGNED, removing only CASE_UNASSIGNED, both
    CASE_REASSIGNED."""

    case_id: str
    tenant: str
    change: int
    added: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def event_type(self) -> AuditEventType:
        if not self.removed:
            return AuditEventType.CASE_ASSIGNED
        if not self.added:
            return AuditEventType.CASE_UNASSIGNED
        return AuditEventType.CASE_REASSIGNED

    @property
    def change_id(self) -> str:
        """How the ledger names it: "<case id>#<change>"."""
        return f"{self.case_id}#{self.change}"


@dataclass(frozen=True)
class QueueItem:
    """A case of a reviewer's queue, and whether it is assigned to them."""

    case: BlindedCase
    assigned: bool


@dataclass(frozen=True)
class QueueTier:
    """One tier of a reviewer's queue: the cases ``assigned`` to them, else the cases
    assigned to nobody in the ``scope``'s tenants outside ``closed`` (assigned-only)."""

    reviewer_id: str
    scope: TenantScope
    at: datetime
    assigned: bool
    closed: frozenset[str] = frozenset()

    @property
    def closed_param(self) -> str:
        """``closed`` as a JSON array (each engine's statement reads it so)."""
        return json.dumps(sorted(self.closed))


def current(changes: Sequence[AssignmentChange]) -> tuple[str, ...]:
    """The reviewers the changes (in ``change`` order) leave assigned, by id."""
    held: set[str] = set()
    for value in changes:
        held -= set(value.removed)
        held |= set(value.added)
    return tuple(sorted(held))


def payload(value: AssignmentChange) -> dict[str, str]:
    """The change's event payload: ids only, the reviewers comma-separated and sorted;
    ``change`` numbers the case's assignment changes (what a read matches a row by)."""
    found = {"case_id": value.case_id, "tenant": value.tenant, "change": str(value.change)}
    if value.event_type is AuditEventType.CASE_REASSIGNED:
        found["from_reviewer_ids"] = ",".join(value.removed)
        found["to_reviewer_ids"] = ",".join(value.added)
    else:
        found["reviewer_ids"] = ",".join(value.added or value.removed)
    return found


def commitment(value: AssignmentChange) -> dict[str, str]:
    """What its event must hold: the payload, and its type (an unassignment and an
    assignment of the same reviewers carry the same ids; see ``records.committed``)."""
    return {**payload(value), "event_type": value.event_type.value}


def new_change(
    case_id: str,
    tenant: str,
    earlier: Sequence[AssignmentChange],
    added: set[str],
    removed: set[str],
) -> AssignmentChange | None:
    """The next change of a case whose changes so far are ``earlier``, or None when it
    changes nothing (every reviewer added is there already, nobody removed)."""
    held = set(current(earlier))
    added = added - (held - removed)
    if not added and not removed:
        return None
    following = earlier[-1].change + 1 if earlier else 1
    return AssignmentChange(
        case_id, tenant, following, tuple(sorted(added)), tuple(sorted(removed))
    )


def distribute(
    rule: AssignmentRule,
    case_ids: Sequence[str],
    pool: Sequence[str],
    per_case: Mapping[str, int],
    load: Mapping[str, int],
    held: Mapping[str, Sequence[str]],
) -> dict[str, list[str]]:
    """The reviewers each case is to get. EACH: the whole pool. ROUND_ROBIN: the next
    ``per_case[c]`` of the pool in turn, cases in request order. LEAST_LOADED: the
    ``per_case[c]`` with the fewest open assignments (``load``, plus those this call
    makes), ties by id; a reviewer a case has (``held``) already counts no extra."""
    chosen: dict[str, list[str]] = {}
    turn = 0
    counts = {r: load.get(r, 0) for r in pool}
    for case_id in case_ids:
        if rule is AssignmentRule.EACH:
            chosen[case_id] = list(pool)
        elif rule is AssignmentRule.ROUND_ROBIN:
            take = per_case[case_id]
            chosen[case_id] = [pool[(turn + i) % len(pool)] for i in range(take)]
            turn = (turn + take) % len(pool)
        else:
            ranked = sorted(pool, key=lambda r: (counts[r], r))[: per_case[case_id]]
            for reviewer in ranked:
                if reviewer not in held.get(case_id, ()):
                    counts[reviewer] += 1
            chosen[case_id] = ranked
    return chosen


def case_not_found(case_id: str, path: str) -> NotFound:
    """CASE_NOT_FOUND naming the request field (``case_ids[i]``)."""
    return NotFound(
        Reason.CASE_NOT_FOUND,
        f"no case {case_id} ({path})",
        metadata={"case_id": case_id, "field": path},
    )


def check_may_review(assigned: Sequence[str], reviewer_id: str, unassigned_work: bool) -> None:
    """FAILED_PRECONDITION CASE_NOT_ASSIGNED unless the case is assigned to ``reviewer_id``,
    or is assigned to nobody in a tenant that takes unassigned work. It never says to whom."""
    if reviewer_id in assigned:
        return
    if assigned:
        raise FailedPrecondition(
            Reason.CASE_NOT_ASSIGNED, "the case is assigned to other reviewers"
        )
    if not unassigned_work:
        raise FailedPrecondition(
            Reason.CASE_NOT_ASSIGNED, "this tenant takes reviews of assigned cases only"
        )
