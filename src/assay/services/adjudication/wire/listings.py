"""ListCases' and ListAuditEvents' filters off the wire, and a case summary onto it.

Enums map by name (``scalars``): a value the domain has no member for (UNSPECIFIED,
or a number this server does not know) becomes None, which the domain's checks
report with the field's path. A timestamp no datetime can hold becomes a violation
of its field, as an enqueued case's expiry does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from assay.errors import FieldViolation
from assay.services.adjudication.domain.audit_filters import AuditQuery
from assay.services.adjudication.domain.case_listing import CaseOrder, CaseQuery, CaseSummary
from assay.services.adjudication.domain.model import AuditEventType, CaseState
from assay.services.adjudication.wire.scalars import (
    enum_name,
    from_proto_enum,
    from_timestamp,
    timestamp,
    to_proto_enum,
)
from assay.v1 import adjudication_service_pb2 as pb

_ORDERS = {
    pb.CASE_ORDER_UNSPECIFIED: CaseOrder.OLDEST_FIRST,
    pb.CASE_ORDER_OLDEST_FIRST: CaseOrder.OLDEST_FIRST,
    pb.CASE_ORDER_NEWEST_FIRST: CaseOrder.NEWEST_FIRST,
}


def _times(message: Any, *names: str) -> tuple[list[datetime | None], tuple[FieldViolation, ...]]:
    """The named optional timestamps of ``message``, and a violation for each unreadable."""
    found: list[datetime | None] = []
    bad: list[FieldViolation] = []
    for name in names:
        moment = None
        if message.HasField(name):
            try:
                moment = from_timestamp(getattr(message, name))
            except (OverflowError, ValueError, OSError):
                bad.append(FieldViolation(name, "is not a valid timestamp"))
        found.append(moment)
    return found, tuple(bad)


def _members(numbers: Any, read: Callable[[int], Any]) -> tuple[Any, ...]:
    return tuple(read(n) for n in numbers)


def _state(number: int) -> CaseState | None:
    return from_proto_enum(CaseState, enum_name(pb.CaseState, number), "CASE_STATE_")


def _event_type(number: int) -> AuditEventType | None:
    name = enum_name(pb.AuditEventType, number)
    return from_proto_enum(AuditEventType, name, "AUDIT_EVENT_TYPE_")


def case_query(request: pb.ListCasesRequest) -> CaseQuery:
    (after, before), unreadable = _times(request, "create_after", "create_before")
    return CaseQuery(
        tenant=request.tenant,
        states=_members(request.states, _state),
        predicate=request.predicate,
        assigned_reviewer_id=request.assigned_reviewer_id,
        create_after=after,
        create_before=before,
        order=_ORDERS.get(request.order),
        page_size=request.page_size,
        page_token=request.page_token,
        unreadable=unreadable,
    )


def audit_query(request: pb.ListAuditEventsRequest) -> AuditQuery:
    (after, before), unreadable = _times(request, "occur_after", "occur_before")
    return AuditQuery(
        event_types=_members(request.event_types, _event_type),
        actor_subject=request.actor_subject,
        case_id=request.case_id,
        occur_after=after,
        occur_before=before,
        newest_first=request.newest_first,
        unreadable=unreadable,
    )


def case_summary(value: CaseSummary) -> pb.CaseSummary:
    snap = value.snapshot
    case = snap.case
    return pb.CaseSummary(
        case_id=case.case_id,
        tenant=case.tenant,
        subject=case.subject,
        predicate=case.predicate,
        state=to_proto_enum(pb.CaseState, "CASE_STATE_", value.state),
        round=snap.round,
        review_count=len(snap.round_reviews),
        required_reviews=value.required_reviews,
        create_time=timestamp(case.create_time),
        expire_time=timestamp(case.expire_time),
        assigned_reviewer_ids=value.assigned_reviewer_ids,
    )
