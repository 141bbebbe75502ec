"""The read queries, as plain functions of a ``sqlite3`` connection.

The writer calls them inside its transaction; the readers call them through
``connection.run`` (one thread hop per read, however many statements). They
return domain values through ``rows``, so a corrupt row becomes ``DataLoss``.
Rows are ``sqlite3.Row`` (the store's connections set it) and read by column name.
Multi-statement reads are wrapped in a read transaction by their caller, so
they see one snapshot.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from assay.services.adjudication.domain import ledger, model
from assay.services.adjudication.domain.agreement import RatedRound
from assay.services.adjudication.domain.gold_agreement import GoldAnswer
from assay.services.adjudication.storage import predicates, rows

# ``:tenants`` is NULL (every tenant) or a JSON array of the tenants a read may see.
IN_SCOPE = "(:tenants IS NULL OR {column} IN (SELECT value FROM json_each(:tenants)))"


def tenants_param(scope: model.TenantScope) -> str | None:
    """``scope`` as the ``:tenants`` parameter of ``IN_SCOPE``."""
    return None if scope.tenants is None else json.dumps(sorted(scope.tenants))


def _all(db: sqlite3.Connection, sql: str, params: Any = ()) -> list[Any]:
    return db.execute(sql, params).fetchall()


def reviewer(db: sqlite3.Connection, reviewer_id: str) -> model.Reviewer | None:
    found = _all(
        db, f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id = ?", (reviewer_id,)
    )
    return rows.reviewer(found[0]) if found else None


def reviewers(db: sqlite3.Connection, reviewer_ids: Iterable[str]) -> dict[str, model.Reviewer]:
    ids = sorted(set(reviewer_ids))
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    found = _all(
        db, f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id IN ({marks})", ids
    )
    return {r.reviewer_id: r for r in map(rows.reviewer, found)}


def list_reviewers(db: sqlite3.Connection, after: str, limit: int) -> list[model.Reviewer]:
    found = _all(
        db,
        f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id > ? "
        "ORDER BY reviewer_id LIMIT ?",
        (after, limit),
    )
    return [rows.reviewer(r) for r in found]


def review(db: sqlite3.Connection, review_id: str) -> model.Review | None:
    found = _all(db, f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE review_id = ?", (review_id,))
    return rows.review(found[0]) if found else None


def snapshot(
    db: sqlite3.Connection, case_id: str, case: model.Case | None = None
) -> model.CaseSnapshot | None:
    """The case, its revision count, and its current round's reviews and resolution.

    ``case``: the case row when the caller has it already (a case row never changes)."""
    if case is None:
        found = _all(
            db,
            f"SELECT {rows.CASE_COLUMNS}, "
            "(SELECT COUNT(*) FROM gold_labels g WHERE g.case_id = cases.case_id) AS revisions "
            "FROM cases WHERE case_id = ?",
            (case_id,),
        )
        if not found:
            return None
        case = rows.case(found[0])
        revisions = int(found[0]["revisions"])
    else:
        count = "SELECT COUNT(*) AS revisions FROM gold_labels WHERE case_id = ?"
        revisions = int(db.execute(count, (case_id,)).fetchone()["revisions"])
    current = revisions + 1
    reviews = _all(
        db,
        f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id = ? AND round = ? ORDER BY rowid",
        (case_id, current),
    )
    resolution = _all(
        db,
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE case_id = ? AND round = ?",
        (case_id, current),
    )
    return model.CaseSnapshot(
        case,
        revisions,
        tuple(rows.review(r) for r in reviews),
        rows.resolution(resolution[0]) if resolution else None,
    )


def snapshots(db: sqlite3.Connection, case_ids: Sequence[str]) -> dict[str, model.CaseSnapshot]:
    """``snapshot`` of each of ``case_ids``, by case id (a case not found: absent)."""
    found = (snapshot(db, case_id) for case_id in case_ids)
    return {snap.case.case_id: snap for snap in found if snap is not None}


# Ids per query: under SQLite's smallest default limit on bound variables (999).
_CHUNK = 500


def reviews_of_cases(db: sqlite3.Connection, case_ids: Sequence[str]) -> list[model.Review]:
    """Every review of the cases, by case, then round, then submit order."""
    found: list[model.Review] = []
    for start in range(0, len(case_ids), _CHUNK):
        chunk = case_ids[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = (
            f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id IN ({marks}) "
            "ORDER BY case_id, round, rowid"
        )
        found.extend(rows.review(r) for r in _all(db, sql, chunk))
    return found


def frozen_resolutions(
    db: sqlite3.Connection, rounds: Sequence[tuple[str, int]]
) -> list[model.Resolution]:
    """The resolutions of the given (case id, round)s that exist."""
    found: list[model.Resolution] = []
    for start in range(0, len(rounds), _CHUNK // 2):
        chunk = rounds[start : start + _CHUNK // 2]
        pairs = " OR ".join("(case_id = ? AND round = ?)" for _ in chunk)
        sql = f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE {pairs}"
        flat = [value for pair in chunk for value in pair]
        found.extend(rows.resolution(r) for r in _all(db, sql, flat))
    return found


def case_history(
    db: sqlite3.Connection, case_id: str
) -> tuple[list[model.Review], list[model.Resolution]]:
    reviews = _all(
        db,
        f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id = ? ORDER BY round, rowid",
        (case_id,),
    )
    resolutions = _all(
        db,
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE case_id = ? ORDER BY round",
        (case_id,),
    )
    return [rows.review(r) for r in reviews], [rows.resolution(r) for r in resolutions]


def _of_cases(
    db: sqlite3.Connection, columns: str, table: str, order: str, ids: Sequence[str]
) -> list[Any]:
    """The rows of ``table`` of the cases ``ids``, by case then ``order``, in chunks."""
    found: list[Any] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT {columns} FROM {table} WHERE case_id IN ({marks}) ORDER BY case_id, {order}"
        found.extend(_all(db, sql, chunk))
    return found


def histories(
    db: sqlite3.Connection, case_ids: Sequence[str]
) -> tuple[list[model.Review], list[model.Resolution]]:
    """``case_history`` of several cases at once: every review and resolution of each."""
    resolutions = _of_cases(db, rows.RESOLUTION_COLUMNS, "resolutions", "round", case_ids)
    return reviews_of_cases(db, case_ids), [rows.resolution(r) for r in resolutions]


def gold_labels_of_cases(
    db: sqlite3.Connection, case_ids: Sequence[str]
) -> list[model.GoldLabelRevision]:
    """Every gold-label revision of the cases, by case then revision."""
    found = _of_cases(db, rows.GOLD_COLUMNS, "gold_labels", "revision", case_ids)
    return [rows.gold_label(r) for r in found]


def gold_labels(
    db: sqlite3.Connection,
    case_id: str,
    after: tuple[str, int] | None,
    limit: int,
    scope: model.TenantScope = model.EVERY_TENANT,
) -> list[model.GoldLabelRevision]:
    after_case, after_rev = after if after else ("", 0)
    found = _all(
        db,
        f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels "
        "WHERE (:case = '' OR case_id = :case) "
        "AND (case_id > :after OR (case_id = :after AND revision > :after_rev)) "
        f"AND {IN_SCOPE.format(column='tenant')} "
        "ORDER BY case_id, revision LIMIT :limit",
        {
            "case": case_id,
            "after": after_case,
            "after_rev": after_rev,
            "tenants": tenants_param(scope),
            "limit": limit,
        },
    )
    return [rows.gold_label(r) for r in found]


def chain_head(db: sqlite3.Connection) -> model.ChainHead:
    found = _all(db, "SELECT sequence, hash FROM audit_events ORDER BY sequence DESC LIMIT 1")
    return (
        model.ChainHead(int(found[0]["sequence"]), str(found[0]["hash"]))
        if found
        else ledger.EMPTY_HEAD
    )


def audit_events(
    db: sqlite3.Connection, after: int, limit: int, scope: model.TenantScope = model.EVERY_TENANT
) -> list[model.AuditEvent]:
    """Events after ``after``; for a scope short of every tenant, only the events of its
    tenants (events about no single tenant have tenant "" and are left out)."""
    found = _all(
        db,
        f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE sequence > :after "
        f"AND {IN_SCOPE.format(column='tenant')} ORDER BY sequence LIMIT :limit",
        {"after": after, "tenants": tenants_param(scope), "limit": limit},
    )
    return [rows.audit_event(r) for r in found]


def chain_hashes(db: sqlite3.Connection, after: int) -> list[tuple[int, str]]:
    sql = "SELECT sequence, hash FROM audit_events WHERE sequence > ? ORDER BY sequence"
    return [(int(row["sequence"]), str(row["hash"])) for row in db.execute(sql, (after,))]


_PAIRS = predicates.rated_reviews(
    in_scope=IN_SCOPE.format(column="c.tenant"), insertion_order="r.position"
)


def rated_rounds(db: sqlite3.Connection, scope: model.TenantScope) -> list[RatedRound]:
    """Every review of every case round that has at least two, in submit order."""
    return rows.rated_rounds(db.execute(_PAIRS, {"tenants": tenants_param(scope)}))


_GOLD_ANSWERS = predicates.gold_answers(in_scope=IN_SCOPE.format(column="g.tenant"))


def gold_answers(db: sqlite3.Connection, scope: model.TenantScope) -> list[GoldAnswer]:
    """Every review of the round each case's latest gold label was frozen from."""
    return rows.gold_answers(db.execute(_GOLD_ANSWERS, {"tenants": tenants_param(scope)}))
