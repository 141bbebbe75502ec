"""Case assignment rows for both engines: columns, decoding, statements and the ledger rule.

One insert-only table (``ddl.ASSIGNMENTS``): a row per reviewer a change added
(``ADD``) or removed (``REMOVE``), keyed by case, change and reviewer; the rows of one
change are one record (``AssignmentChange``), committed by its CASE_ASSIGNED,
CASE_UNASSIGNED or CASE_REASSIGNED event. A row is never updated, and deleted only once
its case is (tenant deletion, expiry sweep: a trigger refuses it while the case exists).
Who is assigned now is the latest row per (case, reviewer): an ``ADD`` with no later row.
The SQL is written once, each engine passing its parameter markers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from assay.errors import DataLoss, Reason
from assay.services.adjudication.domain import assignment, records
from assay.services.adjudication.domain.assignment import AssignmentChange
from assay.services.adjudication.domain.model import AuditEvent, AuditEventType, RecordKind
from assay.services.adjudication.storage.ledger_rules import Rule
from assay.services.adjudication.storage.predicates import CURRENT_ROUND
from assay.services.adjudication.storage.rows import Row

COLUMNS = "case_id, change, reviewer_id, action, tenant"
WIDTH = COLUMNS.count(",") + 1
EVENT_TYPES = (
    AuditEventType.CASE_ASSIGNED,
    AuditEventType.CASE_UNASSIGNED,
    AuditEventType.CASE_REASSIGNED,
)
RULE: Rule[AssignmentChange] = Rule(
    AuditEventType.CASE_ASSIGNED,
    lambda c: c.case_id,
    assignment.commitment,
    named_by=lambda c: c.change_id,
    also=EVENT_TYPES[1:],
)


def _latest(alias: str, later: str) -> str:
    """No row of the same case and reviewer after row ``alias`` (``later``: a free alias)."""
    return (
        f"NOT EXISTS (SELECT 1 FROM case_assignments {later} "
        f"WHERE {later}.case_id = {alias}.case_id AND {later}.reviewer_id = {alias}.reviewer_id "
        f"AND {later}.change > {alias}.change)"
    )


def assigned_to(case: str, reviewer: str) -> str:
    """SQL: the case (column ``case``) is assigned to ``reviewer`` (a marker) now."""
    return (
        f"EXISTS (SELECT 1 FROM case_assignments a WHERE a.case_id = {case} "
        f"AND a.reviewer_id = {reviewer} AND a.action = 'ADD' AND {_latest('a', 'b')})"
    )


def assigned_to_anyone(case: str) -> str:
    """SQL: the case (column ``case``) is assigned to someone now."""
    return (
        f"EXISTS (SELECT 1 FROM case_assignments a WHERE a.case_id = {case} "
        f"AND a.action = 'ADD' AND {_latest('a', 'b')})"
    )


def of_cases_sql(ids: str) -> str:
    """The rows of the cases ``ids`` selects (the engine's ``IN (...)`` or ``= ANY(...)``
    over ``case_id``), in case, change, reviewer order."""
    return (
        f"SELECT {COLUMNS} FROM case_assignments WHERE case_id {ids} "
        "ORDER BY case_id, change, reviewer_id"
    )


def range_sql(cases: str) -> str:
    """The rows of the cases of ``cases`` (``predicates.deciding_range``: the table ``k``)."""
    return (
        cases + f"SELECT {', '.join('a.' + c for c in COLUMNS.split(', '))} "
        "FROM k JOIN case_assignments a ON a.case_id = k.case_id "
        "ORDER BY a.case_id, a.change, a.reviewer_id"
    )


def open_tier(case: str, open_tenant: str) -> str:
    """SQL: the case (column ``case``) is assigned to nobody, and ``open_tenant`` (the
    engine's test that its tenant is not assigned-only) holds."""
    return f"NOT {assigned_to_anyone(case)} AND {open_tenant}"


# Every row, as VerifyAuditChain walks them (grouped into changes by ``changes``).
ALL_SQL = f"SELECT {COLUMNS} FROM case_assignments ORDER BY case_id, change, reviewer_id"


def open_load_sql(ids: str, now: str) -> str:
    """Each of the reviewers ``ids`` selects with their open assignments: assigned now, the
    case not expired by ``now``, its current round unresolved and without a final review by
    them (a withdrawn one does not count)."""
    return f"""
SELECT a.reviewer_id, COUNT(*) AS open_count
FROM case_assignments a JOIN cases c ON c.case_id = a.case_id
WHERE a.reviewer_id {ids} AND a.action = 'ADD' AND {_latest("a", "b")}
  AND c.expire_time > {now}
  AND NOT EXISTS (SELECT 1 FROM resolutions x
                   WHERE x.case_id = c.case_id AND x.round = {CURRENT_ROUND})
  AND NOT EXISTS (SELECT 1 FROM final_reviews r
                   WHERE r.case_id = c.case_id AND r.round = {CURRENT_ROUND}
                     AND r.reviewer_id = a.reviewer_id)
GROUP BY a.reviewer_id
"""


def params(value: AssignmentChange) -> list[tuple[Any, ...]]:
    """The rows of a change."""
    made = [(value.case_id, value.change, r, "ADD", value.tenant) for r in value.added]
    return made + [(value.case_id, value.change, r, "REMOVE", value.tenant) for r in value.removed]


def changes(found: Iterable[Row]) -> list[AssignmentChange]:
    """The changes the rows hold, grouped by case, change and tenant (a row whose tenant
    was edited stands apart, and disagrees with the event); DATA_LOSS for an unreadable
    one."""
    grouped: dict[tuple[str, int, str], tuple[list[str], list[str]]] = {}
    for row in found:
        try:
            key = (str(row["case_id"]), int(row["change"]), str(row["tenant"]))
            action = str(row["action"])
            if action not in ("ADD", "REMOVE"):
                raise ValueError(f"unknown action {action!r}")
        except (ValueError, TypeError) as error:
            name = f"{row['case_id']}#{row['change']}"
            raise DataLoss(
                Reason.STORED_RECORD_INVALID,
                f"stored case assignment {name} cannot be read ({error})",
                metadata={"record": "case assignment", "key": name},
            ) from None
        added, removed = grouped.setdefault(key, ([], []))
        (added if action == "ADD" else removed).append(str(row["reviewer_id"]))
    return [
        AssignmentChange(case_id, tenant, change, tuple(sorted(a)), tuple(sorted(r)))
        for (case_id, change, tenant), (a, r) in grouped.items()
    ]


def by_case(found: Iterable[AssignmentChange]) -> dict[str, list[AssignmentChange]]:
    """The changes of each case, in ``change`` order."""
    grouped: dict[str, list[AssignmentChange]] = {}
    for value in sorted(found, key=lambda c: (c.case_id, c.change)):
        grouped.setdefault(value.case_id, []).append(value)
    return grouped


def check(found: Sequence[AssignmentChange], events: Iterable[AuditEvent]) -> None:
    """DATA_LOSS unless each change matches the event that recorded it and every change
    recorded for the cases read (``events``: every assignment event of those cases) has
    its rows: a change is deleted only with its case, so a missing one (deleted, or moved
    to another case) is tampering, and the assignment read without it would be wrong."""
    recorded = RULE.match(found, events)
    present = {c.change_id for c in found}
    missing = sorted(set(recorded) - present, key=lambda n: recorded[n].sequence)
    if missing:
        raise records.record_loss(
            RecordKind.CASE_ASSIGNMENT,
            missing[0],
            "its rows are missing (assignment changes go only with their case)",
        )


def check_payloads(
    found: Sequence[AssignmentChange], recorded: Iterable[tuple[str, dict[str, str]]]
) -> None:
    """``check`` for a write job, from (event type, payload) pairs (``WriteTx.recorded``)."""
    events: dict[str, tuple[str, dict[str, str]]] = {}
    for event_type, payload in recorded:
        named = records.record_key(event_type, payload)
        if named is not None:
            events.setdefault(named[1], (event_type, payload))
    for value in found:
        event = events.get(value.change_id)
        committed = records.committed(*event) if event is not None else None
        why = records.mismatch(assignment.commitment(value), committed)
        if why:
            raise records.record_loss(RecordKind.CASE_ASSIGNMENT, value.change_id, why)
    missing = sorted(set(events) - {c.change_id for c in found})
    if missing:
        raise records.record_loss(
            RecordKind.CASE_ASSIGNMENT,
            missing[0],
            "its rows are missing (assignment changes go only with their case)",
        )
