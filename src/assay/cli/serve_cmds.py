"""``assay serve NAME`` and ``assay up``: host one service, or all of them, in this process.

``up`` is the one-command start: all services on their default ports (resolver 50051,
planner 50052, adjudication 50053), wired to each other, the adjudication data in a local
SQLite file. Both run until SIGTERM/SIGINT, then drain: health NOT_SERVING, in-flight calls
finish within the grace period, databases closed, exit 0; work still in a thread when the
grace is over does not hold the process. A failed start (a port in use, an unreadable
database) is one line naming what failed and exit code 1, with nothing left running.

Without security flags they serve in dev mode (plaintext, every caller holds every role),
allowed on loopback only and said in one warning line; ``serve_security`` turns the TLS and
authentication flags into settings. The HTTP console (``serve console``, and ``up`` unless
``--no-console``; flags in ``console_cmds``) runs on the same event loop, its port refused
before anything starts when taken, and stops on the same signal within the same grace.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.cli import console_cmds
from assay.cli.common import CliError
from assay.cli.serve_security import ServingSecurity, add_security_arguments, resolve_security
from assay.runtime import loop, tracing
from assay.runtime.config import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_HOST,
    DEFAULT_MAX_CONCURRENT_RPCS,
    DEFAULT_MAX_MESSAGE_BYTES,
    ConfigurationError,
    ServerConfig,
    env_float,
    env_int,
    env_optional_int,
    env_str,
)
from assay.runtime.database_url import DatabaseTarget, parse_database_url
from assay.runtime.gc_tuning import tune_for_serving
from assay.runtime.logging import configure_logging, get_logger
from assay.runtime.loop import LOOPS, resolve_loop
from assay.runtime.memory import fix_allocator_thresholds
from assay.runtime.server import (
    RunningService,
    ServiceSpec,
    close_specs,
    refuse_taken_port,
    run_until_signalled,
)
from assay.runtime.tls import dial_host
from assay.services.registry import (
    MAX_COLUMNS_BYTES,
    MAX_COLUMNS_RATIO,
    MAX_COLUMNS_ROWS,
    SERVICES,
    ServeOptions,
)

if TYPE_CHECKING:  # the console's modules load only when it is served
    from assay.console.observe import Observer
    from assay.console.server import RunningConsole
    from assay.console.settings import ConsoleSettings

DEFAULT_DB = "assay.db"
CONSOLE = "console"


def _int_flag(
    parser: argparse.ArgumentParser, flag: str, env: str, default: int, help: str, note: str = ""
) -> None:
    """An integer ``flag`` defaulting to environment variable ``env``, else ``default``; its
    help ends naming both (``note`` said after the default)."""
    parser.add_argument(
        flag,
        type=int,
        default=env_int(env, default),
        help=f"{help} (env {env}; default {default}{note})",
    )


def _add_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default=env_str("ASSAY_HOST", DEFAULT_HOST),
        help=f"interface to listen on (env ASSAY_HOST; default {DEFAULT_HOST})",
    )
    _int_flag(
        parser,
        "--max-message-bytes",
        "ASSAY_MAX_MESSAGE_BYTES",
        DEFAULT_MAX_MESSAGE_BYTES,
        "largest request or response accepted, in bytes",
        ", which fits 100,000 claims",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=env_float("ASSAY_GRACE_SECONDS", DEFAULT_GRACE_SECONDS),
        help="seconds in-flight calls get to finish on SIGTERM (env ASSAY_GRACE_SECONDS; "
        f"default {DEFAULT_GRACE_SECONDS:g})",
    )
    _int_flag(
        parser,
        "--max-concurrent-rpcs",
        "ASSAY_MAX_CONCURRENT_RPCS",
        DEFAULT_MAX_CONCURRENT_RPCS,
        "calls each service runs at once; more are refused at once with "
        "RESOURCE_EXHAUSTED and a retry delay, which the Assay clients honour",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=env_optional_int("ASSAY_METRICS_PORT"),
        help="serve Prometheus metrics on http://HOST:PORT/metrics, HOST being --host "
        "(env ASSAY_METRICS_PORT; default off; `up` serves all three services there)",
    )
    parser.add_argument(
        "--log-level",
        default=env_str("ASSAY_LOG_LEVEL", "info"),
        help="debug, info, warning or error (env ASSAY_LOG_LEVEL; default info)",
    )
    parser.add_argument(
        "--event-loop",
        choices=LOOPS,
        default=env_str("ASSAY_EVENT_LOOP", "auto"),
        help="asyncio loop to serve on (env ASSAY_EVENT_LOOP; default auto: uvloop when "
        "installed, else the standard loop)",
    )
    parser.add_argument(
        "--db",
        default=env_str("ASSAY_DB", DEFAULT_DB),
        help="adjudication database: a SQLite file (or sqlite:///PATH), or for replicas "
        "postgresql://user@host/db or a libpq 'host=… dbname=…' string (then "
        "--ledger-signing-key is required); anything else is refused "
        f"(env ASSAY_DB; default ./{DEFAULT_DB})",
    )
    parser.add_argument(
        "--reliability-table",
        default=env_str("ASSAY_RELIABILITY_TABLE", "") or None,
        help="JSON file replacing the resolver's reliability table (env ASSAY_RELIABILITY_TABLE)",
    )
    _int_flag(
        parser,
        "--columns-max-rows",
        "ASSAY_COLUMNS_MAX_ROWS",
        MAX_COLUMNS_ROWS,
        "rows one ResolveColumns stream may hold; more are refused with RESOURCE_EXHAUSTED",
    )
    _int_flag(
        parser,
        "--columns-max-bytes",
        "ASSAY_COLUMNS_MAX_BYTES",
        MAX_COLUMNS_BYTES,
        "bytes one ResolveColumns stream may decompress to",
    )
    _int_flag(
        parser,
        "--columns-max-ratio",
        "ASSAY_COLUMNS_MAX_RATIO",
        MAX_COLUMNS_RATIO,
        "times its own size one ResolveColumns stream may decompress to",
    )
    parser.add_argument(
        "--probes",
        default=env_str("ASSAY_PROBES", "") or None,
        help="TOML or JSON file of the planner's operator probe definitions, each replacing "
        "the built-in definition of its PROBE_KIND_* (env ASSAY_PROBES; docs/planner.md)",
    )
    parser.add_argument(
        "--observations",
        default=env_str("ASSAY_OBSERVATIONS", "") or None,
        help="the executor's observations file (assay executor run --observations): the "
        "planner ranks with each probe kind's observed latency and success rate once it "
        "holds enough, re-reading it when it changes (env ASSAY_OBSERVATIONS; "
        "docs/calibration.md)",
    )


def register(subparsers: Any) -> None:
    serve = subparsers.add_parser("serve", help="serve one service in the foreground")
    serve.add_argument(
        "service", choices=[*sorted(SERVICES), CONSOLE], help="which service (or the console)"
    )
    serve.add_argument("--port", type=int, default=None, help="port (default: the service's own)")
    serve.add_argument(
        "--resolver",
        default=env_str("ASSAY_RESOLVER_TARGET", "127.0.0.1:50051"),
        help="where the planner finds the resolver: any gRPC target, one address or several "
        "replicas balanced round_robin (dns:///resolver:50051, "
        "ipv4:10.0.0.5:50051,10.0.0.6:50051) (env ASSAY_RESOLVER_TARGET)",
    )
    _add_runtime_arguments(serve)
    add_security_arguments(serve, up=False)
    console_cmds.add_console_arguments(serve, up=False)
    serve.set_defaults(handler=_serve)

    up = subparsers.add_parser(
        "up",
        help="serve every service on its default port, wired together "
        "(ASSAY_<NAME>_PORT overrides one)",
    )
    _add_runtime_arguments(up)
    add_security_arguments(up, up=True)
    console_cmds.add_console_arguments(up, up=True)
    up.set_defaults(handler=_up)


def _config(args: argparse.Namespace, serving: ServingSecurity) -> ServerConfig:
    try:
        resolve_loop(args.event_loop)
    except ValueError as error:
        raise CliError(f"--event-loop: {error}") from None
    if args.max_message_bytes <= 0:
        raise CliError("--max-message-bytes must be positive")
    if args.grace < 0:
        raise CliError("--grace must not be negative")
    if args.max_concurrent_rpcs <= 0:
        raise CliError("--max-concurrent-rpcs must be positive")
    for flag in ("columns_max_rows", "columns_max_bytes", "columns_max_ratio"):
        if getattr(args, flag) <= 0:
            raise CliError(f"--{flag.replace('_', '-')} must be positive")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise CliError(f"--metrics-port {args.metrics_port} is not a valid port")
    return ServerConfig(
        host=args.host,
        max_message_bytes=args.max_message_bytes,
        grace_seconds=args.grace,
        tls=serving.security.tls,
        gate=serving.security.gate,
        max_concurrent_rpcs=args.max_concurrent_rpcs,
        metrics_port=args.metrics_port,
    )


async def _build(
    names: list[str],
    args: argparse.Namespace,
    ports: dict[str, int],
    resolver_target: str,
    serving: ServingSecurity,
) -> list[ServiceSpec]:
    security = serving.security
    specs = []
    for name in names:
        options = ServeOptions(
            port=ports[name],
            resolver_target=resolver_target,
            db_path=args.db,
            reliability_table=args.reliability_table,
            max_message_bytes=args.max_message_bytes,
            allow_fixture_reviewers=serving.allow_fixture_reviewers,
            reviewer_issuer=security.gate.reviewer_issuer,
            reviewer_subjects=security.gate.reviewer_subjects,
            resolver_tls=security.peer_tls,
            resolver_token_file=security.peer_token,
            ledger_signing_key=(Path(args.ledger_signing_key) if args.ledger_signing_key else None),
            probes_file=Path(args.probes) if args.probes else None,
            observations_file=Path(args.observations) if args.observations else None,
            columns_max_rows=args.columns_max_rows,
            columns_max_bytes=args.columns_max_bytes,
            columns_max_ratio=args.columns_max_ratio,
            approvals=security.gate.policy.approvals if security.gate.policy else {},
            review=security.gate.policy.review if security.gate.policy else {},
        )
        try:
            specs.append(await SERVICES[name].builder()(options))
        except BaseException as error:
            await close_specs(specs)  # what was built before it (an open database)
            if isinstance(error, ConfigurationError):  # like a bad flag: exit code 2
                raise CliError(f"cannot start {name}: {error}", exit_code=2) from None
            if isinstance(error, (OSError, ValueError)):
                raise CliError(f"cannot start {name}: {error}") from None
            raise
    return specs


def _announcer(
    database: DatabaseTarget | None,
    console: RunningConsole | None = None,
    observer: Observer | None = None,
) -> Callable[[list[RunningService]], None]:
    """The start lines: each service and its address; adjudication's names its database
    (engine and where, the password masked); the console's its address, last. The console's
    requests are counted in the services' metrics, once those exist."""

    def announce(running: list[RunningService]) -> None:
        for service in running:
            line = f"assay {service.spec.name} serving on {service.address}"
            if service.spec.name == "adjudication" and database is not None:
                line += f" (database: {database.describe()})"
            print(line, file=sys.stderr, flush=True)
        if console is not None:
            _announce_console(console)
        metrics = next((s.metrics for s in running if s.metrics is not None), None)
        if observer is not None and metrics is not None:
            observer.attach(metrics.registry)

    return announce


