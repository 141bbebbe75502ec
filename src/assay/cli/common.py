"""What every ``assay`` subcommand shares: the target and credential flags, a client of
``assay.client`` on the command's channel, turning a failed call into one readable line,
the exit codes, ``-`` for standard input and output, and printing results as a table
or JSON (``-o table|wide|json|jsonl``).

Whatever a table or a line shows of stored or server-provided text goes through
``assay.safe_text`` first: ``print_table`` makes every plain-string cell an inert ``Text``,
lines written as markup interpolate data through ``safe_text.markup``, and an error line
is made printable in ``CliError``. Times are shown as RFC 3339 in UTC (``shown_time``).

Credentials (``--token``/``--token-file``, ``--ca``, ``--client-cert``/``--client-key``,
each with an ``ASSAY_…`` twin) become one ``assay.client.Credentials``; the channel
carries them, so no command handles a token itself, and none ever prints one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf import message as pb_message
from rich.console import Console
from rich.table import Table

from assay import safe_text
from assay.cli import table_render
from assay.client.credentials import Credentials
from assay.client.errors import AssayCallError
from assay.client.evidence import EvidenceFormatError, evidence_from_json, load_evidence_file
from assay.runtime.status import decode_rpc_error
from assay.v1 import claim_pb2

DEFAULT_TIMEOUT_SECONDS = 30.0

T = TypeVar("T")
C = TypeVar("C")

# Exit codes. A script tells "I called it wrongly" (2, argparse's own code) from "it could
# not be done" (1) from "it was done, and the data is not what it should be" (3): a failed
# verification must never look like a typo in a flag, nor like a server that was down.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_VERIFICATION_FAILED = 3
# `assay resolve` only: the call succeeded, and what it found is not settled. A CI job gates
# on these: 4 when a resolution requires human review (a safety-sensitive predicate in
# conflict), 5 when none does but one is conflicted or insufficient.
EXIT_REQUIRES_REVIEW = 4
EXIT_UNSETTLED = 5
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = """exit codes:
  0    success
  1    the command failed: a service refused the request, failed or was not
       reachable, or a file could not be read or was not what the command takes
  2    usage: the command line is wrong (unknown flag, missing argument, flags
       that do not go together), or `assay serve`/`up` settings cannot work
  3    verification failed: the data is not what it should be (a broken audit
       chain, a ledger that does not extend a saved checkpoint, an export whose
       records or proofs do not check, a server reporting DATA_LOSS)
  4    `assay resolve`: a resolution requires human review
  5    `assay resolve`: none requires review, but one is CONFLICTED or
       INSUFFICIENT
  130  interrupted (Ctrl-C)"""


class CliError(Exception):
    """A failure the user can act on: printed as one line, exit code 1 (or ``exit_code``).

    The line often quotes what a server or a file said, so it is made printable here."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(safe_text.printable(message))
        self.exit_code = exit_code


def usage_error(message: str) -> CliError:
    """A command line the command cannot use (flags that do not go together): exit 2."""
    return CliError(message, EXIT_USAGE)


def add_target_argument(parser: argparse.ArgumentParser, service: str, default: str) -> None:
    """``--target host:port`` (env ``ASSAY_<SERVICE>_TARGET``), ``--timeout`` and the
    credential flags."""
    from assay.cli.signin import context_target
    from assay.runtime.config import env_str

    env = f"ASSAY_{service.upper()}_TARGET"
    parser.add_argument(
        "--target",
        # The current context's target (``assay context``) stands in for the default.
        default=env_str(env, context_target(service) or default),
        help=f"the {service} service address (env {env}; default {default})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        help=f"seconds to wait for an answer (default {DEFAULT_TIMEOUT_SECONDS:g})",
    )
    add_credential_arguments(parser)


