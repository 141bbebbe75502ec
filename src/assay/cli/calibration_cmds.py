"""``assay calibrate``: each source kind's reliability checked against frozen gold labels,
and a proposed reliability table written owner-only for the resolver's
``--reliability-table``. Applying it is a deliberate, separate step through an approval:
``assay calibrate request`` and ``assay calibrate apply`` (``table_change_cmds``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from assay.cli import table_change_cmds
from assay.cli.common import (
    CliError,
    Remote,
    add_output_argument,
    add_target_argument,
    console,
    emit,
    print_table,
)
from assay.cli.private_files import write_private
from assay.client.adjudication import AdjudicationClient
from assay.client.resolver import ResolverClient
from assay.reliability_table import TableError, read_table
from assay.runtime.config import env_str
from assay.safe_text import text
from assay.v1 import adjudication_service_pb2 as pb

ADJUDICATION_TARGET = "127.0.0.1:50053"
RESOLVER_TARGET = "127.0.0.1:50051"


def _declared(args: argparse.Namespace) -> dict[str, float]:
    """The table to check: ``--declared FILE`` (the ``--reliability-table`` format), else
    the resolver's, asked with the same credentials."""
    if args.declared is not None:
        try:
            return read_table(args.declared)
        except TableError as error:
            raise CliError(f"--declared: not a reliability table ({error})") from None
    resolver = Remote(
        "resolver", args.resolver, Remote.of(args, "adjudication").credentials, args.timeout
    )
    with resolver.client(ResolverClient) as client:
        policy = resolver.call(lambda: client.get_resolver_policy())
    return {row.source: row.reliability for row in policy.reliability_table}


def _shown(figure: pb.CalibrationFigure) -> str:
    if figure.status != pb.AGREEMENT_STATUS_COMPUTED:
        return f"insufficient ({figure.count})"
    mark = " *" if figure.declared_outside else ""
    return (
        f"{figure.posterior_mean:.3f} [{figure.ci_lower:.3f}, {figure.ci_upper:.3f}] "
        f"n={figure.count}{mark}"
    )


def _print(reply: pb.CalibrateReliabilityResponse) -> None:
    out = console()
    synthetic = " (SYNTHETIC labels used)" if reply.synthetic else ""
    table = Table(title=f"reliability at checkpoint {reply.tree_size}{synthetic}")
    for column in ("source kind", "declared", "spot-check", "conflict-only", "proposed"):
        table.add_column(column)
    for s in reply.sources:
        table.add_row(
            text(s.source_kind),
            f"{s.declared:.2f}",
            _shown(s.spot_check),
            _shown(s.conflict_only),
            f"{s.proposed:.4g} ({s.proposal_reason.lower()})",
        )
    print_table(table, out)
    used = reply.spot_check_labels + reply.conflict_labels
    share = f"{reply.conflict_labels / used:.0%}" if used else "-"
    out.print(
        f"labels: {reply.spot_check_labels} spot-check, {reply.conflict_labels} from conflicts "
        f"({share} from conflicts: that figure is biased low); "
        f"{reply.synthetic_labels_left_out} synthetic left out, "
        f"{reply.labels_without_claims} without claims, "
        f"{reply.labels_without_value} without a value, "
        f"{reply.labels_frozen_later} frozen after the checkpoint"
    )
    if reply.unknown_source_kinds:
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(reply.unknown_source_kinds.items()))
        out.print(text(f"claims of kinds not in the table, left out: {kinds}"))
    out.print("* the declared value lies outside the 95% interval")


def _calibrate(args: argparse.Namespace) -> int:
    if args.min_count < 0 or args.at < 0:
        raise CliError("--min-count and --at must not be negative", exit_code=2)
    request = pb.CalibrateReliabilityRequest(
        tenant=args.tenant,
        declared=_declared(args),
        include_synthetic=args.synthetic,
        min_count=args.min_count,
        tree_size=args.at,
    )
    remote = Remote.of(args, "adjudication")
    with remote.client(AdjudicationClient) as client:
        reply = remote.call(lambda: client.calibrate_reliability(request))
    if args.propose is not None:
        write_private(Path(args.propose), reply.proposal.decode("ascii"))
    return emit(args, reply, lambda: _print(reply))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="check each source kind's declared reliability against frozen gold labels, "
        "and propose a table",
    )
    add_target_argument(parser, "adjudication", ADJUDICATION_TARGET)
    parser.add_argument(
        "--resolver",
        default=env_str("ASSAY_RESOLVER_TARGET", RESOLVER_TARGET),
        help="where to read the table in use (env ASSAY_RESOLVER_TARGET; default "
        f"{RESOLVER_TARGET}), unless --declared names a file",
    )
    parser.add_argument("--declared", help="a reliability table file to check instead")
    parser.add_argument("--tenant", default="", help="one of your tenants (default: all)")
    parser.add_argument(
        "--synthetic", action="store_true", help="count synthetic labels too (marked)"
    )
    parser.add_argument(
        "--min-count", type=int, default=0, help="checked claims for a number (default 10)"
    )
    parser.add_argument(
        "--at", type=int, default=0, help="the checkpoint's tree size (default: now)"
    )
    parser.add_argument(
        "--propose",
        metavar="FILE",
        help="write the proposed table (the --reliability-table format, with its evidence)",
    )
    add_output_argument(parser)
    parser.set_defaults(handler=_calibrate)
    table_change_cmds.register(parser)
