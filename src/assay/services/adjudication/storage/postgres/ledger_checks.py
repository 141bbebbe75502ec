"""Records checked against their ledger events as they are read, on PostgreSQL.

The same checks as SQLite's (``storage.sqlite.ledger_checks``: the rule, why it
exists, which record each read checks), with the same rules
(``storage.ledger_rules``: what is compared, what DATA_LOSS says); only the
fetching is here. Each kind costs one query over its event type's partial
expression index; the reads run inside one REPEATABLE READ snapshot, so a row
and its event, which were committed together, are seen together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from assay.services.adjudication.domain import model
from assay.services.adjudication.domain.approvals import Approval, Step
from assay.services.adjudication.storage import ledger_rules, rows
from assay.services.adjudication.storage.ledger_rules import Rule
from assay.services.adjudication.storage.postgres import queries

T = TypeVar("T")


def _events_sql(event_type: model.AuditEventType, key: str) -> str:
    # Spelled out (our own enum and code, never a request) so the planner can match the
    # partial expression index of the event type.
    return (
        f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events WHERE event_type = '{event_type.value}' "
        f"AND payload ->> '{key}' = ANY($1::text[])"
    )


async def check(db: queries.Db, rule: Rule[T], values: Sequence[T]) -> dict[str, model.AuditEvent]:
    """DATA_LOSS at the first of ``values`` that disagrees with its event; else the events,
    by record id."""
    if not values:
        return {}
    ids = rule.ids(values)
    fetched = [r for t in rule.event_types for r in await db.fetch(_events_sql(t, rule.key), ids)]
    return rule.match(values, (rows.audit_event(queries.row(r)) for r in fetched))


async def check_cases(db: queries.Db, values: Sequence[model.Case]) -> dict[str, model.AuditEvent]:
    """Check the cases; their CASE_ENQUEUED events by case id."""
    return await check(db, ledger_rules.CASES, values)


async def check_case_ids(db: queries.Db, case_ids: Sequence[str]) -> dict[str, model.AuditEvent]:
    """Read the cases (content re-digested) and check them: for an export's blinded cases.
    Their CASE_ENQUEUED events by case id."""
    if not case_ids:
        return {}
    found = await db.fetch(
        f"SELECT {rows.CASE_COLUMNS} FROM cases WHERE case_id = ANY($1::text[])", list(case_ids)
    )
    return await check_cases(db, [rows.case(queries.row(r)) for r in found])


async def check_reviews(
    db: queries.Db, values: Sequence[model.Review]
) -> dict[str, model.AuditEvent]:
    """Check the reviews; their REVIEW_SUBMITTED events by review id."""
    return await check(db, ledger_rules.REVIEWS, values)


async def check_resolutions(
    db: queries.Db, values: Sequence[model.Resolution]
) -> dict[str, model.AuditEvent]:
    """Check the resolutions; their CASE_RESOLVED events by ``records.resolution_id``."""
    return await check(db, ledger_rules.RESOLUTIONS, values)


async def check_gold_labels(
    db: queries.Db, values: Sequence[model.GoldLabelRevision]
) -> dict[str, model.AuditEvent]:
    """Check the revisions; their GOLD_LABEL_FROZEN events by ``records.gold_id``."""
    return await check(db, ledger_rules.GOLD_LABELS, values)


async def check_events(db: queries.Db, values: Sequence[model.AuditEvent]) -> None:
    """``ledger_rules.check_links`` with the stored hashes it needs (one query)."""
    found = await db.fetch(
        "SELECT sequence, hash FROM audit_events WHERE sequence = ANY($1::bigint[])",
        ledger_rules.previous_sequences(values),
    )
    ledger_rules.check_links(values, {int(r["sequence"]): str(r["hash"]) for r in found})


async def check_approvals(db: queries.Db, found: Sequence[tuple[Approval, list[Step]]]) -> None:
    """Each approval and each of its steps against the events that recorded them, and no
    recorded step without its row."""
    await check(db, ledger_rules.APPROVALS, [a for a, _ in found])
    rule = ledger_rules.APPROVAL_STEPS
    steps = [s for _, steps in found for s in steps]
    ids = sorted({a.approval_id for a, _ in found})
    fetched = [r for t in rule.event_types for r in await db.fetch(_events_sql(t, rule.key), ids)]
    recorded = [rows.audit_event(queries.row(r)) for r in fetched]
    ledger_rules.check_no_step_missing(rule.match(steps, recorded), steps)
