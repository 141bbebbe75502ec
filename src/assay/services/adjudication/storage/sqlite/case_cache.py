"""What the single writer remembers between jobs, within a fixed memory budget.

The writer is the only one changing the file, so what it has read or written
stays true until it changes it again: reviewers (never updated or deleted),
case rows (never updated), and each case's current round (reviews,
resolution, revision count). Remembering them spares a review from reading
its case's rows. ``WriteTx`` drops a case's round on every write that changes
it, and the writer forgets everything on a rollback, a failed commit or a
deletion.

Memory is bounded by bytes, not by entries, because one case may hold 256
evidence references and 64 candidate values: the footprints below are rough
upper estimates, a case over ``MAX_CASE_BYTES`` is never kept (it is read from
the file each time), and when the total would pass ``max_bytes`` everything is
forgotten at once and refilled by the jobs that follow.
"""

from __future__ import annotations

from assay.services.adjudication.domain.digests import canonical_json
from assay.services.adjudication.domain.model import Case, CaseSnapshot, Resolution, Reviewer

MAX_BYTES = 32 * 1024 * 1024
MAX_CASE_BYTES = 256 * 1024
MAX_REVIEWERS = 65_536
# Python's own overhead per object graph, on top of the text it holds, set high on purpose
# (tracemalloc: a small case with its dataclasses, tuples and datetimes takes 0.5-1.1 KB, a
# review ~0.35 KB), so the budget is an upper bound: 32 MiB holds ~6,000 small cases with
# two reviews each and uses ~10 MiB for them.
_CASE_OVERHEAD = 2048
_ROW_OVERHEAD = 1024


def case_footprint(case: Case) -> int:
    """Rough bytes a remembered case holds: its text and JSON values, plus object overhead."""
    return (
        _CASE_OVERHEAD
        + len(case.subject)
        + len(case.predicate)
        + len(case.context)
        + len(case.lineage.origin)
        + len(case.lineage.origin_ref)
        + sum(len(ref) + 64 for ref in case.evidence_refs)
        + len(canonical_json(list(case.candidate_values)))
        + len(canonical_json(case.local_verdict))
    )


def _resolution_footprint(resolution: Resolution | None) -> int:
    if resolution is None:
        return 0
    ids = sum(len(i) + 64 for i in resolution.review_ids)
    return _ROW_OVERHEAD + 2 * len(resolution.label_key) + ids


def round_footprint(snapshot: CaseSnapshot) -> int:
    """Rough bytes of a snapshot beyond its case: the round's reviews and resolution."""
    reviews = sum(
        _ROW_OVERHEAD + 2 * len(r.label_key) + len(r.reason) + len(r.rationale)
        for r in snapshot.round_rows
    )
    return _ROW_OVERHEAD + reviews + _resolution_footprint(snapshot.round_resolution)


class Remembered:
    """Reviewers, cases and current rounds the writer has seen, at most ``max_bytes``."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._reviewers: dict[str, Reviewer] = {}
        self._cases: dict[str, tuple[Case, int]] = {}
        self._rounds: dict[str, tuple[CaseSnapshot, int]] = {}
        self._bytes = 0

    @property
    def bytes(self) -> int:
        """The estimated bytes held by cases and rounds now."""
        return self._bytes

    def reviewer(self, reviewer_id: str) -> Reviewer | None:
        return self._reviewers.get(reviewer_id)

    def keep_reviewer(self, reviewer: Reviewer) -> None:
        if len(self._reviewers) >= MAX_REVIEWERS:
            self._reviewers.clear()
        self._reviewers[reviewer.reviewer_id] = reviewer

    def case(self, case_id: str) -> Case | None:
        found = self._cases.get(case_id)
        return found[0] if found is not None else None

    def snapshot(self, case_id: str) -> CaseSnapshot | None:
        found = self._rounds.get(case_id)
        return found[0] if found is not None else None

    def keep_snapshot(self, snapshot: CaseSnapshot) -> None:
        """Remember ``snapshot`` as its case's current round, and its case with it (unless the
        case is too big to keep)."""
        case_id = snapshot.case.case_id
        self.drop_snapshot(case_id)
        round_size = round_footprint(snapshot)
        # The stored case and its counted size always travel together.
        entry = self._cases.get(case_id) or (snapshot.case, case_footprint(snapshot.case))
        if entry[1] > MAX_CASE_BYTES or entry[1] + round_size > self.max_bytes:
            return
        needed = round_size if case_id in self._cases else entry[1] + round_size
        if self._bytes + needed > self.max_bytes:
            self.forget_cases()
        if case_id not in self._cases:
            self._cases[case_id] = entry
            self._bytes += entry[1]
        self._rounds[case_id] = (snapshot, round_size)
        self._bytes += round_size

    def drop_snapshot(self, case_id: str) -> None:
        """Forget a case's round (a write is about to change it); the case row stays."""
        found = self._rounds.pop(case_id, None)
        if found is not None:
            self._bytes -= found[1]

    def forget_cases(self) -> None:
        """Forget every case and round (deletions, rollbacks); reviewers stay."""
        self._cases.clear()
        self._rounds.clear()
        self._bytes = 0

    def forget_all(self) -> None:
        """Forget everything, reviewers too (a batch that failed to commit may have added
        them)."""
        self.forget_cases()
        self._reviewers.clear()
