"""Whole-database reads on PostgreSQL: the chain verification and the corpus export.

Both read one consistent snapshot (a REPEATABLE READ, read-only transaction)
through server-side cursors, so memory stays flat however large the ledger
is. The checks themselves are the engine-free ones in ``verify_walk``,
``ledger`` and ``records``; only the row fetching is here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg

from assay.services.adjudication.domain.model import (
    ChainHead,
    ChainVerdict,
    ExportExclusion,
    TenantScope,
)
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage import rows, verify_walk
from assay.services.adjudication.storage.interface import (
    ApprovalBatch,
    ExportBatch,
    exported_record,
)
from assay.services.adjudication.storage.postgres import approvals, ledger_checks, queries

PREFETCH = 1000


async def verify_chain(db: queries.Db) -> ChainVerdict:
    """``verify_walk`` fed from server-side cursors. ``db`` is inside a read-only REPEATABLE
    READ transaction."""
    walk = verify_walk.ChainWalk()
    async for row in db.cursor(verify_walk.EVENTS_SQL, prefetch=PREFETCH):
        if not walk.event(row):
            return walk.finish([], [])
    gold = await db.fetch(verify_walk.GOLD_SQL)
    stored: list[verify_walk.Stored] = []
    for kind, sql in verify_walk.RECORD_SQL:
        found = [row async for row in db.cursor(sql, prefetch=PREFETCH)]
        stored += verify_walk.stored_records(kind, found)
    return walk.finish(gold, stored)


_CASE_NAMES = rows.names(rows.CASE_COLUMNS)
_GOLD_G = ", ".join(f"g.{column}" for column in rows.names(rows.GOLD_COLUMNS))
_CASE_C = ", ".join(f"c.{column} AS case_{column}" for column in _CASE_NAMES)
# The latest revision of each label, then its case's whole row (NULLs once the case is gone),
# its columns prefixed case_ (the label's case_id and tenant keep their names).
_EXPORT = (
    f"SELECT {_GOLD_G}, {_CASE_C} "
    "FROM gold_labels g LEFT JOIN cases c ON c.case_id = g.case_id "
    "WHERE g.revision = (SELECT MAX(revision) FROM gold_labels m WHERE m.case_id = g.case_id) "
    f"AND {queries.in_scope('g.tenant', 1)} ORDER BY g.case_id"
)


async def export(
    db: queries.Db,
    scope: TenantScope,
    batch_size: int,
    include_reviews: bool = False,
    include_approvals: bool = False,
) -> AsyncIterator[ChainHead | ExportBatch | ApprovalBatch]:
    """The chain head, then batches of the latest revision of every label in ``scope``, then
    (``include_approvals``) ``scope``'s approvals, newest first, with their events. ``db`` is
    inside a read-only REPEATABLE READ transaction."""
    yield await queries.chain_head(db)
    cursor = await db.cursor(_EXPORT, queries.tenants_param(scope))
    while chunk := await cursor.fetch(batch_size):
        yield await _checked(db, _export_batch(chunk), include_reviews)
    after: tuple[str, int] | None = None
    while include_approvals and (found := await approvals.exported(db, scope, after, batch_size)):
        newest = found[-1].approval
        after = (newest.approval_id, to_micros(newest.request_time))
        yield ApprovalBatch(found)


async def _checked(db: queries.Db, batch: ExportBatch, include_reviews: bool) -> ExportBatch:
    """``batch`` with every label checked against its GOLD_LABEL_FROZEN event and every
    case's content against its CASE_ENQUEUED event; each record carries both events, and
    with ``include_reviews`` its case's reviews, each checked against its REVIEW_SUBMITTED
    event, which it carries too."""
    frozen = await ledger_checks.check_gold_labels(db, [r.revision for r in batch.records])
    case_ids = [r.revision.case_id for r in batch.records]
    enqueued = await ledger_checks.check_case_ids(db, case_ids)
    found = await queries.reviews_of_cases(db, case_ids) if include_reviews and case_ids else []
    submitted = await ledger_checks.check_reviews(db, found)
    rounds = batch.frozen_rounds()
    decided = await queries.frozen_resolutions(db, rounds) if rounds else []
    resolved = await ledger_checks.check_resolutions(db, decided)
    batch.attach_events(frozen, enqueued)
    batch.attach_reviews(found, submitted)
    batch.attach_resolutions(decided, resolved)
    return batch


def _export_batch(chunk: list[asyncpg.Record]) -> ExportBatch:
    batch = ExportBatch([], [])
    for record in chunk:
        revision = rows.gold_label(record)
        if record["case_case_id"] is None:
            batch.exclusions.append(ExportExclusion(revision.case_id, revision.revision))
            continue
        # The case as stored, not re-digested here: the export shows only its blinded view.
        case_row = {column: record[f"case_{column}"] for column in _CASE_NAMES}
        case = rows.case(case_row, check=False)
        batch.records.append(exported_record(case, revision))
    return batch
