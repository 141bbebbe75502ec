"""``assay executor run`` and ``assay demo``: the component that acts, from the shell.

``executor run`` loads an evidence file and runs the loop for one target
against running services (``assay up``), within the side effects granted with
``--grant`` and the probes approved with ``--approve``; ``--case`` collects
the gold labels of earlier human-review cases. Its credential flags (``--ca``,
``--token-file``, …) go with every call to all three services, so the run acts
as one principal (enqueueing and collecting gold labels need ``operator``).
``demo`` needs nothing running.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

from rich.console import Console

from assay.cli.common import (
    EXIT_FAILED,
    EXIT_VERIFICATION_FAILED,
    CliError,
    add_credential_arguments,
    add_json_argument,
    credentials_from_args,
    describe_failure,
    emit_data,
    read_evidence,
    write_text,
)
from assay.client.builders import enum_number
from assay.client.credentials import Credentials
from assay.client.errors import AssayCallError, UnavailableError
from assay.runtime.config import env_str
from assay.v1 import plan_pb2

TARGETS = (
    ("resolver", "127.0.0.1:50051"),
    ("planner", "127.0.0.1:50052"),
    ("adjudication", "127.0.0.1:50053"),
)


def register(subparsers: Any) -> None:
    executor = subparsers.add_parser("executor", help="act on plans, within policy")
    actions = executor.add_subparsers(dest="executor_command", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run", help="resolve -> plan -> acquire -> re-resolve for one target, within policy"
    )
    run.add_argument(
        "file", help="evidence JSON ({claims: [...]}, a list, or a legacy bundle; '-': stdin)"
    )
    run.add_argument("--subject", required=True)
    run.add_argument("--predicate", required=True)
    run.add_argument(
        "--grant",
        action="append",
        default=[],
        metavar="SIDE_EFFECT",
        help="grant a side-effect class, e.g. FILESYSTEM_READ or VCS_READ (repeatable)",
    )
    run.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="PROBE_KIND",
        help="approve a REQUIRES_APPROVAL probe kind, e.g. RERUN_TEST (repeatable; recorded)",
    )
    run.add_argument("--artifact", type=Path, help="VERIFY_ARTIFACT_HASH: the file to hash")
    run.add_argument("--repo", type=Path, help="INSPECT_VCS_STATE: the git work tree")
    run.add_argument(
        "--vcs-field", default="head", choices=("head", "clean", "branch"), help="claim value"
    )
    run.add_argument("--test-command", help="RERUN_TEST: the command, e.g. 'pytest -q tests'")
    run.add_argument("--worktree", type=Path, help="RERUN_TEST: tree to copy (default: cwd)")
    run.add_argument("--test-timeout", type=float, default=120.0, help="seconds (default 120)")
    run.add_argument(
        "--case", action="append", default=[], help="collect this case's gold label (repeatable)"
    )
    run.add_argument("--tenant", default="default", help="tenant of enqueued cases")
    run.add_argument("--max-iterations", type=int, default=5)
    for service, default in TARGETS:
        env = f"ASSAY_{service.upper()}_TARGET"
        run.add_argument(f"--{service}", default=env_str(env, default), help=f"address (env {env})")
    run.add_argument("--timeout", type=float, default=30.0, help="seconds per call")
    run.add_argument(
        "--write-evidence", type=Path, help="write the final evidence here ('-': stdout)"
    )
    add_json_argument(run)
    add_credential_arguments(run)
    run.set_defaults(handler=_run)

    demo = subparsers.add_parser(
        "demo", help="start all three services in-process and walk the whole loop on example data"
    )
    demo.add_argument(
        "--example", type=Path, help="evidence file to walk (default: the shipped example)"
    )
    demo.set_defaults(handler=_demo)


def _console() -> Console:
    # Soft wrap: a step is one logical line, piped or not; the terminal wraps it if it must.
    # No emoji codes: a ``:name:`` in a probe's detail is data, printed as written.
    return Console(highlight=False, emoji=False, soft_wrap=True)


def _names(values: list[str], wrapper: Any, prefix: str, flag: str) -> frozenset[str]:
    names = set()
    for value in values:
        try:
            number = enum_number(wrapper, value, prefix)
        except ValueError:
            raise CliError(f"{flag} {value!r}: not a known {prefix.rstrip('_')} name") from None
        names.add(wrapper.Name(number).removeprefix(prefix))
    return frozenset(names)


def _settings(args: argparse.Namespace) -> Any:
    from assay.executor.model import ProbeSetup, Settings

    if args.max_iterations < 1:
        raise CliError("--max-iterations must be at least 1")
    if args.test_timeout <= 0 or args.timeout <= 0:
        raise CliError("--timeout and --test-timeout must be positive")
    return Settings(
        subject=args.subject,
        predicate=args.predicate,
        granted=_names(args.grant, plan_pb2.SideEffectClass, "SIDE_EFFECT_CLASS_", "--grant"),
        approvals=_names(args.approve, plan_pb2.ProbeKind, "PROBE_KIND_", "--approve"),
        tenant=args.tenant,
        cases=tuple(args.case),
        max_iterations=args.max_iterations,
        probes=ProbeSetup(
            artifact=args.artifact,
            repo=args.repo,
            vcs_field=args.vcs_field,
            test_command=tuple(shlex.split(args.test_command or "")),
            worktree=args.worktree,
            test_timeout=args.test_timeout,
        ),
    )


def _run(args: argparse.Namespace) -> int:
    from assay.executor.render import print_event, print_summary, report_dict

    settings = _settings(args)
    evidence = read_evidence(args.file)
    credentials = credentials_from_args(args)
    out = _console()
    quiet = args.output in ("json", "jsonl")
    listener = None if quiet else (lambda event: print_event(out, event))
    try:
        report = asyncio.run(_execute(args, settings, evidence, listener, credentials))
    except ValueError as error:
        # From the credentials: a token that would go out in plaintext, an unreadable file.
        raise CliError(str(error)) from None
    except UnavailableError as error:
        hint = "" if credentials and credentials.uses_tls else "; if they serve TLS, give --ca"
        raise CliError(
            f"a service is not reachable (is `assay up` running?{hint}): {error}"
        ) from None
    except AssayCallError as error:
        raise CliError(
            describe_failure(
                "",
                "",
                error.code,
                error.message,
                error.reason,
                error.violations,
                tls=credentials is not None and credentials.uses_tls,
            ),
            EXIT_VERIFICATION_FAILED if error.code.name == "DATA_LOSS" else EXIT_FAILED,
        ) from None
    if args.write_evidence is not None:
        from google.protobuf import json_format

        data = json_format.MessageToDict(report.evidence)
        write_text(args.write_evidence, json.dumps(data, indent=2) + "\n")
    # ``-o json``: the report with camelCase keys, as every other command's proto JSON.
    return emit_data(args, report_dict(report), lambda: print_summary(out, report))


async def _execute(
    args: argparse.Namespace,
    settings: Any,
    evidence: Any,
    listener: Any,
    credentials: Credentials | None,
) -> Any:
    from assay.client import AsyncAdjudicationClient, AsyncPlannerClient, AsyncResolverClient
    from assay.executor.loop import Executor, Services

    timeout = args.timeout
    async with (
        AsyncResolverClient(args.resolver, timeout=timeout, credentials=credentials) as resolver,
        AsyncPlannerClient(args.planner, timeout=timeout, credentials=credentials) as planner,
        AsyncAdjudicationClient(
            args.adjudication, timeout=timeout, credentials=credentials
        ) as adjudication,
    ):
        services = Services(resolver, planner, adjudication)
        return await Executor(services, settings, listener).run(evidence)


def _demo(args: argparse.Namespace) -> int:
    from assay.executor.demo import EXAMPLE, run_demo
    from assay.runtime.logging import configure_logging

    example = args.example or EXAMPLE
    if not example.is_file():
        raise CliError(f"{example}: example evidence not found (pass --example FILE)")
    # The services' per-RPC log lines would drown the walkthrough; errors still show.
    configure_logging("error")
    return asyncio.run(run_demo(_console(), example))
