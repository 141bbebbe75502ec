"""What ListAuditEvents may filter by: event types, the actor's subject, the case an event
names, a time range, and newest first.

The filters are checked here (every bad field at once) and carried to storage as an
``AuditWhere``, which filters in SQL. A page of filtered events examines a bounded
run of the ledger, so one page may hold fewer events than asked while a next page
exists: the contract says so, and a client follows tokens until none is left.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from assay.errors import FieldViolation, Violations
from assay.services.adjudication.domain.fields import optional_id
from assay.services.adjudication.domain.model import AuditEvent, AuditEventType
from assay.services.adjudication.domain.times import to_micros

MAX_SUBJECT = 256


@dataclass(frozen=True)
class AuditQuery:
    """ListAuditEvents' filters as read off the wire: a type None is one the wire could not
    name (UNSPECIFIED or unknown); ``unreadable``: times no datetime can hold."""

    event_types: tuple[AuditEventType | None, ...] = ()
    actor_subject: str = ""
    case_id: str = ""
    occur_after: datetime | None = None
    occur_before: datetime | None = None
    newest_first: bool = False
    unreadable: tuple[FieldViolation, ...] = ()


@dataclass(frozen=True)
class AuditWhere:
    """What storage filters events by (empty: every event) and their order."""

    event_types: frozenset[AuditEventType] = frozenset()
    actor_subject: str = ""
    case_id: str = ""
    occur_after: datetime | None = None
    occur_before: datetime | None = None
    newest_first: bool = False

    @property
    def unfiltered(self) -> bool:
        """Every event in sequence order: the listing as it was before filters."""
        return self == AuditWhere()

    def fingerprint(self) -> str:
        """What a page token is bound to besides the tenants."""
        types = sorted(t.value for t in self.event_types)
        after = to_micros(self.occur_after) if self.occur_after else None
        before = to_micros(self.occur_before) if self.occur_before else None
        fields = [types, self.actor_subject, self.case_id, after, before, self.newest_first]
        return json.dumps(fields, separators=(",", ":"))


def check_query(query: AuditQuery, problems: Violations) -> AuditWhere:
    """The filters, each bad field recorded in ``problems`` (the caller adds the page's
    fields and raises them all at once)."""
    problems.extend(query.unreadable)
    types: set[AuditEventType] = set()
    for index, event_type in enumerate(query.event_types):
        if event_type is None:
            problems.add(f"event_types[{index}]", "must be an audit event type, not UNSPECIFIED")
        else:
            types.add(event_type)
    if len(query.actor_subject) > MAX_SUBJECT:
        problems.add("actor_subject", f"must be at most {MAX_SUBJECT} characters")
    problems.check(optional_id, query.case_id, "case_id")
    after, before = query.occur_after, query.occur_before
    if after is not None and before is not None and before <= after:
        problems.add("occur_before", "must be after occur_after")
    return AuditWhere(
        event_types=frozenset(types),
        actor_subject=query.actor_subject,
        case_id=query.case_id,
        occur_after=after,
        occur_before=before,
        newest_first=query.newest_first,
    )


@dataclass(frozen=True)
class AuditScan:
    """What one page's bounded run of the ledger found: the matching events (checked), how
    many events it examined, and the sequence it reached (0: none)."""

    events: list[AuditEvent]
    examined: int
    reached: int
