"""What every ``assay`` subcommand shares: the target and credential flags, calling an RPC
with a timeout, turning a failed call into one readable line, and printing tables or
``--json``.

Credentials (``--token``/``--token-file``, ``--ca``, ``--client-cert``/``--client-key``,
each with an ``ASSAY_…`` twin) become one ``assay.client.Credentials``; the channel
carries them, so no command handles a token itself, and none ever prints one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf import message as pb_message
from rich.console import Console

from assay.client.credentials import Credentials
from assay.client.evidence import EvidenceFormatError, load_evidence_file
from assay.runtime.status import decode_rpc_error
from assay.v1 import claim_pb2

DEFAULT_TIMEOUT_SECONDS = 30.0

T = TypeVar("T")


class CliError(Exception):
    """A failure the user can act on: printed as one line, exit code 1 (or ``exit_code``)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def add_target_argument(parser: argparse.ArgumentParser, service: str, default: str) -> None:
    """``--target host:port`` (env ``ASSAY_<SERVICE>_TARGET``), ``--timeout`` and the
    credential flags."""
    from assay.runtime.config import env_str

    env = f"ASSAY_{service.upper()}_TARGET"
    parser.add_argument(
        "--target",
        default=env_str(env, default),
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

    def path(flag: str, env: str) -> Path | None:
        given: Path | None = getattr(args, flag, None)
        from_env = _env(env)
        return given if given is not None else (Path(from_env) if from_env else None)

    ca = path("ca", "ASSAY_CA")
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


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print the response as proto JSON instead of tables"
    )


@contextmanager
def channel(target: str, credentials: Credentials | None = None) -> Iterator[grpc.Channel]:
    """A channel with the client library's options: TLS and the bearer token when
    ``credentials`` say so, the servers' message-size limit, and service-config retries of
    UNAVAILABLE for retry-safe RPCs (every mutating command sends a ``request_id``, so a
    retried mutation is recognised and answered once)."""
    from assay.client.channel import sync_channel
    from assay.runtime.config import ServerConfig
    from assay.v1 import adjudication_service_pb2, planner_service_pb2, resolver_service_pb2

    services = [
        service
        for module in (resolver_service_pb2, planner_service_pb2, adjudication_service_pb2)
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

    @classmethod
    def of(cls, args: argparse.Namespace, service: str) -> Remote:
        """The service at ``--target``, with the command's credential flags."""
        return cls(service, args.target, credentials_from_args(args))

    @property
    def tls(self) -> bool:
        return self.credentials is not None and self.credentials.uses_tls

    def channel(self) -> AbstractContextManager[grpc.Channel]:
        return channel(self.target, self.credentials)

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
    """Run one RPC; a failure becomes a ``CliError`` naming the service, code, reason and fields."""
    try:
        return fn()
    except grpc.RpcError as error:
        decoded = decode_rpc_error(error)
        raise CliError(
            describe_failure(
                service,
                target,
                decoded.code,
                decoded.message,
                decoded.reason,
                decoded.violations,
                context,
                tls,
            )
        ) from None


def to_json(message: pb_message.Message) -> str:
    """Proto JSON (camelCase, as grpcurl and the Node client print it), stable key order."""
    data = json_format.MessageToDict(message)
    return json.dumps(data, indent=2, sort_keys=True)


def print_json(message: pb_message.Message) -> None:
    sys.stdout.write(to_json(message) + "\n")


def console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def fmt_value(value: Any) -> str:
    """A compact JSON rendering of a decoded ``google.protobuf.Value``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def read_evidence(path: str) -> claim_pb2.Evidence:
    """An evidence file's claims; a bad file is one ``CliError`` line, and what a lossy
    (legacy) load dropped is said on stderr."""
    try:
        loaded = load_evidence_file(path)
    except EvidenceFormatError as error:
        raise CliError(str(error)) from None
    for warning in loaded.warnings:
        print(f"assay: warning: {warning}", file=sys.stderr)
    return loaded.evidence