def add_credential_arguments(parser: argparse.ArgumentParser) -> None:
    """How the command proves who it is and trusts the server; each flag has an env twin.

    Defaults are resolved in ``credentials_from_args``, not here, so a token from the
    environment never sits in a parser default that ``--help`` could show."""
    group = parser.add_argument_group(
        "credentials", "for servers with TLS and authentication on (e.g. `--credentials DIR`)"
    )
    group.add_argument(
        "--token",
        help="bearer token to send (env ASSAY_TOKEN); a command line is visible to other "
        "local users, so prefer --token-file",
    )
    group.add_argument(
        "--token-file",
        type=Path,
        help="file holding the bearer token, read again when it changes (env ASSAY_TOKEN_FILE)",
    )
    group.add_argument(
        "--ca",
        type=Path,
        help="CA certificate (PEM) the server's certificate must chain to; turns TLS on "
        "(env ASSAY_CA)",
    )
    group.add_argument(
        "--client-cert",
        type=Path,
        help="client certificate (PEM) for mutual TLS, with --client-key (env ASSAY_CLIENT_CERT)",
    )
    group.add_argument(
        "--client-key",
        type=Path,
        help="the client certificate's private key (PEM) (env ASSAY_CLIENT_KEY)",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        default=None,
        help="TLS trusting the system's CA roots (implied by --ca and --client-cert; "
        "env ASSAY_TLS=1)",
    )
    group.add_argument(
        "--server-name",
        help="with TLS, the name the server's certificate must carry when the target lists "
        "addresses of several hosts (ipv4:A:PORT,B:PORT) (env ASSAY_SERVER_NAME)",
    )


def _env(name: str) -> str | None:
    return os.environ.get(name, "").strip() or None


def _from_context(with_token: bool) -> tuple[Path | None, Path | None]:
    """The current context's token file (when wanted) and CA (``assay context``, ``login``)."""
    from assay.cli import signin

    try:
        return signin.context_credentials(with_token)
    except signin.SignInError as error:
        raise CliError(str(error)) from None


def credentials_from_args(args: argparse.Namespace) -> Credentials | None:
    """The credentials the flags and their ``ASSAY_…`` twins give (None: none at all).

    A flag beats its environment variable; a token given one way (flag or environment)
    makes the other kind of token from the environment not apply, so ``--token-file``
    overrides an exported ``ASSAY_TOKEN``."""
    from assay.runtime.config import env_bool

    token: str | None = getattr(args, "token", None)
    token_file: Path | None = getattr(args, "token_file", None)
    if token is not None and token_file is not None:
        raise CliError("give --token or --token-file, not both")
    if token is None and token_file is None:
        env_token, env_file = _env("ASSAY_TOKEN"), _env("ASSAY_TOKEN_FILE")
        if env_token is not None and env_file is not None:
            raise CliError("ASSAY_TOKEN and ASSAY_TOKEN_FILE are both set; unset one")
        token, token_file = env_token, Path(env_file) if env_file else None
    given_token = token is not None or token_file is not None
    context_token, context_ca = _from_context(with_token=not given_token)
    token_file = token_file if given_token else context_token

    def path(flag: str, env: str) -> Path | None:
        given: Path | None = getattr(args, flag, None)
        from_env = _env(env)
        return given if given is not None else (Path(from_env) if from_env else None)

    ca = path("ca", "ASSAY_CA") or context_ca
    client_cert = path("client_cert", "ASSAY_CLIENT_CERT")
    client_key = path("client_key", "ASSAY_CLIENT_KEY")
    flag_tls = getattr(args, "tls", None)
    tls = bool(flag_tls) if flag_tls is not None else env_bool("ASSAY_TLS")
    server_name: str | None = getattr(args, "server_name", None) or _env("ASSAY_SERVER_NAME")
    if not (token or token_file or ca or client_cert or client_key or tls):
        return None
    try:
        return Credentials(
            token=token,
            token_file=token_file,
            ca=ca,
            client_cert=client_cert,
            client_key=client_key,
            tls=tls,
            server_name=server_name,
        )
    except ValueError as error:
        raise CliError(f"credentials: {error}") from None


