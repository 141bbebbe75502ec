"""ListCases' and ListAuditEvents' requests built from plain Python values.

Shared by the sync and async clients and the CLI, so the three send the same
request for the same filters. Enum arguments take the number, the full name or
the short name (``DISAGREED``, ``REVIEW_SUBMITTED``; case-insensitive), as
``builders.enum_number`` reads them; times are ``datetime``s (a naive one is UTC).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TypedDict, Unpack

from google.protobuf import timestamp_pb2

from assay.client.builders import check_keywords, enum_number
from assay.v1 import adjudication_service_pb2 as adj


def _stamp(target: timestamp_pb2.Timestamp, moment: datetime | None) -> None:
    if moment is not None:
        target.FromDatetime(moment)


def case_states(states: Iterable[int | str]) -> list[adj.CaseState.ValueType]:
    """``CaseState`` numbers from numbers or (short) names."""
    return [adj.CaseState.ValueType(enum_number(adj.CaseState, s, "CASE_STATE_")) for s in states]


def audit_event_types(types: Iterable[int | str]) -> list[adj.AuditEventType.ValueType]:
    """``AuditEventType`` numbers from numbers or (short) names."""
    return [
        adj.AuditEventType.ValueType(enum_number(adj.AuditEventType, t, "AUDIT_EVENT_TYPE_"))
        for t in types
    ]


class CaseFilters(TypedDict, total=False):
    """A case listing's filters, as keywords: what ``list_cases_request`` and the clients'
    ``cases`` take, stated once. Left out, each keeps everything: every allowed tenant,
    state and predicate, assigned or not, any creation time; oldest first."""

    tenant: str
    states: Iterable[int | str]
    predicate: str
    assigned_reviewer_id: str
    create_after: datetime | None
    create_before: datetime | None
    newest_first: bool
    page_size: int


class AuditFilters(TypedDict, total=False):
    """An audit listing's filters, as keywords: what ``audit_events_request`` and the
    clients' ``audit_events`` take. Left out: every event, in sequence order."""

    event_types: Iterable[int | str]
    actor_subject: str
    case_id: str
    occur_after: datetime | None
    occur_before: datetime | None
    newest_first: bool
    page_size: int


def list_cases_request(**filters: Unpack[CaseFilters]) -> adj.ListCasesRequest:
    """The first page's request of a case listing with these filters."""
    check_keywords("list_cases_request", CaseFilters, filters)
    newest_first = filters.get("newest_first", False)
    request = adj.ListCasesRequest(
        tenant=filters.get("tenant", ""),
        states=case_states(filters.get("states", ())),
        predicate=filters.get("predicate", ""),
        assigned_reviewer_id=filters.get("assigned_reviewer_id", ""),
        order=adj.CASE_ORDER_NEWEST_FIRST if newest_first else adj.CASE_ORDER_OLDEST_FIRST,
        page_size=filters.get("page_size", 0),
    )
    _stamp(request.create_after, filters.get("create_after"))
    _stamp(request.create_before, filters.get("create_before"))
    return request


def audit_events_request(**filters: Unpack[AuditFilters]) -> adj.ListAuditEventsRequest:
    """The first page's request of an audit listing with these filters."""
    check_keywords("audit_events_request", AuditFilters, filters)
    request = adj.ListAuditEventsRequest(
        event_types=audit_event_types(filters.get("event_types", ())),
        actor_subject=filters.get("actor_subject", ""),
        case_id=filters.get("case_id", ""),
        newest_first=filters.get("newest_first", False),
        page_size=filters.get("page_size", 0),
    )
    _stamp(request.occur_after, filters.get("occur_after"))
    _stamp(request.occur_before, filters.get("occur_before"))
    return request
