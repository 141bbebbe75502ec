"""Case assignments on SQLite: the rows of some cases, checked against the ledger, and the
writer's part (insert a change, count open assignments).

A read looks up every assignment event of the cases it reads (the partial indexes of
schema V8) in the same read transaction as the rows, so a forged, edited, moved or
deleted row is DATA_LOSS (``assignment_rows.check``). The writer reads through the same
function: it is the only writer, so what it reads stays current until its job ends.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime

from assay.services.adjudication.domain.assignment import AssignmentChange
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import assignment_rows
from assay.services.adjudication.storage.sqlite import ledger_checks

Changes = dict[str, list[AssignmentChange]]


def of_cases(db: sqlite3.Connection, case_ids: Sequence[str]) -> Changes:
    """Each of ``case_ids``' changes, in order (a case without any: absent), checked."""
    ids = sorted(set(case_ids))
    found: list[AssignmentChange] = []
    for start in range(0, len(ids), ledger_checks.CHUNK):
        chunk = ids[start : start + ledger_checks.CHUNK]
        sql = assignment_rows.of_cases_sql(f"IN ({', '.join('?' * len(chunk))})")
        found += assignment_rows.changes(db.execute(sql, chunk))
    check(db, ids, found)
    return assignment_rows.by_case(found)


def check(
    db: sqlite3.Connection, case_ids: Sequence[str], found: Sequence[AssignmentChange]
) -> None:
    """``assignment_rows.check`` of ``found`` against every assignment event of
    ``case_ids`` (the cases whose changes ``found`` are)."""
    ids = sorted(set(case_ids))
    events = [
        event
        for event_type in assignment_rows.EVENT_TYPES
        for event in ledger_checks.events(db, event_type, "case_id", ids)
    ]
    assignment_rows.check(found, events)


def insert(db: sqlite3.Connection, value: AssignmentChange) -> None:
    marks = ", ".join("?" * assignment_rows.WIDTH)
    db.executemany(
        f"INSERT INTO case_assignments ({assignment_rows.COLUMNS}) VALUES ({marks})",
        assignment_rows.params(value),
    )


def open_load(db: sqlite3.Connection, reviewer_ids: Iterable[str], at: datetime) -> dict[str, int]:
    """Each reviewer's open assignments (``assignment_rows.open_load_sql``)."""
    ids = sorted(set(reviewer_ids))
    if not ids:
        return {}
    sql = assignment_rows.open_load_sql(f"IN ({', '.join('?' * len(ids))})", "?")
    found = db.execute(sql, (*ids, to_micros(at)))
    return {str(row["reviewer_id"]): int(row["open_count"]) for row in found}


def delete_of_cases(db: sqlite3.Connection, case_ids: Sequence[str]) -> None:
    """Remove the rows of deleted cases (the trigger refuses it while a case exists)."""
    marks = ", ".join("?" * len(case_ids))
    db.execute(f"DELETE FROM case_assignments WHERE case_id IN ({marks})", list(case_ids))