OUTPUTS = ("table", "wide", "json", "jsonl")


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    """``-o table|wide|json|jsonl``, with ``--json`` and ``--jsonl`` as its aliases.

    table: fitted to the terminal, ids whole (other columns wrap); wide: every row on one
    line and digests whole; json: the response as one proto JSON document (enums by name);
    jsonl: one compact JSON document per line, one per item when the result is a list."""
    group = parser.add_argument_group("output")
    choice = group.add_mutually_exclusive_group()
    choice.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default="table",
        help="table (default), wide (no wrapping or shortening), json, or jsonl",
    )
    choice.add_argument(
        "--json", dest="output", action="store_const", const="json", help="same as -o json"
    )
    choice.add_argument(
        "--jsonl", dest="output", action="store_const", const="jsonl", help="same as -o jsonl"
    )


# The older name: every command that prints results takes the whole output choice.
add_json_argument = add_output_argument

# Set once per run by ``configure_output``: rendering functions ask ``console()`` and
# ``short()``, so they need not thread the choice through every call.
_wide = False


def configure_output(args: argparse.Namespace) -> None:
    """Derive ``args.json``/``args.jsonl`` from ``-o`` (commands test them) and apply
    ``-o wide`` to the console."""
    global _wide
    output = getattr(args, "output", None) or "table"
    args.output = output
    args.json = output == "json"
    args.jsonl = output == "jsonl"
    _wide = output == "wide"


def short(digest: str, keep: int = 19) -> str:
    """A digest shortened for a table (``sha256:1f2e…``); whole with ``-o wide``."""
    if _wide or len(digest) <= keep:
        return digest
    return digest[:keep] + "…"


