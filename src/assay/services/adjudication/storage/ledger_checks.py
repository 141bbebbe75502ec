"""Records checked against their ledger events as they are read.

A row edited in the file — a review's label, a reviewer's kind, a gold label
forged with a recomputed digest — still decodes and may still match its own
digest, but it no longer matches the event written in the same transaction as
the row. So every read that returns records looks their events up in the same
read transaction (one snapshot: a row and its event are committed together)
and fails with DATA_LOSS naming the first record that disagrees or has no event
(``records.record_loss``). Each kind costs one query over the partial index of
its event type (schema V3, V4), however long the ledger is.

The writer's own reads skip this: the freeze checks what it builds on
(``operations._check_recorded``), and SubmitReview's hot path stays one query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from assay.services.adjudication import ledger, records
from assay.services.adjudication.model import (
    AuditEvent,
    AuditEventType,
    Case,
    CaseSnapshot,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
)
from assay.services.adjudication.storage import rows

T = TypeVar("T")

# Ids per query: under SQLite's smallest default limit on bound variables (999).
CHUNK = 500


def recorded_sql(
    event_type: AuditEventType,
    key: str,
    count: int,
    columns: str = "payload",
    by_tenant: bool = True,
) -> str:
    """The events of ``event_type`` whose payload ``key`` is one of ``count`` record ids,
    then (``by_tenant``) the tenant, as bound parameters.

    The event type and key are spelled out (they come from our own enum and code, never from
    a request) so that SQLite uses the partial index of that event type (schema ``_V3``,
    ``_V4``): a bound parameter would hide which index applies, and ``+tenant`` keeps the
    planner off the tenant index, which would scan every event of the tenant."""
    marks = ", ".join("?" * count)
    tenant = " AND +tenant = ?" if by_tenant else ""
    return (
        f"SELECT {columns} FROM audit_events WHERE event_type = '{event_type.value}' "
        f"AND json_extract(payload, '$.{key}') IN ({marks}){tenant}"
    )


def events(
    db: sqlite3.Connection, event_type: AuditEventType, key: str, ids: Iterable[str]
) -> dict[str, AuditEvent]:
    """The first event of ``event_type`` recording each record (by ``records.record_key``)
    whose payload ``key`` is one of ``ids``."""
    wanted = sorted(set(ids))
    found: dict[str, AuditEvent] = {}
    for start in range(0, len(wanted), CHUNK):
        chunk = wanted[start : start + CHUNK]
        sql = recorded_sql(event_type, key, len(chunk), rows.AUDIT_COLUMNS, by_tenant=False)
        keep_first(found, (rows.audit_event(row) for row in db.execute(sql, chunk)))
    return found


def keep_first(found: dict[str, AuditEvent], events: Iterable[AuditEvent]) -> None:
    """Into ``found``, by ``records.record_key``: the first event recording each record
    (shared with the PostgreSQL checks, which only fetch differently)."""
    for event in events:
        named = records.record_key(event.event_type.value, event.payload)
        held = found.get(named[1]) if named is not None else None
        if named is not None and (held is None or event.sequence < held.sequence):
            found[named[1]] = event


def _check(
    db: sqlite3.Connection,
    event_type: AuditEventType,
    key: str,
    values: Sequence[T],
    lookup: Callable[[T], str],
    record_id: Callable[[T], str],
    commitment: Callable[[T], records.Commitment | None],
) -> dict[str, AuditEvent]:
    """DATA_LOSS at the first of ``values`` that disagrees with its event; else the events,
    by record id."""
    if not values:
        return {}
    found = events(db, event_type, key, (lookup(v) for v in values))
    compare(event_type, values, found, record_id, commitment)
    return found


def compare(
    event_type: AuditEventType,
    values: Sequence[T],
    found: dict[str, AuditEvent],
    record_id: Callable[[T], str],
    commitment: Callable[[T], records.Commitment | None],
) -> None:
    """DATA_LOSS at the first of ``values`` that disagrees with its event in ``found``."""
    kind, _ = records.EVENT_KEYS[event_type.value]
    for value in values:
        name = record_id(value)
        event = found.get(name)
        why = records.mismatch(commitment(value), event.payload if event else None)
        if why:
            raise records.record_loss(kind, name, why)


def check_reviewers(db: sqlite3.Connection, values: Sequence[Reviewer]) -> None:
    _check(
        db,
        AuditEventType.REVIEWER_REGISTERED,
        "reviewer_id",
        values,
        lambda r: r.reviewer_id,
        lambda r: r.reviewer_id,
        records.reviewer_commitment,
    )


def check_cases(db: sqlite3.Connection, values: Sequence[Case]) -> None:
    _check(
        db,
        AuditEventType.CASE_ENQUEUED,
        "case_id",
        values,
        lambda c: c.case_id,
        lambda c: c.case_id,
        records.case_commitment,
    )


def check_case_ids(db: sqlite3.Connection, case_ids: Sequence[str]) -> None:
    """Read the cases (their content re-digested) and check them: for reads that return
    only part of a case (an export's blinded case)."""
    found: list[Case] = []
    for start in range(0, len(case_ids), CHUNK):
        chunk = case_ids[start : start + CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT {rows.CASE_COLUMNS} FROM cases WHERE case_id IN ({marks})"
        found.extend(rows.case(row) for row in db.execute(sql, chunk))
    check_cases(db, found)


def check_reviews(db: sqlite3.Connection, values: Sequence[Review]) -> None:
    _check(
        db,
        AuditEventType.REVIEW_SUBMITTED,
        "review_id",
        values,
        lambda r: r.review_id,
        lambda r: r.review_id,
        records.review_commitment,
    )


def check_resolutions(db: sqlite3.Connection, values: Sequence[Resolution]) -> None:
    _check(
        db,
        AuditEventType.CASE_RESOLVED,
        "case_id",
        values,
        lambda r: r.case_id,
        records.resolution_id,
        records.resolution_commitment,
    )


def check_gold_labels(
    db: sqlite3.Connection, values: Sequence[GoldLabelRevision]
) -> dict[str, AuditEvent]:
    """Check the revisions; their GOLD_LABEL_FROZEN events by ``records.gold_id``."""
    return _check(
        db,
        AuditEventType.GOLD_LABEL_FROZEN,
        "case_id",
        values,
        lambda g: g.case_id,
        records.gold_id,
        records.gold_commitment,
    )


def check_events(db: sqlite3.Connection, values: Sequence[AuditEvent]) -> None:
    """DATA_LOSS (metadata ``sequence``) at the first event whose hash is not the hash of
    its content, or whose ``previous_hash`` is not the stored hash of the event before it
    (looked up by sequence: a page of one tenant's events skips the others'): an edited,
    removed, inserted or reordered event is never served as if nothing happened. One
    primary-key query per page."""
    missing = previous_sequences(values)
    stored: dict[int, str] = {}
    for start in range(0, len(missing), CHUNK):
        chunk = missing[start : start + CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT sequence, hash FROM audit_events WHERE sequence IN ({marks})"
        stored.update((int(row["sequence"]), str(row["hash"])) for row in db.execute(sql, chunk))
    check_links(values, stored)


def previous_sequences(values: Sequence[AuditEvent]) -> list[int]:
    """The sequences whose stored hashes ``check_links`` needs beyond ``values`` own."""
    have = {v.sequence for v in values}
    return sorted({v.sequence - 1 for v in values} - {0} - have)


def check_links(values: Sequence[AuditEvent], stored: dict[int, str]) -> None:
    """DATA_LOSS at the first event of ``values`` whose link or hash fails; ``stored``: the
    stored hash by sequence of each event before one of ``values``."""
    stored = {**stored, **{v.sequence: v.hash for v in values}, 0: ledger.EMPTY_HEAD.hash}
    for event in values:
        why = ""
        if event.previous_hash != stored.get(event.sequence - 1):
            why = "its previous_hash is not the stored hash of the event before it"
        elif event.hash != ledger.event_hash(
            event.sequence,
            event.event_type,
            event.occur_time,
            event.payload,
            event.previous_hash,
            event.actor,
        ):
            why = "its content does not match its hash"
        if why:
            raise records.event_loss(event.sequence, why)


def check_snapshot(db: sqlite3.Connection, snap: CaseSnapshot | None) -> None:
    """The case, its current round's reviews and its resolution."""
    if snap is None:
        return
    check_cases(db, [snap.case])
    check_reviews(db, snap.round_reviews)
    check_resolutions(db, [snap.round_resolution] if snap.round_resolution is not None else [])
