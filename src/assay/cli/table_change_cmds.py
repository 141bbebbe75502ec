"""``assay calibrate request|apply``: a proposed reliability table, approved, then applied.

``request FILE`` asks ApprovalService to approve the table a proposal holds (its digest,
sources and the checkpoint it was calibrated at); approvers other than the requester
decide with ``assay approval approve``. ``apply FILE --approval ID --table PATH`` uses the
grant and puts the file where the resolver reads its table: the file is read once and
named as the resolver reads and names it (``assay.reliability_table``), written beside
PATH owner-only, the approval consumed for that digest (the server refuses another table, a used or
ungranted approval, naming why), and only then renamed over PATH, so a refusal leaves
PATH as it was. The APPROVAL_REQUESTED and APPROVAL_CONSUMED events carry the digest.
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

from assay.cli.common import (
    CliError,
    Remote,
    add_output_argument,
    add_target_argument,
    console,
    emit,
    emit_data,
)
from assay.cli.private_files import private_file
from assay.client import ApprovalClient
from assay.reliability_table import TableError, read_table, table_digest
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb

ADJUDICATION_TARGET = "127.0.0.1:50053"


def _table(path: str) -> tuple[str, dict[str, float], str]:
    """The file's text, the table the resolver would read from it and its digest (exit 2
    if none)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        table = read_table(path)
    except (OSError, UnicodeDecodeError, TableError) as error:
        raise CliError(f"{path}: not a reliability table ({error})", exit_code=2) from None
    return text, table, table_digest(table)


def _tree_size(text: str) -> int:
    """The checkpoint a calibration proposal was computed at; 0 for a plain table."""
    try:
        found = json.loads(text)["calibration"]["checkpoint"]["tree_size"]
    except (ValueError, KeyError, TypeError):
        return 0
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def _request(args: argparse.Namespace) -> int:
    text, table, digest = _table(args.file)
    change = adj.ReliabilityTableChange(
        table_digest=digest, sources=table, tree_size=_tree_size(text)
    )
    request = pb.RequestApprovalRequest(
        tenant=args.tenant,
        table_change=change,
        reason=args.reason,
        request_id=args.request_id or f"calibrate-{uuid.uuid4().hex}",
    )
    remote = Remote.of(args, "adjudication")
    with remote.client(ApprovalClient) as client:
        reply = remote.call(lambda: client.request_approval(request), "request")
    approval = reply.approval
    return emit(args, approval, lambda: console().print(approval.approval_id, markup=False))


def _current(path: Path) -> str:
    """The digest of the table PATH holds now ("none" when absent, "unreadable" if bad)."""
    if not path.exists():
        return "none"
    try:
        return table_digest(read_table(str(path)))
    except TableError:
        return "unreadable"


def _apply(args: argparse.Namespace) -> int:
    text, _, digest = _table(args.file)
    target = Path(args.table)
    old = _current(target)
    remote = Remote.of(args, "adjudication")
    use = pb.ConsumeApprovalRequest(
        approval_id=args.approval,
        candidate_digest=digest,
        request_id=args.request_id or f"apply-{uuid.uuid4().hex}",
    )
    try:
        with private_file(target) as sink, remote.client(ApprovalClient) as client:
            sink.write(text)  # renamed over PATH only once the approval is consumed
            remote.call(lambda: client.consume_approval(use), f"apply {args.approval}")
    except OSError as error:
        raise CliError(f"{target}: cannot write the table ({error})") from None
    data = {
        "approvalId": args.approval,
        "table": str(target),
        "oldDigest": old,
        "newDigest": digest,
    }

    def lines() -> None:
        out = console()
        out.print(f"applied {args.approval} to {target}", markup=False)
        out.print(f"old {old}", markup=False)
        out.print(f"new {digest}", markup=False)

    return emit_data(args, data, lines)


def register(calibrate: argparse.ArgumentParser) -> None:
    """``request`` and ``apply`` below ``calibrate`` (which, given neither, calibrates)."""
    commands = calibrate.add_subparsers(
        dest="calibrate_command", metavar="{request,apply}", required=False
    )
    request = commands.add_parser(
        "request", help="ask for approval to apply a proposed table (prints the approval id)"
    )
    request.add_argument("file", help="the proposal (or any table file the resolver loads)")
    request.add_argument("--tenant", required=True, help="the tenant the approval belongs to")
    request.add_argument("--reason", required=True, help="why the table should change")
    apply = commands.add_parser(
        "apply", help="use a granted approval: write the approved table where the resolver reads"
    )
    apply.add_argument("file", help="the approved proposal")
    apply.add_argument("--approval", required=True, help="the granted approval's id")
    apply.add_argument(
        "--table", required=True, help="the resolver's --reliability-table file to replace"
    )
    for parser, handler in ((request, _request), (apply, _apply)):
        add_target_argument(parser, "adjudication", ADJUDICATION_TARGET)
        parser.add_argument("--request-id", help="makes a retry safe (default: a fresh one)")
        add_output_argument(parser)
        parser.set_defaults(handler=handler)