def json_line(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def emit(
    args: argparse.Namespace,
    message: pb_message.Message,
    table: Callable[[], None],
    items: Sequence[pb_message.Message] | None = None,
) -> int:
    """Print a result the way ``-o`` says: ``table()`` for table and wide, the message as
    proto JSON, or JSON Lines (one line per item of ``items``, else the message)."""
    output = getattr(args, "output", "table")
    if output == "json":
        print_json(message)
    elif output == "jsonl":
        for item in items if items is not None else [message]:
            sys.stdout.write(json_line(json_format.MessageToDict(item)) + "\n")
    else:
        table()
    return EXIT_OK


def emit_data(args: argparse.Namespace, data: Any, text: Callable[[], None]) -> int:
    """``emit`` for a result that is plain data, not a message (local verifications)."""
    output = getattr(args, "output", "table")
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif output == "jsonl":
        sys.stdout.write(json_line(data) + "\n")
    else:
        text()
    return EXIT_OK


@contextmanager
def channel(target: str, credentials: Credentials | None = None) -> Iterator[grpc.Channel]:
    """A channel with the client library's options: TLS and the bearer token when
    ``credentials`` say so, the servers' message-size limit, and service-config retries of
    UNAVAILABLE for retry-safe RPCs (every mutating command sends a ``request_id``, so a
    retried mutation is recognised and answered once)."""
    from assay.client.channel import sync_channel
    from assay.runtime.config import ServerConfig
    from assay.v1 import (
        adjudication_service_pb2,
        approval_service_pb2,
        planner_service_pb2,
        resolver_service_pb2,
    )

    services = [
        service
        for module in (
            resolver_service_pb2,
            planner_service_pb2,
            adjudication_service_pb2,
            approval_service_pb2,
        )
        for service in module.DESCRIPTOR.services_by_name.values()
    ]
    try:
        ch = sync_channel(target, services, credentials, ServerConfig.from_env().max_message_bytes)
    except ValueError as error:
        # A token that would go out in plaintext, an unreadable CA or token file.
        raise CliError(str(error)) from None
    with ch:
        yield ch


@dataclass(frozen=True)
class Remote:
    """One service as a command reaches it: its address, the credentials from the flags,
    and the two things a command does with them (open a channel, make a call)."""

    service: str
    target: str
    credentials: Credentials | None = None
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def of(cls, args: argparse.Namespace, service: str) -> Remote:
        """The service at ``--target``, with the command's credential flags and ``--timeout``."""
        timeout = getattr(args, "timeout", None) or DEFAULT_TIMEOUT_SECONDS
        return cls(service, args.target, credentials_from_args(args), timeout)

    @property
    def tls(self) -> bool:
        return self.credentials is not None and self.credentials.uses_tls

    def channel(self) -> AbstractContextManager[grpc.Channel]:
        return channel(self.target, self.credentials)

    @contextmanager
    def client(self, factory: Callable[..., C]) -> Iterator[C]:
        """A client of ``assay.client`` (``ResolverClient``, ``AdjudicationClient``, …) on
        this command's channel, with ``--timeout`` as its default: its calls carry the
        library's timeout, retry-safe request ids and typed errors."""
        with self.channel() as ch:
            yield factory(ch, timeout=self.timeout)

    def call(self, fn: Callable[[], T], context: str = "") -> T:
        return call(self.service, self.target, fn, context, self.tls)


# What to do next, by reason, for a refused credential (one line, so a short hint).
_CREDENTIAL_HINTS = {
    "ERROR_REASON_CREDENTIALS_MISSING": "give --token-file or --token (env ASSAY_TOKEN_FILE, "
    "ASSAY_TOKEN)",
    "ERROR_REASON_CREDENTIALS_EXPIRED": "get a fresh token",
}
# gRPC's words for a failed TLS handshake, and for a TLS server hanging up on plaintext.
_TLS_WORDS = ("ssl", "tls", "handshake", "certificate")
_PLAINTEXT_TO_TLS = "socket closed"


def describe_failure(
    service: str,
    target: str,
    code: grpc.StatusCode,
    message: str,
    reason: str = "",
    violations: tuple[Any, ...] = (),
    context: str = "",
    tls: bool = False,
) -> str:
    """One line for a failed call: what happened, the status code and reason, and what
    to try when that is clear (start the service, give a token, trust the server's CA)."""
    prefix = f"{context}: " if context else ""
    tagged = f"{code.name}, {reason}" if reason else code.name
    who = f"the {service} service" if service else "a service"
    if code == grpc.StatusCode.UNAVAILABLE and not reason and target:
        lowered = message.lower()
        if tls and any(word in lowered for word in _TLS_WORDS):
            return (
                f"no TLS connection to the {service} service at {target} (does it serve TLS, "
                f"and does --ca hold the CA that signed its certificate?): {message} ({tagged})"
            )
        if not tls and _PLAINTEXT_TO_TLS in lowered:
            return (
                f"the {service} service at {target} closed the connection: it probably serves "
                f"TLS; give --ca (env ASSAY_CA) ({tagged})"
            )
        hint = "" if tls else "; if it serves TLS, give --ca"
        return (
            f"the {service} service at {target} is not reachable "
            f"(is it running? start it with `assay up`{hint})"
        )
    if code == grpc.StatusCode.UNAUTHENTICATED:
        hint = _CREDENTIAL_HINTS.get(reason, "check the token")
        return f"{prefix}not authenticated by {who}: {message} ({tagged}); {hint}"
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return f"{prefix}permission denied by {who}: {message} ({tagged})"
    fields = "; ".join(f"{v.field}: {v.description}" for v in violations)
    return f"{prefix}{fields or message} ({tagged})"


def call(service: str, target: str, fn: Callable[[], T], context: str = "", tls: bool = False) -> T:
    """Run one call; a failure (the client library's ``AssayCallError``, or a raw
    ``grpc.RpcError``) becomes a ``CliError`` naming the service, code, reason and fields,
    exit 3 when the server reports DATA_LOSS (its stored data failed a check), else 1."""
    try:
        return fn()
    except AssayCallError as error:
        code, message, reason, violations = (
            error.code,
            error.message,
            error.reason,
            error.violations,
        )
    except grpc.RpcError as error:
        decoded = decode_rpc_error(error)
        code, message, reason, violations = (
            decoded.code,
            decoded.message,
            decoded.reason,
            decoded.violations,
        )
    exit_code = EXIT_VERIFICATION_FAILED if code == grpc.StatusCode.DATA_LOSS else EXIT_FAILED
    line = describe_failure(service, target, code, message, reason, violations, context, tls)
    raise CliError(line, exit_code) from None


def to_json(message: pb_message.Message) -> str:
    """Proto JSON (camelCase, as grpcurl and the Node client print it), stable key order."""
    data = json_format.MessageToDict(message)
    return json.dumps(data, indent=2, sort_keys=True)


def print_json(message: pb_message.Message) -> None:
    sys.stdout.write(to_json(message) + "\n")


# Wide enough that no table is squeezed: with ``-o wide`` every row is one line.
_WIDE_COLUMNS = 100_000


def console() -> Console:
    """Where tables and lines go: no highlighting of numbers or paths and no ``:emoji:``
    codes (data must read as written), fitted to the terminal unless ``-o wide``."""
    return Console(
        highlight=False, emoji=False, soft_wrap=False, width=_WIDE_COLUMNS if _wide else None
    )


def is_wide() -> bool:
    """Whether ``-o wide`` was given: a command may show more columns."""
    return _wide


def print_table(table: Table, out: Console | None = None) -> None:
    """Print ``table`` fitted to the console (``table_render.fit``): every string cell
    inert data, ids whole, words unbroken where the terminal can hold them."""
    out = out or console()
    table_render.fit(table, out.width)
    out.print(table)


def shown_time(moment: datetime) -> str:
    """A time as every table shows it: RFC 3339 in UTC, to the second, ``Z``
    (``2026-01-01T12:00:00Z``); ``-o json`` keeps the exact value."""
    utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    return utc.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def stamp_time(stamp: Any) -> str:
    """A ``google.protobuf.Timestamp`` shown by ``shown_time`` ("" when unset)."""
    if not stamp.seconds and not stamp.nanos:
        return ""
    return shown_time(stamp.ToDatetime(tzinfo=UTC))


_MICROS = re.compile(r"-?[0-9]{1,19}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros_time(value: str) -> str:
    """An audit payload's ``*_time``, stored as microseconds since the epoch or spelled as
    RFC 3339 text with microseconds, shown by ``shown_time``; any other text (a time with
    no zone included) is returned as it is."""
    if not _MICROS.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        return shown_time(moment) if moment.tzinfo is not None else value
    try:
        return shown_time(_EPOCH + timedelta(microseconds=int(value)))
    except OverflowError:
        return value


def id_columns(table: Table, *names: str) -> Table:
    """Mark the columns headed ``names`` as ids: never wrapped or cut (``print_table``)."""
    for column in table.columns:
        if column.header in names:
            column.no_wrap = True
    return table


def fmt_value(value: Any) -> str:
    """A compact JSON rendering of a decoded ``google.protobuf.Value``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


STDIO = "-"


def read_text(path: str | Path, what: str = "the file") -> str:
    """A file's text, or standard input's when ``path`` is ``-``; one ``CliError`` line when
    it cannot be read."""
    if str(path) == STDIO:
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot read {what}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise CliError(f"{path}: {what} is not UTF-8 text: {error.reason}") from None


def read_bytes(path: str | Path, what: str = "the file") -> bytes:
    """``read_text`` for bytes (keys, notes)."""
    if str(path) == STDIO:
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise CliError(f"{path}: cannot read {what}: {error.strerror or error}") from None


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to a file, or to standard output when ``path`` is ``-``."""
    if str(path) == STDIO:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot write: {error.strerror or error}") from None


def read_evidence(path: str) -> claim_pb2.Evidence:
    """An evidence file's claims (``-``: standard input); a bad file is one ``CliError``
    line, and what a lossy (legacy) load dropped is said on stderr."""
    try:
        if path == STDIO:
            try:
                data = json.loads(sys.stdin.read())
            except json.JSONDecodeError as error:
                raise EvidenceFormatError(
                    "<stdin>", "", f"invalid JSON at line {error.lineno}: {error.msg}"
                ) from None
            loaded = evidence_from_json(data, source="<stdin>")
        else:
            loaded = load_evidence_file(path)
    except EvidenceFormatError as error:
        raise CliError(str(error)) from None
    for warning in loaded.warnings:
        print(f"assay: warning: {warning}", file=sys.stderr)
    return loaded.evidence
