"""SQLite's fetches and checks for the checked reads (``storage.store_reads``), by the
names its ``Primitives`` protocol gives them: plain calls on one read transaction's
connection, run on a reader's thread."""

from __future__ import annotations

from assay.services.adjudication.storage.sqlite.approvals import one as approval
from assay.services.adjudication.storage.sqlite.approvals import page as approvals_page
from assay.services.adjudication.storage.sqlite.approvals import still_open as open_approvals
from assay.services.adjudication.storage.sqlite.assignments import of_cases
from assay.services.adjudication.storage.sqlite.ledger_checks import check, check_events
from assay.services.adjudication.storage.sqlite.listings import audit_page, case_ids
from assay.services.adjudication.storage.sqlite.queries import (
    audit_events,
    case_history,
    chain_hashes,
    gold_answers,
    gold_labels,
    gold_labels_of_cases,
    histories,
    list_reviewers,
    rated_rounds,
    reviewer,
    snapshot,
    snapshots,
)

__all__ = [
    "approval",
    "approvals_page",
    "audit_events",
    "audit_page",
    "case_history",
    "case_ids",
    "chain_hashes",
    "check",
    "check_events",
    "gold_answers",
    "gold_labels",
    "gold_labels_of_cases",
    "histories",
    "list_reviewers",
    "of_cases",
    "open_approvals",
    "rated_rounds",
    "reviewer",
    "snapshot",
    "snapshots",
]
