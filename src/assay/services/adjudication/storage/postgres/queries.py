"""The read queries on PostgreSQL, as coroutines of an ``asyncpg`` connection.

The same reads as ``storage.sqlite.queries`` (same names, same domain values), in
PostgreSQL's dialect: ``$n`` parameters, ``= ANY($n::text[])`` where SQLite
reads a JSON array with ``json_each``, and the reviews' ``position`` identity
where SQLite orders by ``rowid``. Rows are selected by the column names
``storage.rows`` lists, in its order, and decoded there (an ``asyncpg.Record``
is addressable by name and by position), so a corrupt row is ``DataLoss`` on
both engines alike. Callers that read more than once wrap the calls in one
transaction for one snapshot.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import asyncpg

from assay.services.adjudication.domain import ledger
from assay.services.adjudication.domain.agreement import RatedRound
from assay.services.adjudication.domain.gold_agreement import GoldAnswer
from assay.services.adjudication.domain.model import (
    EVERY_TENANT,
    AuditEvent,
    Case,
    CaseSnapshot,
    ChainHead,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
    TenantScope,
)
from assay.services.adjudication.storage import predicates, rows

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

    # A connection, or the pool's proxy of one: the queries run on either.
    Db: TypeAlias = asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]
else:
    Db = Any


def row(record: asyncpg.Record) -> rows.Row:
    """``record`` for ``rows``' decoders, which read it by column name."""
    return cast(rows.Row, record)


def in_scope(column: str, parameter: int) -> str:
    """``column`` is one of the tenants in parameter ``$parameter`` (NULL: every tenant)."""
    return f"(${parameter}::text[] IS NULL OR {column} = ANY(${parameter}::text[]))"


def tenants_param(scope: TenantScope) -> list[str] | None:
    return None if scope.tenants is None else sorted(scope.tenants)


# The statements the writer's jobs run are module constants, so their text is the same on
# every call and asyncpg's per-connection cache of prepared statements always hits.
REVIEWER = f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id = $1"
REVIEW = f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE review_id = $1"
REVIEWERS = f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id = ANY($1::text[])"


async def reviewer(db: Db, reviewer_id: str) -> Reviewer | None:
    found = await db.fetchrow(REVIEWER, reviewer_id)
    return rows.reviewer(row(found)) if found is not None else None


async def reviewers(db: Db, reviewer_ids: Iterable[str]) -> dict[str, Reviewer]:
    ids = sorted(set(reviewer_ids))
    if not ids:
        return {}
    found = await db.fetch(REVIEWERS, ids)
    return {r.reviewer_id: r for r in (rows.reviewer(row(r)) for r in found)}


async def list_reviewers(db: Db, after: str, limit: int) -> list[Reviewer]:
    found = await db.fetch(
        f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers WHERE reviewer_id > $1 "
        "ORDER BY reviewer_id LIMIT $2",
        after,
        limit,
    )
    return [rows.reviewer(row(r)) for r in found]


_CASE_NAMES = rows.names(rows.CASE_COLUMNS)


# Cases whose rows were checked (or written here), by the row's whole content.
_CHECKED: collections.OrderedDict[tuple[Any, ...], Case] = collections.OrderedDict()
CHECKED_CASES = 8192


def _keep_checked(values: tuple[Any, ...], case: Case) -> None:
    _CHECKED[values] = case
    if len(_CHECKED) > CHECKED_CASES:
        _CHECKED.popitem(last=False)


def checked_case(record: asyncpg.Record) -> Case:
    """The case a row holds, its content digest re-checked. Memoized by the row's whole
    content, not by id: the row is still read every time (another replica may have deleted
    or replaced it), only re-digesting a row already checked byte for byte is skipped —
    ~0.25 ms of canonical JSON and hashing per review otherwise."""
    values = tuple(record[column] for column in _CASE_NAMES)
    found = _CHECKED.get(values)
    if found is None:
        found = rows.case(dict(zip(_CASE_NAMES, values, strict=True)))
        _keep_checked(values, found)
    else:
        _CHECKED.move_to_end(values)
    return found


def written_case(case: Case) -> None:
    """``case`` is being written: its digest was computed from its content here, so a row
    holding exactly its columns needs no re-check when its first review reads it."""
    _keep_checked(tuple(rows.case_params(case)), case)


def _as_object(alias: str, columns: str) -> str:
    """A JSON object of ``alias``'s ``columns`` keyed by name: a row ``rows`` can decode."""
    pairs = ", ".join(f"'{column}', {alias}.{column}" for column in rows.names(columns))
    return f"json_build_object({pairs})"


def _snapshots(where: str) -> str:
    """The case, its revision count, and its current round's reviews and resolution in one
    round trip (a review is written after reading this): the round's rows as JSON objects."""
    return f"""
WITH found AS (
    SELECT {rows.CASE_COLUMNS},
           (SELECT COUNT(*) FROM gold_labels g WHERE g.case_id = cases.case_id) AS revisions
    FROM cases WHERE {where}
)
SELECT found.*,
       (SELECT json_agg({_as_object("r", rows.REVIEW_COLUMNS)} ORDER BY r.position)
          FROM reviews r
         WHERE r.case_id = found.case_id AND r.round = found.revisions + 1) AS round_reviews,
       (SELECT {_as_object("x", rows.RESOLUTION_COLUMNS)}
          FROM resolutions x
         WHERE x.case_id = found.case_id AND x.round = found.revisions + 1) AS round_resolution
FROM found
"""


SNAPSHOT = _SNAPSHOT = _snapshots("case_id = $1")
# Every case of a batch at once (``prefetch``): one row per case found.
SNAPSHOTS = _snapshots("case_id = ANY($1::text[])")


