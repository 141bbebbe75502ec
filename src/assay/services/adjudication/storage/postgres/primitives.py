"""PostgreSQL's fetches and checks for the checked reads (``storage.store_reads``), by the
names its ``Primitives`` protocol gives them: its asyncpg coroutines as they are, awaited
in the reading task on its snapshot's connection."""

from __future__ import annotations

from assay.services.adjudication.storage.postgres import (
    approvals,
    assignments,
    ledger_checks,
    listings,
)
from assay.services.adjudication.storage.postgres import queries as q

reviewer = q.reviewer
list_reviewers = q.list_reviewers
snapshot = q.snapshot
snapshots = q.snapshots
case_history = q.case_history
histories = q.histories
gold_labels = q.gold_labels
gold_labels_of_cases = q.gold_labels_of_cases
audit_events = q.audit_events
chain_hashes = q.chain_hashes
rated_rounds = q.rated_rounds
gold_answers = q.gold_answers
approval = approvals.one
approvals_page = approvals.page
open_approvals = approvals.still_open
case_ids = listings.case_ids
audit_page = listings.audit_page
of_cases = assignments.of_cases
check = ledger_checks.check
check_events = ledger_checks.check_events
