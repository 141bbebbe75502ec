"""Finding work: ListCases, and ListAuditEvents with filters, page by page.

A case's state is derived, never stored, so storage cannot filter on it: a page
reads the cases matching the stored columns in order, each with the snapshot
GetCaseState reads (checked against the ledger), derives each state with the same
rule (``permissions.state_seen_by``), and keeps those asked for. It examines at most
``CASE_SCAN_PAGES`` pages' worth of cases, so a rare state costs a bounded read per
call; a page may then hold fewer cases than asked, with a token to go on from the
last case examined. Filtered audit events are the same in SQL: each page looks at
a bounded run of the ledger (``audit_scan``).

Tokens are bound to the whole query and to the tenants it covers, as every other
listing's are: a token reused with another filter is INVALID_PAGE_TOKEN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from assay.errors import Violations
from assay.runtime import paging
from assay.services.adjudication.domain import audit_filters, case_listing, permissions, records
from assay.services.adjudication.domain.audit_filters import AuditQuery
from assay.services.adjudication.domain.case_listing import CaseQuery, CaseSummary
from assay.services.adjudication.domain.model import AuditEvent, Caller, CaseSnapshot
from assay.services.adjudication.domain.times import to_micros
from assay.services.adjudication.storage.interface import Store

# A ListCases page examines at most this many pages' worth of cases.
CASE_SCAN_PAGES = 4
# A filtered audit page examines at most this many pages' worth of events, and never fewer
# than ``MIN_AUDIT_SCAN``: the filtering is SQL's, so a wider run costs little.
AUDIT_SCAN_PAGES = 20
MIN_AUDIT_SCAN = 1000


def _key(snapshot: CaseSnapshot) -> tuple[str, int]:
    return (snapshot.case.case_id, to_micros(snapshot.case.create_time))


def _token(query: str, key: tuple[str, int] | None) -> str:
    return paging.encode_token(query, paging.join_key(*key) if key else "")


async def cases(store: Store, query: CaseQuery, caller: Caller) -> tuple[list[CaseSummary], str]:
    """One page of ListCases and the next page's token ("" on the last page)."""
    problems = Violations()
    where, states = case_listing.check_query(query, problems)
    with problems.catching():
        size = paging.page_size(query.page_size)
    problems.raise_if_any()
    scope = permissions.tenant_filter(caller, query.tenant)
    named = ",".join(sorted(s.value for s in states))
    bound = f"cases|{query.tenant}|{named}|{where.fingerprint()}{scope.fingerprint()}"
    token = paging.decode_token(bound, query.page_token)
    after = paging.split_key(token) if token else None
    budget = size * CASE_SCAN_PAGES
    kept: list[CaseSummary] = []
    examined = 0
    exhausted = False
    while len(kept) <= size and examined < budget:
        chunk = min(size + 1, budget - examined)
        found = await store.case_page(scope, where, after, chunk)
        for listed in found:
            examined += 1
            after = _key(listed.snapshot)
            state = permissions.state_seen_by(caller, listed.snapshot)
            if states and state not in states:
                continue
            required = listed.snapshot.case.required_reviews
            kept.append(CaseSummary(listed.snapshot, state, required, listed.assigned_reviewer_ids))
            if len(kept) > size:
                break
        if len(found) < chunk:
            exhausted = True
            break
    if len(kept) > size:
        return kept[:size], _token(bound, _key(kept[size - 1].snapshot))
    return kept, "" if exhausted else _token(bound, after)


def audit_scan(size: int) -> int:
    """How many events one filtered page of ``size`` examines at most."""
    return max(size * AUDIT_SCAN_PAGES, MIN_AUDIT_SCAN)


async def audit_events(
    store: Store,
    query: AuditQuery,
    page_size: int,
    page_token: str,
    caller: Caller,
    logged: Callable[[Sequence[tuple[int, str]]], int] | None,
) -> tuple[list[AuditEvent], str] | None:
    """One page of filtered ListAuditEvents and the next page's token, or None when the
    query filters nothing (the plain listing, unchanged, serves it)."""
    problems = Violations()
    where = audit_filters.check_query(query, problems)
    with problems.catching():
        size = paging.page_size(page_size)
    bound = f"audit|{where.fingerprint()}{caller.scope.fingerprint()}"
    if where.unfiltered:
        problems.raise_if_any()
        return None
    with problems.catching():
        token = paging.decode_token(bound, page_token)
    problems.raise_if_any()
    after = paging.int_key(token) if token else 0
    scan = audit_scan(size)
    found = await store.audit_page(caller.scope, where, after, scan, size + 1)
    bad = logged([(e.sequence, e.hash) for e in found.events]) if logged else 0
    if bad:
        raise records.event_loss(bad, "its hash is not the transparency log's leaf for it")
    if len(found.events) > size:
        events = found.events[:size]
        return events, paging.encode_token(bound, str(events[-1].sequence))
    more = found.examined >= scan and found.reached > 0
    return found.events, paging.encode_token(bound, str(found.reached) if more else "")
