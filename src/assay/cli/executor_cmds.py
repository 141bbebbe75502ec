"""``assay executor run`` and ``assay demo``: the component that acts, from the shell.

``executor run`` loads an evidence file and runs the loop for one target
against running services (``assay up``), within the side effects granted with
``--grant``; ``--case`` collects the gold labels of earlier human-review cases.
Its credential flags (``--ca``, ``--token-file``, …) go with every call to all
three services, so the run acts as one principal (enqueueing, collecting gold
labels and asking for approvals need ``operator``).

Approvals: a run that carries an identity (a token, or a client certificate)
asks the adjudication service's ApprovalService for a REQUIRES_APPROVAL
candidate, waits up to ``--approval-wait`` seconds for approvers to decide, and
acts only on a grant it consumed. ``--approve PROBE_KIND`` is the dev-mode
stand-in (approved by whoever runs the executor, never recorded in the ledger):
it is refused on a run with an identity, so the two never mix and a recorded
approval is never silently skipped. ``demo`` needs nothing running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from assay.runtime.config import env_float, env_str
from assay.v1 import plan_pb2

DEFAULT_APPROVAL_WAIT = 300.0
# The server's longest pending lifetime by default: a wait past it could not be requested.
MAX_APPROVAL_WAIT = 86_400.0
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
        help=(
            "dev mode only: approve a REQUIRES_APPROVAL probe kind locally, e.g. RERUN_TEST "
            "(repeatable). A local approval by whoever runs the executor, shown in the report "
            "but not recorded in the ledger; refused with a token or client certificate, "
            "where approvals go through the authenticated adjudication service"
        ),
    )
    run.add_argument(
        "--approval-wait",
        type=float,
        default=env_float("ASSAY_APPROVAL_WAIT", DEFAULT_APPROVAL_WAIT),
        metavar="SECONDS",
        help=(
            "how long to wait for approvers to decide a requested approval; the request "
            f"expires then (default {DEFAULT_APPROVAL_WAIT:g}; env ASSAY_APPROVAL_WAIT)"
        ),
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
    run.add_argument(
        "--spot-check-rate",
        type=float,
        default=0.0,
        metavar="RATE",
        help="send this share (0-1) of semantics that resolve to review anyway, as spot-check "
        "cases: gold labels not only from conflicts, for an unbiased calibration",
    )
    run.add_argument(
        "--observations",
        type=Path,
        default=env_str("ASSAY_OBSERVATIONS", "") or None,
        metavar="FILE",
        help="append each acquisition's latency, outcome, predicted discrimination and "
        "whether it changed the decision to FILE, one JSON line each, created 0600; the "
        "planner reads the same file (env ASSAY_OBSERVATIONS; docs/calibration.md)",
    )
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
    if not 0.0 <= args.spot_check_rate <= 1.0:
        raise CliError("--spot-check-rate must be in [0, 1]")
    if args.test_timeout <= 0 or args.timeout <= 0:
        raise CliError("--timeout and --test-timeout must be positive")
    if not 0 < args.approval_wait <= MAX_APPROVAL_WAIT:
        raise CliError(f"--approval-wait must be in (0, {MAX_APPROVAL_WAIT:g}] seconds")
    return Settings(
        subject=args.subject,
        predicate=args.predicate,
        granted=_names(args.grant, plan_pb2.SideEffectClass, "SIDE_EFFECT_CLASS_", "--grant"),
        approvals=_names(args.approve, plan_pb2.ProbeKind, "PROBE_KIND_", "--approve"),
        approval_wait=args.approval_wait,
        tenant=args.tenant,
        cases=tuple(args.case),
        max_iterations=args.max_iterations,
        spot_check_rate=args.spot_check_rate,
        observations=Path(args.observations) if args.observations else None,
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
    if settings.approvals and has_identity(credentials):
        raise CliError(
            "--approve is a local, dev-mode approval; this run carries an identity, so "
            "approvals go through the adjudication service's ApprovalService (drop --approve; "
            "an approver decides with `assay approval approve`)"
        )
    out = _console()
    quiet = args.output in ("json", "jsonl")
    listener = None if quiet else (lambda event: print_event(out, event))
    try:
        report = asyncio.run(_execute(args, settings, evidence, listener, credentials))
    except ValueError as error:
        # From the credentials: a token that would go out in plaintext, an unreadable file;
        # or an observations file others may write.
        raise CliError(str(error)) from None
    except OSError as error:
        raise CliError(f"cannot record an observation: {error}") from None
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
    from assay.client.approvals import AsyncApprovalClient
    from assay.executor.loop import Executor, Services

    timeout = args.timeout
    async with contextlib.AsyncExitStack() as stack:
        enter = stack.enter_async_context
        resolver = await enter(
            AsyncResolverClient(args.resolver, timeout=timeout, credentials=credentials)
        )
        planner = await enter(
            AsyncPlannerClient(args.planner, timeout=timeout, credentials=credentials)
        )
        adjudication = await enter(
            AsyncAdjudicationClient(args.adjudication, timeout=timeout, credentials=credentials)
        )
        approvals = None
        if has_identity(credentials):
            approvals = await enter(
                AsyncApprovalClient(args.adjudication, timeout=timeout, credentials=credentials)
            )
        services = Services(resolver, planner, adjudication, approvals)
        return await Executor(services, settings, listener).run(evidence)


def has_identity(credentials: Credentials | None) -> bool:
    """Whether the run presents who it is (a token or a client certificate): then the
    deployment authenticates, and approvals are asked for, never given locally."""
    if credentials is None:
        return False
    return bool(credentials.token or credentials.token_file or credentials.client_cert)


def _demo(args: argparse.Namespace) -> int:
    from assay.executor.demo import EXAMPLE, run_demo
    from assay.runtime.logging import configure_logging

    example = args.example or EXAMPLE
    if not example.is_file():
        raise CliError(f"{example}: example evidence not found (pass --example FILE)")
    # The services' per-RPC log lines would drown the walkthrough; errors still show.
    configure_logging("error")
    return asyncio.run(run_demo(_console(), example))
