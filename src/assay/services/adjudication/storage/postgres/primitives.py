"""PostgreSQL's fetches and checks for the checked reads (``storage.store_reads``), by the
names its ``Primitives`` protocol gives them: each coroutine made a plain call through the
greenlet ``Bridge`` (``greenlet_bridge.bridged``), so the reads, stated once as plain code,
run here inside ``run_sync`` on the loop's thread, each statement awaited in the reading
task on its snapshot's connection."""

from __future__ import annotations

from assay.services.adjudication.storage.postgres import (
    approvals,
    assignments,
    ledger_checks,
    listings,
)
from assay.services.adjudication.storage.postgres import queries as q
from assay.services.adjudication.storage.postgres.greenlet_bridge import bridged

reviewer = bridged(q.reviewer)
list_reviewers = bridged(q.list_reviewers)
snapshot = bridged(q.snapshot)
snapshots = bridged(q.snapshots)
case_history = bridged(q.case_history)
histories = bridged(q.histories)
gold_labels = bridged(q.gold_labels)
gold_labels_of_cases = bridged(q.gold_labels_of_cases)
audit_events = bridged(q.audit_events)
chain_hashes = bridged(q.chain_hashes)
rated_rounds = bridged(q.rated_rounds)
gold_answers = bridged(q.gold_answers)
approval = bridged(approvals.one)
approvals_page = bridged(approvals.page)
open_approvals = bridged(approvals.still_open)
case_ids = bridged(listings.case_ids)
audit_page = bridged(listings.audit_page)
of_cases = bridged(assignments.of_cases)
check = bridged(ledger_checks.check)
check_events = bridged(ledger_checks.check_events)
