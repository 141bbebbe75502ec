"""``assay db migrate --from sqlite:///PATH --to postgresql://…``: move a corpus to PostgreSQL.

The copy and its checks are adjudication's (reached through the registry): the target must
be empty, every table is copied in one transaction, and it commits only once the chain
verifies on the target and the transparency tree over the target's ledger is consistent
with the tree over the source's (same size, same root), so a checkpoint an auditor saved
from the SQLite server verifies against the PostgreSQL one. This prints the rows copied per
table and both trees, never a row's content, and reminds the operator that the PostgreSQL
server must sign with the same ledger key (``--ledger-signing-key``). Exit 1: refused (a
source not at this schema version or in use, a non-empty target); exit 2: a URL that
names no database (as ``--db``'s); exit 3: the
copy did not verify and was rolled back.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from assay.cli.common import (
    EXIT_VERIFICATION_FAILED,
    CliError,
    add_output_argument,
    emit_data,
    usage_error,
)
from assay.runtime.config import ConfigurationError
from assay.runtime.database_move import MoveRefused, MoveReport, MoveUnverified
from assay.runtime.database_url import parse_database_url
from assay.services.registry import move_sqlite_to_postgres


def register(subparsers: Any) -> None:
    db = subparsers.add_parser("db", help="move the adjudication database between engines")
    sub = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    migrate = sub.add_parser(
        "migrate",
        help="copy a SQLite corpus (ledger included) into an empty PostgreSQL database, "
        "verified before it is committed",
    )
    migrate.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="SQLITE",
        help="the SQLite file (a path or sqlite:///PATH); no server may have it open",
    )
    migrate.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="POSTGRESQL",
        help="an empty PostgreSQL database (postgresql://… or a libpq key=value string)",
    )
    add_output_argument(migrate)
    migrate.set_defaults(handler=_migrate)


def _migrate(args: argparse.Namespace) -> int:
    for flag, value in (("--from", args.source), ("--to", args.target)):
        try:
            parse_database_url(value)
        except ConfigurationError as error:  # worded for --db: name this command's flag
            raise usage_error(str(error).replace("--db", flag, 1)) from None
    try:
        report = asyncio.run(move_sqlite_to_postgres(args.source, args.target))
    except MoveRefused as error:
        raise CliError(str(error)) from None
    except MoveUnverified as error:
        raise CliError(f"not migrated: {error}", EXIT_VERIFICATION_FAILED) from None
    return emit_data(args, _data(report), lambda: _print(report))


def _data(report: MoveReport) -> dict[str, Any]:
    return {
        "schemaVersion": report.schema_version,
        "tables": dict(report.tables),
        "source": {"treeSize": report.source_size, "rootHash": report.source_root},
        "target": {"treeSize": report.target_size, "rootHash": report.target_root},
        "consistent": True,
        "ledgerKey": report.key_file,
    }


def _print(report: MoveReport) -> None:
    print(f"copied (schema version {report.schema_version}), in one transaction:")
    for table, count in report.tables:
        print(f"  {table:<18} {count:>10} rows")
    print("audit chain verified on the target")
    print(f"source log: tree size {report.source_size}, root {report.source_root}")
    print(f"target log: tree size {report.target_size}, root {report.target_root}")
    print("consistent: checkpoints saved from the SQLite server verify against the new one")
    state = "" if report.key_exists else " (not found: use the key the SQLite server signed with)"
    print(
        f"keep signing with the same ledger key: serve the PostgreSQL database with "
        f"--ledger-signing-key {report.key_file}{state}"
    )
