"""The service's reads: field checks, NOT_FOUND, pagination, and the rules applied on read.

Reads never go through the writer: they run on the pooled read connections,
each in one read transaction (one consistent snapshot). State is derived here
from what was read, and every gold label read has already had its digest
re-checked by storage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from assay.errors import NotFound, Reason
from assay.services.adjudication import paging
from assay.services.adjudication.agreement import Agreement, cohens_kappa
from assay.services.adjudication.blinding import blind
from assay.services.adjudication.canonical import now
from assay.services.adjudication.fields import optional_id, optional_tenant, require_id
from assay.services.adjudication.model import (
    AuditEvent,
    BlindedCase,
    CaseSnapshot,
    ChainHead,
    ChainVerdict,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
)
from assay.services.adjudication.reviewers import check_reviewer_id
from assay.services.adjudication.storage import ExportBatch, Store

T = TypeVar("T")
DEFAULT_EXPORT_BATCH = 500
MAX_EXPORT_BATCH = 5000


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing and the token for the next ("" on the last page)."""

    items: list[T]
    next_page_token: str


def case_not_found(case_id: str) -> NotFound:
    return NotFound(Reason.CASE_NOT_FOUND, f"no case {case_id}", metadata={"case_id": case_id})


def reviewer_not_found(reviewer_id: str, field: str = "reviewer_id") -> NotFound:
    return NotFound(
        Reason.REVIEWER_NOT_FOUND,
        f"no reviewer {reviewer_id} ({field})",
        metadata={"reviewer_id": reviewer_id, "field": field},
    )


def _page(found: list[T], size: int, query: str, key: Callable[[T], str]) -> Page[T]:
    """``found`` holds up to size + 1 items: the extra one only says there is a next page."""
    items = found[:size]
    more = len(found) > size
    return Page(items, paging.encode_token(query, key(items[-1]) if more else ""))


class Lookups:
    """Every read of the service, over one ``Store``."""

    def __init__(self, store: Store, clock: Callable[[], datetime] = now) -> None:
        self.store = store
        self.clock = clock

    async def reviewer(self, reviewer_id: str) -> Reviewer:
        check_reviewer_id(reviewer_id, "reviewer_id")
        found = await self.store.reviewer(reviewer_id)
        if found is None:
            raise reviewer_not_found(reviewer_id)
        return found

    async def reviewers(self, page_size: int, page_token: str) -> Page[Reviewer]:
        size = paging.page_size(page_size)
        after = paging.decode_token("reviewers", page_token)
        found = await self.store.reviewers(after, size + 1)
        return _page(found, size, "reviewers", lambda r: r.reviewer_id)

    async def snapshot(self, case_id: str) -> CaseSnapshot:
        require_id(case_id, "case_id")
        snap = await self.store.snapshot(case_id)
        if snap is None:
            raise case_not_found(case_id)
        return snap

    async def case_detail(
        self, case_id: str
    ) -> tuple[CaseSnapshot, list[Review], list[Resolution]]:
        require_id(case_id, "case_id")
        found = await self.store.case_detail(case_id)
        if found is None:
            raise case_not_found(case_id)
        return found

    async def queue(
        self, reviewer_id: str, tenant: str, page_size: int, page_token: str
    ) -> Page[BlindedCase]:
        """The blinded cases this reviewer still has to review; never other reviews."""
        check_reviewer_id(reviewer_id, "reviewer_id")
        optional_tenant(tenant, "tenant")
        size = paging.page_size(page_size)
        query = f"queue|{reviewer_id}|{tenant}"
        after = paging.decode_token(query, page_token)
        await self.reviewer(reviewer_id)
        found = await self.store.queue(reviewer_id, tenant, after, size + 1, self.clock())
        views = [blind(case, round_) for case, round_ in found]
        return _page(views, size, query, lambda c: c.case_id)

    async def gold_labels(
        self, case_id: str, page_size: int, page_token: str
    ) -> Page[GoldLabelRevision]:
        optional_id(case_id, "case_id")
        size = paging.page_size(page_size)
        query = f"gold|{case_id}"
        token = paging.decode_token(query, page_token)
        after = paging.split_key(token) if token else None
        found = await self.store.gold_labels(case_id, after, size + 1)
        return _page(found, size, query, lambda g: paging.join_key(g.case_id, g.revision))

    async def audit_events(self, page_size: int, page_token: str) -> Page[AuditEvent]:
        size = paging.page_size(page_size)
        token = paging.decode_token("audit", page_token)
        after = paging.int_key(token) if token else 0
        found = await self.store.audit_events(after, size + 1)
        return _page(found, size, "audit", lambda e: str(e.sequence))

    async def export(self, tenant: str, batch_size: int) -> AsyncIterator[ChainHead | ExportBatch]:
        """The ledger head, then batches of records (latest revision per case) and exclusions."""
        optional_tenant(tenant, "tenant")
        size = paging.page_size(batch_size, "batch_size", MAX_EXPORT_BATCH)
        async for item in self.store.export(tenant, size if batch_size else DEFAULT_EXPORT_BATCH):
            yield item

    async def agreement(self, tenant: str) -> Agreement:
        optional_tenant(tenant, "tenant")
        return cohens_kappa(await self.store.rated_pairs(tenant))

    async def verify(self) -> ChainVerdict:
        return await self.store.verify_chain()
