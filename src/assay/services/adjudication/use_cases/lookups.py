"""The service's reads: field checks, NOT_FOUND, pagination, and the rules applied on read.

Reads never go through the writer: they run on the pooled read connections,
each in one read transaction (one consistent snapshot). State is derived here
from what was read, and every gold label read has already had its digest
re-checked by storage.

Every read takes the ``Caller`` and shows it only what ``permissions`` allows:
its tenants, and for reviewers and adjudicators the sealed views. Listings
filter in SQL, so pages stay full, and their page tokens are bound to the
tenants they were issued for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from assay import optional
from assay.errors import FailedPrecondition, Violations
from assay.runtime import paging
from assay.services.adjudication.domain import assignment, permissions, records
from assay.services.adjudication.domain.agreement import RatedRound
from assay.services.adjudication.domain.agreement_report import (
    AgreementReport,
    report,
    resample_count,
)
from assay.services.adjudication.domain.audit_filters import AuditQuery
from assay.services.adjudication.domain.blinding import blind
from assay.services.adjudication.domain.case_listing import CaseQuery, CaseSummary
from assay.services.adjudication.domain.cases import case_not_found
from assay.services.adjudication.domain.fields import optional_id, optional_tenant, require_id
from assay.services.adjudication.domain.gold_agreement import GoldAnswer
from assay.services.adjudication.domain.model import (
    AuditEvent,
    BlindedCase,
    Caller,
    CaseDetail,
    CaseSnapshot,
    CaseState,
    ChainHead,
    ChainVerdict,
    GoldLabelRevision,
    Reviewer,
)
from assay.services.adjudication.domain.review_policy import ReviewPolicy
from assay.services.adjudication.domain.reviewers import check_reviewer_id, reviewer_not_found
from assay.services.adjudication.domain.times import now
from assay.services.adjudication.storage.interface import ApprovalBatch, ExportBatch, Store
from assay.services.adjudication.use_cases import listings
from assay.transport import DEFAULT_MAX_MESSAGE_BYTES

T = TypeVar("T")
DEFAULT_EXPORT_BATCH = 500
MAX_EXPORT_BATCH = 5000


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing and the token for the next ("" on the last page)."""

    items: list[T]
    next_page_token: str


# How many bytes one item of a listing takes in its response (its serialized size): the
# servicer measures it, so pages of large items stay within the largest message.
Measure = Callable[[T], int]


def _page(
    found: list[T],
    size: int,
    query: str,
    key: Callable[[T], str],
    measure: Measure[T] | None = None,
    budget: int = 0,
) -> Page[T]:
    """``found`` holds up to size + 1 items: the extra one only says there is a next page.
    With ``measure``, the page keeps only the leading items that fit in ``budget`` bytes
    (at least one), and the token continues after the last one kept."""
    items = found[:size]
    more = len(found) > size
    if measure is not None and items:
        kept = paging.fitting((measure(item) for item in items), budget)
        if kept < len(items):
            items, more = items[:kept], True
    return Page(items, paging.encode_token(query, key(items[-1]) if more else ""))


def _list_fields(reviewer_id: str, path: str, tenant: str, page_size: int) -> int:
    """A per-reviewer list's own fields, checked together; returns the page size. The page
    token is checked after the caller's permissions: it is bound to a query that names the
    caller's tenant scope."""
    problems = Violations()
    problems.check(check_reviewer_id, reviewer_id, path)
    problems.check(optional_tenant, tenant, "tenant")
    with problems.catching():
        size = paging.page_size(page_size)
    problems.raise_if_any()
    return size


