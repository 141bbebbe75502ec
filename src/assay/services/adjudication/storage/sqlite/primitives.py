"""SQLite's fetches and checks for the checked reads (``storage.store_reads``), by the
names its ``Primitives`` protocol gives them: its plain functions on one read
transaction's connection as coroutines that never suspend, so a read over them runs to its
end at once on a reader's thread (``completed``)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from assay.services.adjudication.storage.sqlite import (
    approvals,
    assignments,
    ledger_checks,
    listings,
)
from assay.services.adjudication.storage.sqlite import queries as q

T = TypeVar("T")
P = ParamSpec("P")


def _at_once(work: Callable[P, T]) -> Callable[P, Coroutine[Any, Any, T]]:
    """``work`` as a coroutine that runs it and never suspends."""

    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return work(*args, **kwargs)

    return call


def completed(read: Coroutine[Any, Any, T]) -> T:
    """The result of ``read``, a read over these primitives, run to its end here: none of
    them suspends, so it ends at its first step (RuntimeError if it ever did not)."""
    try:
        read.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    read.close()
    raise RuntimeError("a SQLite read suspended")


reviewer = _at_once(q.reviewer)
list_reviewers = _at_once(q.list_reviewers)
snapshot = _at_once(q.snapshot)
snapshots = _at_once(q.snapshots)
case_history = _at_once(q.case_history)
histories = _at_once(q.histories)
gold_labels = _at_once(q.gold_labels)
gold_labels_of_cases = _at_once(q.gold_labels_of_cases)
audit_events = _at_once(q.audit_events)
chain_hashes = _at_once(q.chain_hashes)
rated_rounds = _at_once(q.rated_rounds)
gold_answers = _at_once(q.gold_answers)
approval = _at_once(approvals.one)
approvals_page = _at_once(approvals.page)
open_approvals = _at_once(approvals.still_open)
case_ids = _at_once(listings.case_ids)
audit_page = _at_once(listings.audit_page)
of_cases = _at_once(assignments.of_cases)
check = _at_once(ledger_checks.check)
check_events = _at_once(ledger_checks.check_events)
