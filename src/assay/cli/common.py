"""What every ``assay`` subcommand shares: the target flag, calling an RPC with a timeout,
turning a failed call into one readable line, and printing tables or ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf import message as pb_message
from rich.console import Console

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
    """``--target host:port`` (env ``ASSAY_<SERVICE>_TARGET``) and ``--timeout``."""
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


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print the response as proto JSON instead of tables"
    )


@contextmanager
def channel(target: str) -> Iterator[grpc.Channel]:
    """A plaintext channel with the client library's options: the servers' message-size limit,
    and service-config retries of UNAVAILABLE for retry-safe RPCs (every mutating command sends
    a ``request_id``, so a retried mutation is recognised and answered once)."""
    from assay.client.channel import channel_options
    from assay.runtime.config import ServerConfig
    from assay.v1 import adjudication_service_pb2, planner_service_pb2, resolver_service_pb2

    services = [
        service
        for module in (resolver_service_pb2, planner_service_pb2, adjudication_service_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
    ]
    options = channel_options(services, ServerConfig.from_env().max_message_bytes)
    with grpc.insecure_channel(target, options=options) as ch:
        yield ch


def call(service: str, target: str, fn: Callable[[], T], context: str = "") -> T:
    """Run one RPC; a failure becomes a ``CliError`` naming the service, code, reason and fields."""
    try:
        return fn()
    except grpc.RpcError as error:
        decoded = decode_rpc_error(error)
        if decoded.code == grpc.StatusCode.UNAVAILABLE and not decoded.reason:
            raise CliError(
                f"the {service} service at {target} is not reachable "
                f"(is it running? start it with `assay up`)"
            ) from None
        prefix = f"{context}: " if context else ""
        if decoded.violations:
            fields = "; ".join(f"{v.field}: {v.description}" for v in decoded.violations)
            detail = fields
        else:
            detail = decoded.message
        reason = f", {decoded.reason}" if decoded.reason else ""
        raise CliError(f"{prefix}{detail} ({decoded.code.name}{reason})") from None


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
