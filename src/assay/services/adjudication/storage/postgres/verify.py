"""Whole-database reads on PostgreSQL: the chain verification and the corpus export.

Both read one consistent snapshot (a REPEATABLE READ, read-only transaction)
through server-side cursors, so memory stays flat however large the ledger
is. The checks themselves are the engine-free ones in ``ledger`` and
``records``; only the row fetching is here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import asyncpg

from assay.errors import DataLoss
from assay.services.adjudication import ledger, records
from assay.services.adjudication.blinding import blind
from assay.services.adjudication.model import (
    ChainHead,
    ChainVerdict,
    ExportExclusion,
    ExportRecord,
    RecordKind,
    TenantScope,
)
from assay.services.adjudication.storage import rows
from assay.services.adjudication.storage.engine import ExportBatch
from assay.services.adjudication.storage.postgres import ledger_checks, queries

PREFETCH = 1000


async def verify_chain(db: queries.Db) -> ChainVerdict:
    """Walk every event, then cross-check every gold-label row and every record row against
    the ledger. ``db`` is inside a read-only REPEATABLE READ transaction."""
    verifier = ledger.ChainVerifier()
    sql = f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events ORDER BY sequence"
    async for row in db.cursor(sql, prefetch=PREFETCH):
        try:
            event = rows.audit_event(queries.row(row))
        except DataLoss as error:
            if not verifier.unreadable(int(row["sequence"]), error.message):
                break
            continue
        if not verifier.check(event):
            break
    if verifier.verdict is not None:
        return verifier.finish([], [])
    gold_sql = f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels ORDER BY case_id, revision"
    gold_rows = [_digest_check(r) for r in await db.fetch(gold_sql)]
    return verifier.finish(gold_rows, await _stored_records(db))


async def _stored_records(
    db: queries.Db,
) -> list[tuple[RecordKind, str, records.Commitment | None]]:
    """(kind, id, the commitment recomputed from the row, or None if unreadable) of every
    reviewer, case, review and resolution row."""
    tables: tuple[tuple[RecordKind, str, Callable[[Any], tuple[str, Any]]], ...] = (
        (RecordKind.REVIEWER, f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers", _reviewer),
        (RecordKind.CASE, f"SELECT {rows.CASE_COLUMNS} FROM cases", _case),
        (RecordKind.REVIEW, f"SELECT {rows.REVIEW_COLUMNS} FROM reviews", _review),
        (RecordKind.RESOLUTION, f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions", _resolution),
    )
    found: list[tuple[RecordKind, str, records.Commitment | None]] = []
    for kind, sql, check in tables:
        async for row in db.cursor(sql, prefetch=PREFETCH):
            record_id, commitment = check(row)
            found.append((kind, record_id, commitment))
    return found


def _reviewer(row: Any) -> tuple[str, records.Commitment | None]:
    try:
        return str(row["reviewer_id"]), records.reviewer_commitment(rows.reviewer(row))
    except DataLoss:
        return str(row["reviewer_id"]), None


def _case(row: Any) -> tuple[str, records.Commitment | None]:
    try:
        return str(row["case_id"]), records.case_commitment(rows.case(row, check=False))
    except DataLoss:
        return str(row["case_id"]), None


def _review(row: Any) -> tuple[str, records.Commitment | None]:
    try:
        return str(row["review_id"]), records.review_commitment(rows.review(row))
    except DataLoss:
        return str(row["review_id"]), None


def _resolution(row: Any) -> tuple[str, records.Commitment | None]:
    key = f"{row['case_id']}#{row['round']}"
    try:
        return key, records.resolution_commitment(rows.resolution(row))
    except DataLoss:
        return key, None


def _digest_check(row: Any) -> tuple[str, int, str, str]:
    """(case, revision, stored digest, the digest the row really has or "" if invalid)."""
    try:
        recomputed = rows.gold_label(queries.row(row)).digest
    except DataLoss:
        recomputed = ""
    return str(row["case_id"]), int(row["revision"]), str(row["digest"]), recomputed


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
    db: queries.Db, scope: TenantScope, batch_size: int
) -> AsyncIterator[ChainHead | ExportBatch]:
    """The chain head, then batches of the latest revision of every label in ``scope``.
    ``db`` is inside a read-only REPEATABLE READ transaction."""
    yield await queries.chain_head(db)
    cursor = await db.cursor(_EXPORT, queries.tenants_param(scope))
    while chunk := await cursor.fetch(batch_size):
        yield await _checked(db, _export_batch(chunk))


async def _checked(db: queries.Db, batch: ExportBatch) -> ExportBatch:
    """``batch`` with every label checked against its GOLD_LABEL_FROZEN event and every
    case's content against its CASE_ENQUEUED event; each record carries its label's event."""
    frozen = await ledger_checks.check_gold_labels(db, [r.revision for r in batch.records])
    await ledger_checks.check_case_ids(db, [r.revision.case_id for r in batch.records])
    batch.records = [replace(r, event=frozen[records.gold_id(r.revision)]) for r in batch.records]
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
        batch.records.append(ExportRecord(blind(case, revision.round), revision))
    return batch
