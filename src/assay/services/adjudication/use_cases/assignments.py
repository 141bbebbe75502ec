"""Assignment's use cases: AssignCases, UnassignCase, a reviewer's queue in two tiers, and
the check SubmitReview makes.

A mutation checks its fields first, then runs as one write job: the reviewers (registered,
HUMAN), the cases (in the caller's tenants), their assignments so far (checked against
the ledger), then one change row set and its event per case that changes, and the
response stored under the request id (``retries``), as every mutation does. A reviewer's
queue lists the cases assigned to them first, then the cases assigned to nobody in
tenants that take unassigned work (``ReviewPolicy.assigned_only_tenants``); its page
token says which tier it is in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from assay.errors import Violations
from assay.runtime import paging
from assay.services.adjudication.domain import assignment, permissions
from assay.services.adjudication.domain.assignment import (
    Assigned,
    AssignmentChange,
    QueueItem,
    QueueTier,
)
from assay.services.adjudication.domain.assignment_requests import (
    AssignRequest,
    UnassignRequest,
    check_pool,
    per_case,
    validate_assign,
    validate_unassign,
)
from assay.services.adjudication.domain.blinding import blind
from assay.services.adjudication.domain.fields import check_request_id, optional_tenant
from assay.services.adjudication.domain.model import Caller, Case, CaseSnapshot
from assay.services.adjudication.domain.review_policy import ReviewPolicy
from assay.services.adjudication.domain.reviewers import check_reviewer_id, reviewer_not_found
from assay.services.adjudication.storage.interface import Store, WriteTx
from assay.services.adjudication.use_cases.lookups import Page
from assay.services.adjudication.use_cases.retries import RequestKey, owned, retryable

T = TypeVar("T")


def check_assigned(tx: WriteTx, case: Case, reviewer_id: str, review: ReviewPolicy) -> None:
    """SubmitReview's rule (``assignment.check_may_review``), on the case's assignment as
    stored and checked against the ledger."""
    changes = tx.assignments([case.case_id]).get(case.case_id, [])
    held = assignment.current(changes)
    assignment.check_may_review(held, reviewer_id, review.unassigned_work(case.tenant))


def _visible(tx: WriteTx, caller: Caller, case_ids: Sequence[str]) -> list[CaseSnapshot]:
    """The cases, each in the caller's tenants, else CASE_NOT_FOUND naming ``case_ids[i]``."""
    found = []
    for i, case_id in enumerate(case_ids):
        snap = tx.snapshot(case_id)
        if snap is None or not caller.scope.allows(snap.case.tenant):
            raise assignment.case_not_found(case_id, f"case_ids[{i}]")
        found.append(snap)
    return found


def _scope(cases: Sequence[Case]) -> tuple[str, str]:
    """Where the stored response is filed: the case that goes first (deleted first)."""
    first = min(cases, key=lambda c: (c.expire_time, c.case_id))
    return first.tenant, first.case_id


