"""ListCases' and ListAuditEvents' requests built from plain Python values.

Shared by the sync and async clients and the CLI, so the three send the same
request for the same filters. Enum arguments take the number, the full name or
the short name (``DISAGREED``, ``REVIEW_SUBMITTED``; case-insensitive), as
``builders.enum_number`` reads them; times are ``datetime``s (a naive one is UTC).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from google.protobuf import timestamp_pb2

from assay.client.builders import enum_number
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


def list_cases_request(
    *,
    tenant: str = "",
    states: Iterable[int | str] = (),
    predicate: str = "",
    assigned_reviewer_id: str = "",
    create_after: datetime | None = None,
    create_before: datetime | None = None,
    newest_first: bool = False,
    page_size: int = 0,
) -> adj.ListCasesRequest:
    """The first page's request of a case listing with these filters."""
    request = adj.ListCasesRequest(
        tenant=tenant,
        states=case_states(states),
        predicate=predicate,
        assigned_reviewer_id=assigned_reviewer_id,
        order=adj.CASE_ORDER_NEWEST_FIRST if newest_first else adj.CASE_ORDER_OLDEST_FIRST,
        page_size=page_size,
    )
    _stamp(request.create_after, create_after)
    _stamp(request.create_before, create_before)
    return request


def audit_events_request(
    *,
    event_types: Iterable[int | str] = (),
    actor_subject: str = "",
    case_id: str = "",
    occur_after: datetime | None = None,
    occur_before: datetime | None = None,
    newest_first: bool = False,
    page_size: int = 0,
) -> adj.ListAuditEventsRequest:
    """The first page's request of an audit listing with these filters."""
    request = adj.ListAuditEventsRequest(
        event_types=audit_event_types(event_types),
        actor_subject=actor_subject,
        case_id=case_id,
        newest_first=newest_first,
        page_size=page_size,
    )
    _stamp(request.occur_after, occur_after)
    _stamp(request.occur_before, occur_before)
    return request