def _announce_console(console: RunningConsole) -> None:
    # Its own event: "serving" lines are the gRPC services' (transport, admission, loop).
    get_logger("assay.console").info("console_serving", address=console.address)
    print(f"assay console serving on {console.address}", file=sys.stderr, flush=True)


async def _start_console(
    settings: ConsoleSettings, grace: float, observer: Observer
) -> RunningConsole:
    from assay.console.server import start

    return await start(settings, grace, observer)


def _database(names: list[str], db: str) -> DatabaseTarget | None:
    """What ``--db`` names, when adjudication is served; a refusal is exit code 2, like a bad
    flag, before anything is opened."""
    if "adjudication" not in names:
        return None
    try:
        return parse_database_url(db)
    except ConfigurationError as error:
        raise CliError(str(error), exit_code=2) from None


def _refuse_taken_ports(
    host: str, ports: dict[str, int], metrics_port: int | None, console: ConsoleSettings | None
) -> None:
    """Before anything is opened, so a taken port is the one line printed (exit code 1)."""
    try:
        for name, port in ports.items():
            refuse_taken_port(host, port, name)
        if console is not None:
            if console.port and console.port in ports.values():
                raise OSError(f"--console-port {console.port} is a service's port")
            refuse_taken_port(host, console.port, CONSOLE)
        if metrics_port is not None:
            taken = [*ports.values(), *([console.port] if console else [])]
            if metrics_port and metrics_port in taken:
                raise OSError(f"--metrics-port {metrics_port} is a service's port")
            refuse_taken_port(host, metrics_port, "metrics")
    except OSError as error:
        raise CliError(str(error)) from None


