"""The read queries, shared by the writer's transaction and the reader connections.

Each takes an ``aiosqlite.Connection`` and returns domain values (through
``rows``, so corrupt rows become ``DataLoss``). Multi-statement reads are
called inside a transaction by their caller, so they see one snapshot.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Any

import aiosqlite

from assay.services.adjudication import ledger
from assay.services.adjudication.agreement import RatedPair
from assay.services.adjudication.canonical import to_micros
from assay.services.adjudication.model import (
    AuditEvent,
    Case,
    CaseSnapshot,
    ChainHead,
    GoldLabelRevision,
    Outcome,
    Resolution,
    Review,
    Reviewer,
    ReviewerKind,
)
from assay.services.adjudication.storage import rows


async def _all(db: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()) -> list[Any]:
    return list(await db.execute_fetchall(sql, tuple(params)))


async def reviewer(db: aiosqlite.Connection, reviewer_id: str) -> Reviewer | None:
    found = await _all(
        db, f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id = ?", (reviewer_id,)
    )
    return rows.reviewer(found[0]) if found else None


async def reviewers(db: aiosqlite.Connection, reviewer_ids: Iterable[str]) -> dict[str, Reviewer]:
    ids = sorted(set(reviewer_ids))
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    found = await _all(
        db, f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id IN ({marks})", ids
    )
    return {r.reviewer_id: r for r in map(rows.reviewer, found)}


async def list_reviewers(db: aiosqlite.Connection, after: str, limit: int) -> list[Reviewer]:
    found = await _all(
        db,
        f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id > ? "
        "ORDER BY reviewer_id LIMIT ?",
        (after, limit),
    )
    return [rows.reviewer(r) for r in found]


async def snapshot(db: aiosqlite.Connection, case_id: str) -> CaseSnapshot | None:
    """The case, its revision count, and its current round's reviews and resolution."""
    found = await _all(
        db,
        f"SELECT {rows.CASE_COLUMNS}, "
        "(SELECT COUNT(*) FROM gold_labels g WHERE g.case_id = cases.case_id) "
        "FROM cases WHERE case_id = ?",
        (case_id,),
    )
    if not found:
        return None
    case = rows.case(found[0])
    revisions = int(found[0][13])
    current = revisions + 1
    reviews = await _all(
        db,
        f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id = ? AND round = ? ORDER BY rowid",
        (case_id, current),
    )
    resolution = await _all(
        db,
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE case_id = ? AND round = ?",
        (case_id, current),
    )
    return CaseSnapshot(
        case,
        revisions,
        tuple(rows.review(r) for r in reviews),
        rows.resolution(resolution[0]) if resolution else None,
    )


async def case_history(
    db: aiosqlite.Connection, case_id: str
) -> tuple[list[Review], list[Resolution]]:
    reviews = await _all(
        db,
        f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id = ? ORDER BY round, rowid",
        (case_id,),
    )
    resolutions = await _all(
        db,
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE case_id = ? ORDER BY round",
        (case_id,),
    )
    return [rows.review(r) for r in reviews], [rows.resolution(r) for r in resolutions]


_QUEUE = f"""
WITH candidates AS (
    SELECT {rows.CASE_COLUMNS},
           (SELECT COUNT(*) FROM gold_labels g WHERE g.case_id = c.case_id) + 1 AS current_round
    FROM cases c
    WHERE c.expire_time > :now AND c.case_id > :after AND (:tenant = '' OR c.tenant = :tenant)
), counted AS (
    SELECT candidates.*,
           (SELECT COUNT(*) FROM reviews r
             WHERE r.case_id = candidates.case_id AND r.round = current_round) AS review_count
    FROM candidates
)
SELECT * FROM counted
WHERE review_count < 2
  AND (current_round = 1 OR review_count >= 1)
  AND NOT EXISTS (SELECT 1 FROM resolutions x
                   WHERE x.case_id = counted.case_id AND x.round = current_round)
  AND NOT EXISTS (SELECT 1 FROM reviews r
                   WHERE r.case_id = counted.case_id AND r.round = current_round
                     AND r.reviewer_id = :reviewer)
ORDER BY case_id
LIMIT :limit
"""


async def queue(
    db: aiosqlite.Connection, reviewer_id: str, tenant: str, after: str, limit: int, at: datetime
) -> list[tuple[Case, int]]:
    """Cases awaiting a first or second review that this reviewer has not reviewed."""
    found = await db.execute_fetchall(
        _QUEUE,
        {
            "now": to_micros(at),
            "after": after,
            "tenant": tenant,
            "reviewer": reviewer_id,
            "limit": limit,
        },
    )
    return [(rows.case(r), int(r[13])) for r in found]


async def gold_labels(
    db: aiosqlite.Connection, case_id: str, after: tuple[str, int] | None, limit: int
) -> list[GoldLabelRevision]:
    after_case, after_rev = after if after else ("", 0)
    found = await _all(
        db,
        f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels "
        "WHERE (? = '' OR case_id = ?) AND (case_id > ? OR (case_id = ? AND revision > ?)) "
        "ORDER BY case_id, revision LIMIT ?",
        (case_id, case_id, after_case, after_case, after_rev, limit),
    )
    return [rows.gold_label(r) for r in found]


async def chain_head(db: aiosqlite.Connection) -> ChainHead:
    found = await _all(db, "SELECT sequence, hash FROM audit_events ORDER BY sequence DESC LIMIT 1")
    return ChainHead(int(found[0][0]), str(found[0][1])) if found else ledger.EMPTY_HEAD


async def audit_events(db: aiosqlite.Connection, after: int, limit: int) -> list[AuditEvent]:
    found = await _all(
        db,
        f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE sequence > ? "
        "ORDER BY sequence LIMIT ?",
        (after, limit),
    )
    return [rows.audit_event(r) for r in found]


async def stream(
    db: aiosqlite.Connection, sql: str, params: Any, chunk: int
) -> AsyncIterator[list[Any]]:
    """Rows of a large query, ``chunk`` at a time (one thread hop per chunk)."""
    cursor = await db.execute(sql, params)
    try:
        while True:
            found = await cursor.fetchmany(chunk)
            if not found:
                return
            yield list(found)
    finally:
        await cursor.close()


_PAIRS = """
SELECT r.case_id, r.round, r.outcome, r.label_key, v.kind
FROM reviews r
JOIN reviewers v ON v.reviewer_id = r.reviewer_id
JOIN cases c ON c.case_id = r.case_id
WHERE (:tenant = '' OR c.tenant = :tenant)
ORDER BY r.case_id, r.round, r.rowid
"""


async def rated_pairs(db: aiosqlite.Connection, tenant: str) -> list[RatedPair]:
    """The first two reviews of every case round that has at least two."""
    pairs: list[RatedPair] = []
    key: tuple[str, int] | None = None
    held: list[tuple[str, bool]] = []
    async for chunk in stream(db, _PAIRS, {"tenant": tenant}, 2000):
        for case_id, round_, outcome, label_key, kind in chunk:
            if (case_id, round_) != key:
                key, held = (case_id, round_), []
            if len(held) >= 2:
                continue
            answer = (
                f"label:{label_key}" if outcome == Outcome.LABEL.value else f"outcome:{outcome}"
            )
            held.append((answer, kind != ReviewerKind.HUMAN.value))
            if len(held) == 2:
                pairs.append(RatedPair(held[0][0], held[1][0], held[0][1] or held[1][1]))
    return pairs
