"""Finding work from the shell: ``assay case list`` and the filters of ``assay audit events``.

Both take times as RFC 3339 (``2026-01-31T09:00:00Z``; an offset is converted to UTC)
or as an age before now (``90s``, ``30m``, ``24h``, ``7d``, ``2w``): ``--since 24h`` is
the last day. A listing stops at ``--limit`` items, or with ``--all`` follows every
page; a page of a filtered listing may be short, so both keep asking until the server
says there is no more. The requests are built by ``assay.client.listing_builders``, as
the Python client builds them; tables are ``case_table`` and the audit events table.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.table import Table

from assay.cli.common import console, id_columns, print_table, stamp_time, usage_error
from assay.client import listing_builders
from assay.v1 import adjudication_service_pb2 as pb

# RPC name, request -> response (``adjudication_cmds._rpc`` with its arguments bound).
Rpc = Callable[[argparse.Namespace, str, Any], Any]

DEFAULT_LIMIT = 50
MAX_PAGE = 1000
_AGE = re.compile(r"^([0-9]+)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
STATES = [
    name.removeprefix("CASE_STATE_").lower().replace("_", "-")
    for name in pb.CaseState.DESCRIPTOR.values_by_name
    if name not in ("CASE_STATE_UNSPECIFIED", "CASE_STATE_AWAITING_RESOLUTION")
]
EVENT_TYPES = [
    name.removeprefix("AUDIT_EVENT_TYPE_").lower().replace("_", "-")
    for name in pb.AuditEventType.DESCRIPTOR.values_by_name
    if name != "AUDIT_EVENT_TYPE_UNSPECIFIED"
]


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An RFC 3339 time, or an age before ``now`` (``24h``), as a UTC datetime."""
    found = _AGE.match(text.strip().lower())
    if found:
        age = timedelta(seconds=int(found.group(1)) * _UNITS[found.group(2)])
        return (now or datetime.now(UTC)) - age
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an RFC 3339 time nor an age like 24h"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone (add Z for UTC)")
    return moment.astimezone(UTC)


def _shown(name: str) -> str:
    return name.upper().replace("-", "_")


def _since_until(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--since",
        type=parse_time,
        metavar="TIME",
        help=f"only {what} at or after TIME: RFC 3339, or an age like 24h, 7d",
    )
    parser.add_argument(
        "--until", type=parse_time, metavar="TIME", help=f"only {what} before TIME (as --since)"
    )
    parser.add_argument("--newest", action="store_true", help="newest first")


def _paging(parser: argparse.ArgumentParser, default: int) -> None:
    parser.add_argument(
        "--limit", type=int, default=default, help=f"at most this many (default {default})"
    )
    parser.add_argument("--all", action="store_true", help="every one: follow every page")


def add_case_filters(parser: argparse.ArgumentParser) -> None:
    """``assay case list``'s flags."""
    parser.add_argument("--tenant", default="", help="one of your tenants (default: all of them)")
    parser.add_argument(
        "--state",
        action="append",
        choices=STATES,
        default=[],
        help="only cases in this derived state (repeat for several)",
    )
    parser.add_argument("--predicate", default="", help="only cases about this predicate")
    parser.add_argument(
        "--assigned", default="", metavar="REVIEWER", help="only cases assigned to REVIEWER"
    )
    _since_until(parser, "cases created")
    _paging(parser, DEFAULT_LIMIT)


def add_event_filters(parser: argparse.ArgumentParser) -> None:
    """``assay audit events``' filters (its ``--limit`` is its own)."""
    parser.add_argument(
        "--type",
        action="append",
        choices=EVENT_TYPES,
        default=[],
        help="only events of this type (repeat for several)",
    )
    parser.add_argument("--actor", default="", metavar="SUBJECT", help="only events SUBJECT caused")
    parser.add_argument("--case", default="", metavar="CASE_ID", help="only events naming CASE_ID")
    _since_until(parser, "events")
    parser.add_argument("--all", action="store_true", help="every event: follow every page")


def _page_size(args: argparse.Namespace, found: int) -> int:
    limit: int = args.limit
    return MAX_PAGE if args.all else min(MAX_PAGE, limit - found)


def collect(args: argparse.Namespace, rpc: Rpc, name: str, first: Any, field: str) -> list[Any]:
    """The items of a listing, page after page, until ``--limit`` (unless ``--all``) or
    the last page: a short page with a token is not the end."""
    if args.limit < 1 and not args.all:
        raise usage_error("--limit must be at least 1")
    found: list[Any] = []
    token = ""
    while args.all or len(found) < args.limit:
        request = type(first)()
        request.CopyFrom(first)
        request.page_size = _page_size(args, len(found))
        request.page_token = token
        page = rpc(args, name, request)
        found.extend(getattr(page, field))
        token = page.next_page_token
        if not token:
            break
    return found if args.all else found[: args.limit]


def cases_request(args: argparse.Namespace) -> pb.ListCasesRequest:
    return listing_builders.list_cases_request(
        tenant=args.tenant,
        states=[_shown(s) for s in args.state],
        predicate=args.predicate,
        assigned_reviewer_id=args.assigned,
        create_after=args.since,
        create_before=args.until,
        newest_first=args.newest,
    )


def events_request(args: argparse.Namespace) -> pb.ListAuditEventsRequest:
    return listing_builders.audit_events_request(
        event_types=[_shown(t) for t in args.type],
        actor_subject=args.actor,
        case_id=args.case,
        occur_after=args.since,
        occur_before=args.until,
        newest_first=args.newest,
    )


def _state(number: int) -> str:
    return pb.CaseState.DESCRIPTOR.values_by_number[number].name.removeprefix("CASE_STATE_")


def case_table(found: Sequence[pb.CaseSummary]) -> None:
    """One line per case: what it is about, where it stands, who has it, and its age."""
    if not found:
        console().print("no cases match")
        return
    headers = ["case", "tenant", "state", "round", "reviews", "predicate", "subject", "created"]
    assigned = any(c.assigned_reviewer_ids for c in found)
    table = Table(*headers, *(["assigned"] if assigned else []))
    for c in found:
        row = [
            c.case_id,
            c.tenant,
            _state(c.state),
            str(c.round),
            f"{c.review_count}/{c.required_reviews}",
            c.predicate,
            c.subject,
            stamp_time(c.create_time),
        ]
        if assigned:
            row.append(", ".join(c.assigned_reviewer_ids) or "-")
        table.add_row(*row)
    print_table(id_columns(table, "case", "created"))