def _run(
    names: list[str],
    args: argparse.Namespace,
    ports: dict[str, int],
    resolver_target: str,
    up: bool = False,
) -> int:
    serving = resolve_security(args, "planner" in names, resolver_target, up)
    config = _config(args, serving)
    database = _database(names, args.db)
    plan = console_cmds.ConsolePlan(None)
    if up:
        dial = dial_host(args.host)
        plan = console_cmds.for_up(args, serving, {n: f"{dial}:{p}" for n, p in ports.items()})
    configure_logging(args.log_level)
    _refuse_taken_ports(args.host, {n: ports[n] for n in names}, config.metrics_port, plan.settings)
    # Off unless the standard OTEL_* environment asks for it (see assay.runtime.tracing).
    tracing.configure_from_env("assay" if up else f"assay-{names[0]}")
    for warning in (*serving.warnings, *plan.warnings):
        print(f"assay: {warning}", file=sys.stderr, flush=True)

    async def main() -> None:
        specs = await _build(names, args, ports, resolver_target, serving)
        tune_for_serving()  # after start-up, so what it built is frozen out of collections
        fix_allocator_thresholds()  # large blocks go back to the OS from the first request on
        console, observer = None, None
        if plan.settings is not None:
            from assay.console.observe import Observer

            observer = Observer()
            try:
                console = await _start_console(plan.settings, config.grace_seconds, observer)
            except BaseException:
                await close_specs(specs)
                raise
        try:
            await run_until_signalled(
                specs,
                config,
                on_started=_announcer(database, console, observer),
                on_stopping=console.stop if console is not None else None,
            )
        except BaseException:  # the services did not start: neither does the console stay
            if console is not None:
                await console.stop()
            raise
        tracing.uninstall()  # sends the spans still buffered: the exit below would drop them
        _exit_now()

    try:
        loop.run(main(), args.event_loop)
    except OSError as error:  # "could not bind HOST:PORT for NAME: the port is in use"
        raise CliError(str(error)) from None
    return 0


