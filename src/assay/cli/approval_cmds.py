"""Approvals from the shell: ``assay approval list|show|approve|deny|revoke|watch``.

``ApprovalService`` is served by the adjudication process, so these commands take the
adjudication service's address (``--target``, env ``ASSAY_ADJUDICATION_TARGET``) and the
same credential flags; approvals need an authenticated caller, so against a dev-mode server
every command fails with the server's FAILED_PRECONDITION / AUTHENTICATION_REQUIRED line.
``approve`` and ``deny`` need ``--reason`` (recorded in the ledger's step, shown to everyone
who reads the approval); every mutating command sends a fresh ``request_id`` unless given
``--request-id``. A refusal (the requester deciding, a second decision, a final state) is
the server's message on one line, exit 1. Calls go through ``assay.client.ApprovalClient``;
rendering lives in ``approval_render``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf import json_format

from assay.cli import approval_render as render
from assay.cli.common import (
    Remote,
    add_json_argument,
    add_target_argument,
    emit,
    json_line,
    print_json,
)
from assay.client import ApprovalClient
from assay.v1 import approval_service_pb2 as pb

DEFAULT_TARGET = "127.0.0.1:50053"
SERVICE = "adjudication"
# A watch lasts until the approval reaches a final state; the longest a request may stay
# pending by default is a day, so that bounds the wait unless --timeout says otherwise.
WATCH_TIMEOUT_SECONDS = 86_400.0
STATES = tuple(
    name.removeprefix("APPROVAL_STATE_").lower()
    for name, number in pb.ApprovalState.items()
    if number != pb.APPROVAL_STATE_UNSPECIFIED
)

T = TypeVar("T")


def _command(
    subparsers: Any,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], int],
    mutating: bool = False,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text)
    add_target_argument(parser, SERVICE, DEFAULT_TARGET)
    add_json_argument(parser)
    if mutating:
        parser.add_argument(
            "--request-id",
            default="",
            help="retry key: repeating a command with the same id returns the first result",
        )
    parser.set_defaults(handler=handler)
    return parser


def _with_reason(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("approval_id")
    parser.add_argument(
        "--reason",
        required=True,
        help=f"why you {what} (1-2,000 characters; recorded with your step and shown to "
        "whoever reads the approval)",
    )


def register(subparsers: Any) -> None:
    approval = subparsers.add_parser(
        "approval",
        help="list, show, approve, deny, revoke and watch approvals of risky acquisitions "
        "(served by the adjudication service)",
    )
    sub = approval.add_subparsers(dest="approval_command", metavar="COMMAND", required=True)
    listing = _command(sub, "list", "approvals of your tenants, newest request first", _list)
    listing.add_argument("--state", choices=STATES, help="only approvals in this state")
    listing.add_argument("--tenant", default="", help="one of your tenants (default: all of them)")
    show = _command(sub, "show", "one approval: the candidate, the reason, every step", _show)
    show.add_argument("approval_id")
    approve = _command(sub, "approve", "approve a pending approval (approver role)", _approve, True)
    _with_reason(approve, "approve")
    deny = _command(sub, "deny", "deny a pending approval (approver role)", _deny, True)
    _with_reason(deny, "deny")
    revoke = _command(
        sub,
        "revoke",
        "withdraw a pending or granted approval before it is used (requester or operator)",
        _revoke,
        True,
    )
    _with_reason(revoke, "revoke it")
    watch = _command(
        sub,
        "watch",
        "print the approval now and at every change, until a final state (denied, expired, "
        "revoked, consumed)",
        _watch,
    )
    watch.add_argument("approval_id")
    for action in watch._actions:
        if action.dest == "timeout":
            action.default = WATCH_TIMEOUT_SECONDS
            action.help = (
                f"seconds to watch before giving up (default {WATCH_TIMEOUT_SECONDS:g}, a day)"
            )


def _call(args: argparse.Namespace, fn: Callable[[ApprovalClient], T], context: str = "") -> T:
    """One call (or one stream, consumed inside ``fn``) through ``ApprovalClient``: the
    library's timeout, request ids and typed errors; a failure is one ``CliError`` line."""
    remote = Remote.of(args, SERVICE)
    with remote.client(ApprovalClient) as client:
        return remote.call(lambda: fn(client), context)


def _list(args: argparse.Namespace) -> int:
    found = _call(
        args, lambda client: list(client.list_all(args.tenant, args.state, page_size=1000))
    )
    reply = pb.ListApprovalsResponse(approvals=found)
    return emit(args, reply, lambda: render.approvals(found), found)


def _show(args: argparse.Namespace) -> int:
    request = pb.GetApprovalRequest(approval_id=args.approval_id)
    reply = _call(args, lambda client: client.get_approval(request))
    return emit(args, reply, lambda: render.detail(reply.approval))


def _decide(args: argparse.Namespace, approve: bool) -> int:
    request = pb.DecideApprovalRequest(
        approval_id=args.approval_id,
        decision=pb.APPROVAL_DECISION_APPROVE if approve else pb.APPROVAL_DECISION_DENY,
        reason=args.reason,
        request_id=args.request_id,
    )
    reply = _call(args, lambda client: client.decide_approval(request))
    return emit(args, reply, lambda: render.detail(reply.approval))


def _approve(args: argparse.Namespace) -> int:
    return _decide(args, approve=True)


def _deny(args: argparse.Namespace) -> int:
    return _decide(args, approve=False)


def _revoke(args: argparse.Namespace) -> int:
    request = pb.RevokeApprovalRequest(
        approval_id=args.approval_id, reason=args.reason, request_id=args.request_id
    )
    reply = _call(args, lambda client: client.revoke_approval(request))
    return emit(args, reply, lambda: render.detail(reply.approval))


def _watch(args: argparse.Namespace) -> int:
    """Each change as it arrives: a line (table), a ``WatchApprovalResponse`` document
    (``-o json``, one per change) or the approval on one line (``-o jsonl``)."""

    def run(client: ApprovalClient) -> None:
        for approval in client.watch(args.approval_id):
            if args.json:
                print_json(pb.WatchApprovalResponse(approval=approval))
            elif args.jsonl:
                sys.stdout.write(json_line(json_format.MessageToDict(approval)) + "\n")
            else:
                render.change(approval)
            sys.stdout.flush()

    _call(args, run, "watch")
    return 0
