"""Entry point of the ``assay`` command.

Each group of subcommands lives in its own module exposing
``register(subparsers)``; this module only assembles them, adds each command's
example to its ``--help`` (``examples``), and turns the failures a user can cause
(no server, bad JSON, an invalid claim) into one clear line on stderr and a
documented exit code (``common.EXIT_CODES_HELP``, docs/cli.md), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# gRPC's core reads this once, when grpc is first imported: without it a failed TLS
# handshake also prints a core log line, and an error must stay one line. A value the
# user set wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from assay import __version__
from assay.cli.common import EXIT_CODES_HELP, EXIT_INTERRUPTED, CliError, configure_output
from assay.cli.examples import add_examples

CONVENTIONS_HELP = """output and files:
  every command that prints results takes -o table|wide|json|jsonl (--json and
  --jsonl are short for -o json and -o jsonl); tables never cut an id; a file
  argument of '-' is standard input (or, for an output file, standard output)"""

# One module per group of subcommands; each exposes ``register(subparsers)``.
COMMAND_MODULES = (
    "assay.cli.serve_cmds",
    "assay.cli.credentials_cmds",
    "assay.cli.resolver_cmds",
    "assay.cli.planner_cmds",
    "assay.cli.adjudication_cmds",
    "assay.cli.approval_cmds",
    "assay.cli.executor_cmds",
    "assay.cli.completion_cmds",
    "assay.cli.login_cmds",
    "assay.cli.calibration_cmds",
    "assay.cli.db_cmds",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assay",
        description="Assay: evidence resolution, acquisition planning and adjudication.",
        epilog=EXIT_CODES_HELP + "\n\n" + CONVENTIONS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"assay {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    add_examples(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_output(args)
    try:
        code: int = args.handler(args)
    except CliError as error:
        print(f"assay: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


if __name__ == "__main__":
    sys.exit(main())
