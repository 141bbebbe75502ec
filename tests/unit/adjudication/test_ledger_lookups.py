"""A freeze, and every read, looks its records' ledger events up by index, however long the
ledger grows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from assay.services.adjudication.domain.model import AuditEventType
from assay.services.adjudication.storage import Store, rows
from assay.services.adjudication.storage.sqlite.ledger_checks import recorded_sql

LOOKUPS = [
    (AuditEventType.REVIEW_SUBMITTED, "review_id", "audit_review_events"),
    (AuditEventType.CASE_RESOLVED, "case_id", "audit_resolution_events"),
    (AuditEventType.REVIEWER_REGISTERED, "reviewer_id", "audit_reviewer_events"),
]


@pytest.mark.parametrize(("event_type", "key", "index"), LOOKUPS)
async def test_each_lookup_uses_its_partial_index(
    tmp_path: Path, event_type: AuditEventType, key: str, index: str
) -> None:
    store = await Store.open(tmp_path / "a.db")
    await store.close()
    with sqlite3.connect(tmp_path / "a.db") as db:
        plan = db.execute(
            f"EXPLAIN QUERY PLAN {recorded_sql(event_type, key, 2)}", ("a", "b", "acme")
        ).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert f"USING INDEX {index}" in details, details


READ_LOOKUPS = [
    *LOOKUPS,
    (AuditEventType.GOLD_LABEL_FROZEN, "case_id", "audit_gold_events"),
    (AuditEventType.CASE_ENQUEUED, "case_id", "audit_case_events"),
]


@pytest.mark.parametrize(("event_type", "key", "index"), READ_LOOKUPS)
async def test_each_read_check_uses_its_partial_index(
    tmp_path: Path, event_type: AuditEventType, key: str, index: str
) -> None:
    """A read's ledger check (every tenant, whole events) probes the same indexes."""
    store = await Store.open(tmp_path / "a.db")
    await store.close()
    sql = recorded_sql(event_type, key, 2, rows.AUDIT_COLUMNS, by_tenant=False)
    with sqlite3.connect(tmp_path / "a.db") as db:
        plan = db.execute(f"EXPLAIN QUERY PLAN {sql}", ("a", "b")).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert f"USING INDEX {index}" in details, details
