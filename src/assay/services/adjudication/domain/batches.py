"""A batch of cases, checked whole before any of it is stored (EnqueueCases).

A batch is all or nothing, so a caller fixing one has to see everything wrong
with it at once: every case is checked with the rules of a single case
(``cases.case_violations``), each violation named by the case's position
(``cases[4].candidate_values[1]``), every case must share the first case's
tenant, and only then are the tenants checked, one PERMISSION_DENIED naming
every case of a tenant the caller is not granted.
Both are collected in the shared ``assay.errors.Violations``: the first
``MAX_VIOLATIONS`` kept and the rest counted, so a batch of a thousand bad
cases costs a bounded error (the runtime lists fewer still).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from assay.errors import FieldViolation, PermissionDenied, Reason, Violations
from assay.services.adjudication.domain.cases import case_violations, required_reviews_violations
from assay.services.adjudication.domain.fields import check_request_id
from assay.services.adjudication.domain.model import Caller, Case, CaseInput

MAX_CASES = 1000


@dataclass(frozen=True)
class BatchItem:
    """One case of a batch as read from the request, and what reading it already found
    wrong (a timestamp no datetime can hold: the input then has no expiry)."""

    data: CaseInput
    unreadable: tuple[FieldViolation, ...] = ()


def path(index: int) -> str:
    """Where case ``index`` is in the request."""
    return f"cases[{index}]"


def check_batch(
    request_id: str, items: Sequence[BatchItem], now: datetime, required_reviews: int = 0
) -> None:
    """INVALID_ARGUMENT listing every violation of the batch (capped), else nothing
    (``required_reviews``: the batch's reviews per round, 0 when it names none)."""
    found = Violations()
    found.check(check_request_id, request_id)
    found.extend(required_reviews_violations(required_reviews, "required_reviews"))
    if not items:
        found.add("cases", "at least one case is required")
    elif len(items) > MAX_CASES:
        # Not read case by case: the size alone refuses it.
        found.add("cases", f"at most {MAX_CASES:,} cases per batch")
    else:
        for i, item in enumerate(items):
            found.extend(item.unreadable)
            found.extend(case_violations(item.data, now, path(i)))
        found.extend(_other_tenants(items))
    found.raise_if_any()


def check_tenants(caller: Caller, items: Sequence[BatchItem]) -> None:
    """PERMISSION_DENIED (TENANT_NOT_PERMITTED) naming every case whose tenant the caller is
    not granted, else nothing."""
    found = Violations()
    denied: list[str] = []
    for i, item in enumerate(items):
        tenant = item.data.tenant
        if not caller.scope.allows(tenant):
            denied.append(tenant)
            found.add(f"{path(i)}.tenant", f"the caller is not granted tenant {tenant}")
    if denied:
        found.raise_if_any(PermissionDenied, Reason.TENANT_NOT_PERMITTED, {"tenant": denied[0]})


def _other_tenants(items: Sequence[BatchItem]) -> list[FieldViolation]:
    """A batch belongs to one tenant: every case of another than the first case's is named.

    The batch's stored response (which a retry returns) holds every case's content and is
    deleted with its tenant's data; a batch spanning tenants would leave one tenant's cases
    in a response filed under another's, surviving that tenant's deletion."""
    tenant = items[0].data.tenant
    return [
        FieldViolation(f"{path(i)}.tenant", f"a batch has one tenant: {tenant!r}, as cases[0]")
        for i, item in enumerate(items)
        if item.data.tenant != tenant
    ]


def response_scope(stored: Sequence[Case]) -> tuple[str, str]:
    """The (tenant, case) a batch's stored response is filed under, so deleting data deletes
    it: the batch's one tenant, and the case that expires first, so a sweep that removes any
    of the batch's cases removes the response with it."""
    first = min(stored, key=lambda case: (case.expire_time, case.case_id))
    return first.tenant, first.case_id