class Lookups:
    """Every read of the service, over one ``Store``."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime] = now,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        review: ReviewPolicy | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.page_bytes = paging.page_bytes(max_message_bytes)
        self.review = review or ReviewPolicy()

    async def reviewer(self, reviewer_id: str, caller: Caller) -> Reviewer:
        """Reviewers and adjudicators may look up only themselves (anyone else: not found)."""
        check_reviewer_id(reviewer_id, "reviewer_id")
        if not permissions.may_see_reviewer(caller, reviewer_id):
            raise reviewer_not_found(reviewer_id)
        found = await self.store.reviewer(reviewer_id)
        if found is None:
            raise reviewer_not_found(reviewer_id)
        return found

    async def reviewers(self, page_size: int, page_token: str) -> Page[Reviewer]:
        problems = Violations()
        with problems.catching():
            size = paging.page_size(page_size)
        with problems.catching():
            after = paging.decode_token("reviewers", page_token)
        problems.raise_if_any()
        found = await self.store.reviewers(after, size + 1)
        return _page(found, size, "reviewers", lambda r: r.reviewer_id)

    async def case_state(self, case_id: str, caller: Caller) -> tuple[CaseSnapshot, CaseState]:
        """A case of the caller's tenants and its state as the caller may see it
        (GetCaseState; ``permissions.state_seen_by``)."""
        require_id(case_id, "case_id")
        snap = permissions.visible_case(caller, await self.store.case_state(case_id), case_id)
        return snap, permissions.state_seen_by(caller, snap)

    async def blinded(self, case_id: str, caller: Caller) -> BlindedCase:
        """The reviewer view, to those ``permissions.blinded_view`` lets see it."""
        require_id(case_id, "case_id")
        found = await self.store.snapshot(case_id)
        snap = permissions.blinded_view(caller, found, case_id, self.clock())
        if not (caller.operator or caller.adjudicator):
            # A reviewer sees only what waits for them: not a case assigned to others, nor an
            # unassigned one where the tenant takes assigned work only (as the queue).
            changes = (await self.store.assignments([case_id])).get(case_id, [])
            try:
                assignment.check_may_review(
                    assignment.current(changes),
                    caller.subject,
                    self.review.unassigned_work(snap.case.tenant),
                )
            except FailedPrecondition:
                raise case_not_found(case_id) from None
        return blind(snap.case, snap.round)

    async def case_detail(self, case_id: str, caller: Caller) -> CaseDetail:
        """The operator view, or an adjudicator's redacted one (``permissions.case_view``)."""
        require_id(case_id, "case_id")
        found = await self.store.case_detail(case_id)
        if found is None:
            raise case_not_found(case_id)
        snap, reviews, resolutions = found
        return permissions.case_view(caller, snap, case_id, reviews, resolutions)

    async def worklist(
        self,
        adjudicator_id: str,
        tenant: str,
        page_size: int,
        page_token: str,
        caller: Caller,
        measure: Measure[CaseDetail] | None = None,
    ) -> Page[CaseDetail]:
        """The disagreed cases ``adjudicator_id`` may decide, as GetCase shows them to an
        adjudicator. Storage returns a superset; the rule (``permissions``) decides, and a
        page short of cases after that reads on, so pages stay full."""
        size = _list_fields(adjudicator_id, "adjudicator_id", tenant, page_size)
        permissions.check_worklist_owner(caller, adjudicator_id)
        scope = permissions.tenant_filter(caller, tenant)
        query = f"worklist|{adjudicator_id}|{tenant}{scope.fingerprint()}"
        after = paging.decode_token(query, page_token)
        if await self.store.reviewer(adjudicator_id) is None:
            raise reviewer_not_found(adjudicator_id, "adjudicator_id")
        at = self.clock()
        kept: list[CaseSnapshot] = []
        while len(kept) <= size:
            found = await self.store.worklist(adjudicator_id, scope, after, size + 1, at)
            kept.extend(s for s in found if permissions.awaits_decision_by(s, adjudicator_id, at))
            if len(found) <= size:
                break
            after = found[-1].case.case_id
        views = [permissions.adjudicator_view(s) for s in kept[: size + 1]]
        return _page(
            views, size, query, lambda d: d.snapshot.case.case_id, measure, self.page_bytes
        )

    async def gold_labels(
        self,
        case_id: str,
        page_size: int,
        page_token: str,
        caller: Caller,
        measure: Measure[GoldLabelRevision] | None = None,
    ) -> Page[GoldLabelRevision]:
        """Revisions of the caller's tenants (a case of another tenant has none for them)."""
        problems = Violations()
        problems.check(optional_id, case_id, "case_id")
        with problems.catching():
            size = paging.page_size(page_size)
        query = f"gold|{case_id}{caller.scope.fingerprint()}"
        with problems.catching():
            token = paging.decode_token(query, page_token)
        problems.raise_if_any()
        after = paging.split_key(token) if token else None
        found = await self.store.gold_labels(case_id, after, size + 1, caller.scope)
        return _page(
            found,
            size,
            query,
            lambda g: paging.join_key(g.case_id, g.revision),
            measure,
            self.page_bytes,
        )

    async def cases(self, query: CaseQuery, caller: Caller) -> Page[CaseSummary]:
        """ListCases: the caller's cases (or one granted tenant's) filtered and in order, each
        state derived as GetCaseState derives it (``listings.cases``)."""
        items, token = await listings.cases(self.store, query, caller)
        return Page(items, token)

    async def audit_events(
        self,
        page_size: int,
        page_token: str,
        caller: Caller,
        logged: Callable[[Sequence[tuple[int, str]]], int] | None = None,
        filters: AuditQuery | None = None,
    ) -> Page[AuditEvent]:
        """Events of the caller's tenants; those about no single tenant only for callers
        granted every tenant. Storage re-checks each event's hash and link; ``logged`` (the
        transparency log's ``disagreeing``) gives the first whose hash is not the log's leaf
        for it: DATA_LOSS naming it. With ``filters``, ``listings.audit_events``."""
        if filters is not None:
            filtered = await listings.audit_events(
                self.store, filters, page_size, page_token, caller, logged
            )
            if filtered is not None:
                return Page(*filtered)
        problems = Violations()
        with problems.catching():
            size = paging.page_size(page_size)
        query = f"audit{caller.scope.fingerprint()}"
        with problems.catching():
            token = paging.decode_token(query, page_token)
        problems.raise_if_any()
        after = paging.int_key(token) if token else 0
        found = await self.store.audit_events(after, size + 1, caller.scope)
        bad = logged([(e.sequence, e.hash) for e in found]) if logged else 0
        if bad:
            raise records.event_loss(bad, "its hash is not the transparency log's leaf for it")
        return _page(found, size, query, lambda e: str(e.sequence))

    async def export(
        self,
        tenant: str,
        batch_size: int,
        caller: Caller,
        include_reviews: bool = False,
        include_approvals: bool = False,
    ) -> AsyncIterator[ChainHead | ExportBatch | ApprovalBatch]:
        """The ledger head, then batches of records (latest revision per case, with every
        review of its case when asked) and exclusions, then (when asked) batches of
        approvals with their events, of the tenant named or else of every tenant the caller
        is granted: one snapshot, so everything is in the tree the head's checkpoint signs."""
        problems = Violations()
        problems.check(optional_tenant, tenant, "tenant")
        with problems.catching():
            size = paging.page_size(batch_size, "batch_size", MAX_EXPORT_BATCH)
        problems.raise_if_any()
        scope = permissions.tenant_filter(caller, tenant)
        batch = size if batch_size else DEFAULT_EXPORT_BATCH
        async for item in self.store.export(scope, batch, include_reviews, include_approvals):
            yield item

    async def agreement(self, tenant: str, resamples: int, caller: Caller) -> AgreementReport:
        """Every figure over the caller's case rounds and gold labels. Computed off the event
        loop: a bootstrap of 10,000 resamples over a large corpus takes seconds."""
        problems = Violations()
        problems.check(optional_tenant, tenant, "tenant")
        with problems.catching():
            count = resample_count(resamples)
        problems.raise_if_any()
        scope = permissions.tenant_filter(caller, tenant)
        units = await self.store.rated_rounds(scope)
        gold = await self.store.gold_answers(scope)
        return await asyncio.to_thread(_report_with_stats, units, count, gold)

    async def verify(self) -> ChainVerdict:
        return await self.store.verify_chain()


def _report_with_stats(
    units: Sequence[RatedRound], resamples: int, gold: Sequence[GoldAnswer]
) -> AgreementReport:
    """The report, once SciPy (the `stats` extra: Gwet's t interval) is known to be
    installed; imported here, on the worker thread, not on the event loop."""
    optional.require("scipy", "ComputeAgreement")
    return report(units, resamples, gold)