def _exit_now() -> None:
    """End the process once serving is over: the servers are stopped, the databases closed
    and the log written. Work a call left running in a thread past the grace period (a long
    computation cannot be interrupted) would otherwise hold the exit until it finished, as
    the interpreter joins executor threads on the way out."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _serve_console(args: argparse.Namespace) -> int:
    """``assay serve console``: the console alone, until SIGTERM/SIGINT, then drained
    within the grace; its requests counted on ``--metrics-port`` when given."""
    port = args.console_port if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise CliError(f"--port {port} is not a valid port")
    if args.grace < 0:
        raise CliError("--grace must not be negative")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise CliError(f"--metrics-port {args.metrics_port} is not a valid port")
    try:
        resolve_loop(args.event_loop)
    except ValueError as error:
        raise CliError(f"--event-loop: {error}") from None
    settings = console_cmds.for_serve(args, port)
    configure_logging(args.log_level)
    _refuse_taken_ports(args.host, {}, args.metrics_port, settings)
    tracing.configure_from_env(f"assay-{CONSOLE}")
    if settings.dev_mode:
        print(f"assay: {console_cmds.DEV_MODE_WARNING}", file=sys.stderr, flush=True)
    config = ServerConfig(host=args.host, grace_seconds=args.grace)

    async def main() -> None:
        from assay.console.observe import Observer

        observer = Observer()
        metrics = None
        if args.metrics_port is not None:
            from assay.runtime.metrics import Metrics

            metrics = Metrics()
            await metrics.serve(args.host, args.metrics_port)
            observer.attach(metrics.registry)
        try:
            console = await _start_console(settings, args.grace, observer)
            _announce_console(console)
            await run_until_signalled([], config, on_stopping=console.stop)
        finally:
            if metrics is not None:
                await metrics.close()
        tracing.uninstall()
        _exit_now()

    try:
        loop.run(main(), args.event_loop)
    except OSError as error:  # "could not bind HOST:PORT for console: the port is in use"
        raise CliError(str(error)) from None
    return 0


def _serve(args: argparse.Namespace) -> int:
    if args.service == CONSOLE:
        return _serve_console(args)
    entry = SERVICES[args.service]
    port = entry.default_port if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise CliError(f"--port {port} is not a valid port")
    return _run([args.service], args, {args.service: port}, args.resolver)


def _up(args: argparse.Namespace) -> int:
    names = list(SERVICES)
    # ASSAY_<NAME>_PORT moves one service off its default port (e.g. when 50051 is taken).
    ports = {
        name: env_int(f"ASSAY_{name.upper()}_PORT", SERVICES[name].default_port) for name in names
    }
    # The planner calls the resolver started here; a wildcard --host is dialled as loopback.
    resolver_target = f"{dial_host(args.host)}:{ports['resolver']}"
    return _run(names, args, ports, resolver_target, up=True)
