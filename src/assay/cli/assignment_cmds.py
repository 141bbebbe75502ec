"""``assay case assign`` and ``assay case unassign``: their arguments, requests and table.

``assign CASE... --to r1,r2 [--rule each|round-robin|least-loaded] [--per-case N]`` gives
every reviewer every case (``each``, the default), or N of them per case in turn or to
the least loaded (0: each case's required reviews). ``unassign CASE --reviewer r [--to
r2]`` takes reviewers off a case, or replaces them. Both print each case's assignment after.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rich.table import Table

from assay.cli.common import print_table, usage_error
from assay.client import assignment_builders
from assay.v1 import adjudication_service_pb2 as pb


def _ids(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_assign_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("case_ids", nargs="+", metavar="CASE", help="1 to 1,000 case ids")
    parser.add_argument(
        "--to",
        required=True,
        help="the reviewers (or the pool), comma-separated: registered HUMAN reviewers",
    )
    parser.add_argument(
        "--rule",
        choices=list(assignment_builders.RULES),
        default="each",
        help="each: every reviewer gets every case (the default); round-robin: the next "
        "--per-case reviewers in turn; least-loaded: those with the fewest open cases",
    )
    parser.add_argument(
        "--per-case",
        type=int,
        default=0,
        help="reviewers per case for round-robin and least-loaded (0: the case's required reviews)",
    )


def add_unassign_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("case_id", metavar="CASE")
    parser.add_argument(
        "--reviewer",
        required=True,
        help="the assigned reviewer(s) to take off the case, comma-separated",
    )
    parser.add_argument(
        "--to", default="", help="reviewer(s) to assign in their place, comma-separated"
    )


def assign_request(args: argparse.Namespace, request_id: str) -> pb.AssignCasesRequest:
    reviewers = _ids(args.to)
    if not reviewers:
        raise usage_error("--to names no reviewer")
    return assignment_builders.assign_request(
        args.case_ids, reviewers, args.rule, args.per_case, request_id
    )


def unassign_request(args: argparse.Namespace, request_id: str) -> pb.UnassignCaseRequest:
    removed = _ids(args.reviewer)
    if not removed:
        raise usage_error("--reviewer names no reviewer")
    return assignment_builders.unassign_request(args.case_id, removed, _ids(args.to), request_id)


def table(found: Sequence[pb.CaseAssignment]) -> None:
    """One line per case: who it is assigned to now."""
    rows = Table("case", "assigned")
    for assignment in found:
        rows.add_row(assignment.case_id, ", ".join(assignment.reviewer_ids) or "-")
    print_table(rows)
