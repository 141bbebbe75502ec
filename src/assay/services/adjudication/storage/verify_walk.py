"""The chain verification's walk over stored rows, once for both engines.

VerifyAuditChain reads every event in sequence order, then (if the chain
holds) every gold-label row and every reviewer, case, review, resolution,
approval, approval-step and case-assignment row, and hands them to ``ledger.ChainVerifier``.
Decoding each row, turning an unreadable one into a verdict and recomputing
each record's commitment are the same on SQLite and PostgreSQL (rows are read
by column name on both), so they live here; an engine only runs the queries
below inside one snapshot and feeds the rows in (SQLite from its cursors,
PostgreSQL from server-side cursors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from assay.errors import DataLoss
from assay.services.adjudication.domain import assignment, ledger, records
from assay.services.adjudication.domain.model import ChainVerdict, RecordKind
from assay.services.adjudication.storage import approval_rows, assignment_rows, rows

# Plain SQL both dialects read alike.
EVENTS_SQL = f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events ORDER BY sequence"
GOLD_SQL = f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels ORDER BY case_id, revision"
RECORD_SQL: tuple[tuple[RecordKind, str], ...] = (
    (RecordKind.REVIEWER, f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers"),
    (RecordKind.CASE, f"SELECT {rows.CASE_COLUMNS} FROM cases"),
    (RecordKind.REVIEW, f"SELECT {rows.REVIEW_COLUMNS} FROM reviews"),
    (RecordKind.RESOLUTION, f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions"),
    (RecordKind.APPROVAL, f"SELECT {approval_rows.APPROVAL_COLUMNS} FROM approvals"),
    (RecordKind.APPROVAL_STEP, f"SELECT {approval_rows.STEP_COLUMNS} FROM approval_steps"),
    (RecordKind.CASE_ASSIGNMENT, assignment_rows.ALL_SQL),
)

Stored = tuple[RecordKind, str, records.Commitment | None]


class ChainWalk:
    """Feed it the event rows in order (``event`` or ``events``) until one is bad, then
    ``finish``: with the gold-label and record rows if every event was good, else with none
    (they need not be read)."""

    def __init__(self) -> None:
        self._verifier = ledger.ChainVerifier()

    def event(self, row: rows.Row) -> bool:
        """Check the next event row; False at the first bad one."""
        try:
            event = rows.audit_event(row)
        except DataLoss as error:
            return self._verifier.unreadable(int(row["sequence"]), error.message)
        return self._verifier.check(event)

    def events(self, found: Iterable[rows.Row]) -> bool:
        """``event`` for each of ``found`` up to the first bad one."""
        return all(self.event(row) for row in found)

    def finish(self, gold: Iterable[rows.Row], stored: Iterable[Stored]) -> ChainVerdict:
        """The verdict: the events', else the cross-check of every gold-label row in ``gold``
        and every record in ``stored`` (see ``stored_record``) against the ledger."""
        if self._verifier.verdict is not None:
            return self._verifier.verdict
        return self._verifier.finish([_digest_check(row) for row in gold], stored)


def stored_record(kind: RecordKind, row: rows.Row) -> Stored:
    """(kind, id, the commitment recomputed from the row, or None if unreadable) of a row of
    one of ``RECORD_SQL``."""
    record_id, commit = _COMMITMENTS[kind]
    try:
        return kind, record_id(row), commit(row)
    except DataLoss:
        return kind, record_id(row), None


def stored_records(kind: RecordKind, found: Iterable[rows.Row]) -> Iterator[Stored]:
    """``stored_record`` of each row of ``kind``'s ``RECORD_SQL``; an assignment change is
    the rows of one (case, change), so those are grouped into one record each."""
    if kind is not RecordKind.CASE_ASSIGNMENT:
        yield from (stored_record(kind, row) for row in found)
        return
    listed = list(found)
    try:
        changes = assignment_rows.changes(listed)
    except DataLoss:
        for row in listed:
            yield kind, f"{row['case_id']}#{row['change']}", None
        return
    for change in changes:
        yield kind, change.change_id, assignment.commitment(change)


def _digest_check(row: rows.Row) -> tuple[str, int, str, str]:
    """(case, revision, stored digest, the digest the row really has or "" if invalid)."""
    try:
        recomputed = rows.gold_label(row).digest
    except DataLoss:
        recomputed = ""
    return str(row["case_id"]), int(row["revision"]), str(row["digest"]), recomputed


_Commit = tuple[Callable[[Any], str], Callable[[Any], records.Commitment | None]]
_COMMITMENTS: dict[RecordKind, _Commit] = {
    RecordKind.REVIEWER: (
        lambda row: str(row["reviewer_id"]),
        lambda row: records.reviewer_commitment(rows.reviewer(row)),
    ),
    RecordKind.CASE: (
        lambda row: str(row["case_id"]),
        lambda row: records.case_commitment(rows.case(row, check=False)),
    ),
    RecordKind.REVIEW: (
        lambda row: str(row["review_id"]),
        lambda row: records.review_commitment(rows.review(row)),
    ),
    RecordKind.RESOLUTION: (
        lambda row: f"{row['case_id']}#{row['round']}",
        lambda row: records.resolution_commitment(rows.resolution(row)),
    ),
    RecordKind.APPROVAL: (
        lambda row: str(row["approval_id"]),
        lambda row: records.approval_commitment(approval_rows.approval(row)),
    ),
    RecordKind.APPROVAL_STEP: (
        lambda row: f"{row['approval_id']}#{row['seq']}",
        lambda row: records.step_commitment(approval_rows.step(row)),
    ),
}