async def snapshot(db: Db, case_id: str) -> CaseSnapshot | None:
    """The case, its revision count, and its current round's reviews and resolution."""
    return snapshot_of(await db.fetchrow(_SNAPSHOT, case_id))


async def snapshots(db: Db, case_ids: Sequence[str]) -> dict[str, CaseSnapshot]:
    """``snapshot`` of each of ``case_ids`` in one statement, by case id (a case not found:
    absent)."""
    found = map(snapshot_of, await db.fetch(SNAPSHOTS, list(case_ids)))
    return {snap.case.case_id: snap for snap in found if snap is not None}


def snapshot_of(found: asyncpg.Record | None) -> CaseSnapshot | None:
    """The snapshot a row of ``SNAPSHOT`` holds (None: no such case)."""
    if found is None:
        return None
    reviews = json.loads(found["round_reviews"] or "[]")
    resolution = found["round_resolution"]
    return CaseSnapshot(
        checked_case(found),
        int(found["revisions"]),
        tuple(rows.review(r) for r in reviews),
        rows.resolution(json.loads(resolution)) if resolution is not None else None,
    )


async def reviews_of_cases(db: Db, case_ids: Sequence[str]) -> list[Review]:
    """Every review of the cases, by case, then round, then submit order."""
    found = await db.fetch(
        f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id = ANY($1::text[]) "
        "ORDER BY case_id, round, position",
        list(case_ids),
    )
    return [rows.review(row(r)) for r in found]


async def frozen_resolutions(db: Db, rounds: Sequence[tuple[str, int]]) -> list[Resolution]:
    """The resolutions of the given (case id, round)s that exist."""
    found = await db.fetch(
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions "
        "WHERE (case_id, round) IN (SELECT * FROM unnest($1::text[], $2::int[]))",
        [c for c, _ in rounds],
        [r for _, r in rounds],
    )
    return [rows.resolution(row(r)) for r in found]


async def case_history(db: Db, case_id: str) -> tuple[list[Review], list[Resolution]]:
    reviews = await db.fetch(
        f"SELECT {rows.REVIEW_COLUMNS} FROM reviews WHERE case_id = $1 ORDER BY round, position",
        case_id,
    )
    resolutions = await db.fetch(
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE case_id = $1 ORDER BY round",
        case_id,
    )
    return [rows.review(row(r)) for r in reviews], [rows.resolution(row(r)) for r in resolutions]


async def histories(db: Db, case_ids: Sequence[str]) -> tuple[list[Review], list[Resolution]]:
    """``case_history`` of several cases at once: every review and resolution of each."""
    reviews = await reviews_of_cases(db, case_ids)
    resolutions = await db.fetch(
        f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions WHERE case_id = ANY($1::text[]) "
        "ORDER BY case_id, round",
        list(case_ids),
    )
    return reviews, [rows.resolution(row(r)) for r in resolutions]


async def gold_labels_of_cases(db: Db, case_ids: Sequence[str]) -> list[GoldLabelRevision]:
    """Every gold-label revision of the cases, by case then revision."""
    found = await db.fetch(
        f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels WHERE case_id = ANY($1::text[]) "
        "ORDER BY case_id, revision",
        list(case_ids),
    )
    return [rows.gold_label(row(r)) for r in found]


async def gold_labels(
    db: Db,
    case_id: str,
    after: tuple[str, int] | None,
    limit: int,
    scope: TenantScope = EVERY_TENANT,
) -> list[GoldLabelRevision]:
    after_case, after_rev = after if after else ("", 0)
    found = await db.fetch(
        f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels "
        "WHERE ($1 = '' OR case_id = $1) "
        "AND (case_id > $2 OR (case_id = $2 AND revision > $3)) "
        f"AND {in_scope('tenant', 4)} "
        "ORDER BY case_id, revision LIMIT $5",
        case_id,
        after_case,
        after_rev,
        tenants_param(scope),
        limit,
    )
    return [rows.gold_label(row(r)) for r in found]


async def chain_head(db: Db) -> ChainHead:
    found = await db.fetchrow(
        "SELECT sequence, hash FROM audit_events ORDER BY sequence DESC LIMIT 1"
    )
    if found is None:
        return ledger.EMPTY_HEAD
    return ChainHead(int(found["sequence"]), str(found["hash"]))


async def audit_events(
    db: Db, after: int, limit: int, scope: TenantScope = EVERY_TENANT
) -> list[AuditEvent]:
    """Events after ``after``; for a scope short of every tenant, only its tenants' events."""
    found = await db.fetch(
        f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE sequence > $1 "
        f"AND {in_scope('tenant', 2)} ORDER BY sequence LIMIT $3",
        after,
        tenants_param(scope),
        limit,
    )
    return [rows.audit_event(row(r)) for r in found]


async def chain_hashes(db: Db, after: int) -> list[tuple[int, str]]:
    found = await db.fetch(
        "SELECT sequence, hash FROM audit_events WHERE sequence > $1 ORDER BY sequence", after
    )
    return [(int(r["sequence"]), str(r["hash"])) for r in found]


_PAIRS = predicates.rated_reviews(in_scope=in_scope("c.tenant", 1), insertion_order="r.position")


async def rated_rounds(db: Db, scope: TenantScope) -> list[RatedRound]:
    """Every review of every case round that has at least two, in submit order."""
    return rows.rated_rounds(await db.fetch(_PAIRS, tenants_param(scope)))


_GOLD_ANSWERS = predicates.gold_answers(in_scope=in_scope("g.tenant", 1))


async def gold_answers(db: Db, scope: TenantScope) -> list[GoldAnswer]:
    """Every review of the round each case's latest gold label was frozen from."""
    return rows.gold_answers(await db.fetch(_GOLD_ANSWERS, tenants_param(scope)))