class Assignments:
    """The assignment use cases over a store, with the clock and review policy given."""

    def __init__(
        self, store: Store, clock: Callable[[], datetime], review: ReviewPolicy, page_bytes: int
    ) -> None:
        self.store = store
        self.clock = clock
        self.review = review
        self.page_bytes = page_bytes

    async def _idempotent(
        self,
        key: RequestKey,
        caller: Caller,
        job: Callable[[WriteTx, datetime], T],
        render: Callable[[T], bytes],
        scope: Callable[[T], tuple[str, str]],
        small: bool,
    ) -> bytes:
        job_run = retryable(owned(key, caller), job, render, scope, self.clock)
        return await self.store.write(job_run, small)

    async def assign(
        self,
        key: RequestKey,
        req: AssignRequest,
        render: Callable[[list[Assigned]], bytes],
        caller: Caller,
    ) -> bytes:
        found = Violations()
        found.check(check_request_id, key.request_id)
        validate_assign(req, found)
        found.raise_if_any()

        def job(tx: WriteTx, at: datetime) -> tuple[list[Assigned], list[Case]]:
            problems = Violations()
            check_pool(req.reviewer_ids, "reviewer_ids", tx.reviewers(req.reviewer_ids), problems)
            problems.raise_if_any()
            snaps = _visible(tx, caller, req.case_ids)
            required = {s.case.case_id: s.case.required_reviews for s in snaps}
            per = per_case(req, required, problems)
            problems.raise_if_any()
            earlier = tx.assignments(req.case_ids)
            held = {c: assignment.current(earlier.get(c, [])) for c in req.case_ids}
            pool = list(req.reviewer_ids)
            rule = req.rule or assignment.AssignmentRule.EACH
            load = (
                tx.open_assignments(pool, at)
                if rule is assignment.AssignmentRule.LEAST_LOADED
                else {}
            )
            chosen = assignment.distribute(rule, req.case_ids, pool, per, load, held)
            result = []
            for snap in snaps:
                case = snap.case
                before = earlier.get(case.case_id, [])
                change = assignment.new_change(
                    case.case_id, case.tenant, before, set(chosen[case.case_id]), set()
                )
                after = [*before, change] if change else before
                _write(tx, change, caller)
                result.append((case.case_id, assignment.current(after)))
            return result, [s.case for s in snaps]

        return await self._idempotent(
            key,
            caller,
            job,
            lambda r: render(r[0]),
            lambda r: _scope(r[1]),
            small=len(req.case_ids) <= 1,
        )

    async def unassign(
        self,
        key: RequestKey,
        req: UnassignRequest,
        render: Callable[[Assigned], bytes],
        caller: Caller,
    ) -> bytes:
        found = Violations()
        found.check(check_request_id, key.request_id)
        validate_unassign(req, found)
        found.raise_if_any()

        def job(tx: WriteTx, at: datetime) -> tuple[Assigned, Case]:
            problems = Violations()
            known = tx.reviewers(req.to_reviewer_ids)
            check_pool(req.to_reviewer_ids, "to_reviewer_ids", known, problems)
            snap = tx.snapshot(req.case_id)
            if snap is None or not caller.scope.allows(snap.case.tenant):
                raise assignment.case_not_found(req.case_id, "case_id")
            case = snap.case
            before = tx.assignments([case.case_id]).get(case.case_id, [])
            held = assignment.current(before)
            for i, reviewer_id in enumerate(req.reviewer_ids):
                if reviewer_id not in held:
                    problems.add(f"reviewer_ids[{i}]", "is not assigned to the case")
            problems.raise_if_any()
            change = assignment.new_change(
                case.case_id, case.tenant, before, set(req.to_reviewer_ids), set(req.reviewer_ids)
            )
            _write(tx, change, caller)
            after = [*before, change] if change else before
            return (case.case_id, assignment.current(after)), case

        return await self._idempotent(
            key, caller, job, lambda r: render(r[0]), lambda r: _scope([r[1]]), small=True
        )

    async def assigned(self, case_id: str) -> tuple[str, ...]:
        """Who the case is assigned to now (GetCase shows it to operators)."""
        changes = await self.store.assignments([case_id])
        return assignment.current(changes.get(case_id, []))

    async def queue(
        self,
        reviewer_id: str,
        tenant: str,
        page_size: int,
        page_token: str,
        caller: Caller,
        measure: Callable[[QueueItem], int] | None = None,
    ) -> Page[QueueItem]:
        """The blinded cases this reviewer still has to review: assigned to them first, then
        assigned to nobody (where the tenant takes unassigned work), each tier by case id.
        With ``measure``, as many as fit in a page's bytes (at least one)."""
        problems = Violations()
        problems.check(check_reviewer_id, reviewer_id, "reviewer_id")
        problems.check(optional_tenant, tenant, "tenant")
        with problems.catching():
            size = paging.page_size(page_size)
        problems.raise_if_any()
        permissions.check_queue_owner(caller, reviewer_id)
        scope = permissions.tenant_filter(caller, tenant)
        query = f"queue|{reviewer_id}|{tenant}{scope.fingerprint()}|assigned first"
        token = paging.decode_token(query, page_token)
        after, tier = paging.split_key(token) if token else ("", 0)
        if await self.store.reviewer(reviewer_id) is None:
            raise reviewer_not_found(reviewer_id)
        at = self.clock()
        found: list[tuple[Case, int, int]] = []
        if tier == 0:
            mine = QueueTier(reviewer_id, scope, at, assigned=True)
            found += [(c, r, 0) for c, r in await self.store.queue_tier(mine, after, size + 1)]
        if len(found) <= size:
            rest = QueueTier(reviewer_id, scope, at, False, self.review.assigned_only_tenants)
            more = await self.store.queue_tier(rest, after if tier else "", size + 1 - len(found))
            found += [(c, r, 1) for c, r in more]
        items = [(QueueItem(blind(c, r), t == 0), t) for c, r, t in found]
        kept, more_pages = items[:size], len(items) > size
        if measure is not None and kept:
            fits = paging.fitting((measure(item) for item, _ in kept), self.page_bytes)
            kept, more_pages = kept[:fits], more_pages or fits < len(kept)
        last = paging.join_key(kept[-1][0].case.case_id, kept[-1][1]) if more_pages else ""
        return Page([item for item, _ in kept], paging.encode_token(query, last))


def _write(tx: WriteTx, change: AssignmentChange | None, caller: Caller) -> None:
    """The change's rows and its event, in the job's transaction (nothing when None)."""
    if change is None:
        return
    tx.insert_assignment(change)
    tx.append_event(
        change.event_type, assignment.payload(change), tenant=change.tenant, actor=caller.actor
    )
