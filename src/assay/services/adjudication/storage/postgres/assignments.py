"""Case assignments on PostgreSQL: the rows of some cases checked against the ledger (as
SQLite's ``assignments``), read inside the caller's snapshot or the writer's transaction.

The writer's reads go through its ``PostgresWriteTx`` (pending rows sent first); the
statements and the check are the ones both engines share (``assignment_rows``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from assay.services.adjudication.domain.assignment import AssignmentChange
from assay.services.adjudication.storage import assignment_rows, rows
from assay.services.adjudication.storage.postgres import queries

Changes = dict[str, list[AssignmentChange]]
LOAD_SQL = assignment_rows.open_load_sql("= ANY($1::text[])", "$2")


def events_sql() -> str:
    """Every assignment event of the cases in ``$1`` (over the partial indexes of V8)."""
    return " UNION ALL ".join(
        f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE event_type = '{t.value}' "
        "AND payload ->> 'case_id' = ANY($1::text[])"
        for t in assignment_rows.EVENT_TYPES
    )


EVENTS_SQL = events_sql()
_NO_EVENT = (
    "NULL::bigint AS sequence, NULL::text AS event_type, NULL::text AS occur_time, "
    "NULL::jsonb AS payload, NULL::text AS previous_hash, NULL::text AS hash, "
    "NULL::text AS actor_issuer, NULL::text AS actor_subject"
)
_NO_ROW = "NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text"
# The rows and the events of the cases in ``$1`` in one round trip (``part``: which).
BOTH_SQL = (
    f"SELECT 'row' AS part, {assignment_rows.COLUMNS}, {_NO_EVENT} FROM case_assignments "
    "WHERE case_id = ANY($1::text[]) UNION ALL "
    + " UNION ALL ".join(
        f"SELECT 'event', {_NO_ROW}, {rows.AUDIT_COLUMNS} FROM audit_events "
        f"WHERE event_type = '{t.value}' AND payload ->> 'case_id' = ANY($1::text[])"
        for t in assignment_rows.EVENT_TYPES
    )
)


def checked(found_rows: Iterable[Any], found_events: Iterable[Any]) -> Changes:
    """The changes the rows hold, each checked against the events (records)."""
    found = assignment_rows.changes(queries.row(r) for r in found_rows)
    events = [rows.audit_event(queries.row(r)) for r in found_events]
    assignment_rows.check(found, events)
    return assignment_rows.by_case(found)


def _split(found: Iterable[Any]) -> Changes:
    """``checked`` of what ``BOTH_SQL`` returned."""
    listed = list(found)
    return checked(
        (r for r in listed if r["part"] == "row"), (r for r in listed if r["part"] == "event")
    )


async def of_cases(db: queries.Db, case_ids: Sequence[str]) -> Changes:
    """Each of ``case_ids``' changes, in order (a case without any: absent), checked."""
    ids = sorted(set(case_ids))
    return _split(await db.fetch(BOTH_SQL, ids)) if ids else {}


async def check(db: queries.Db, case_ids: Sequence[str], found: Sequence[AssignmentChange]) -> None:
    """``assignment_rows.check`` of ``found`` against every assignment event of
    ``case_ids``."""
    ids = sorted(set(case_ids))
    fetched = await db.fetch(EVENTS_SQL, ids) if ids else []
    assignment_rows.check(found, [rows.audit_event(queries.row(r)) for r in fetched])


def in_tx(read: Callable[[str, Sequence[Any]], Any], case_ids: Sequence[str]) -> Changes:
    """``of_cases`` through a write transaction's ``read`` (sql, params) -> records."""
    ids = sorted(set(case_ids))
    return _split(read(BOTH_SQL, (ids,))) if ids else {}
