"""Channels to Assay services, configured the way a careful client wants them.

Retries are declared in the channel's gRPC service config, so grpc-core retries with
backoff, not a Python loop, and only calls safe to repeat, only on ``UNAVAILABLE``: read-only
RPCs and mutating RPCs whose request carries a ``request_id`` (the clients fill one in, so
the server returns the first result to a retry). A server's ``grpc-retry-pushback-ms``
replaces the backoff before the next try.

Refusals that say when to come back are retried by an interceptor instead
(``assay.client.overload``): ``RESOURCE_EXHAUSTED`` / ``OVERLOADED`` after the server's
``RetryInfo`` delay (the service config could only retry every ``RESOURCE_EXHAUSTED``,
including messages too large ever to pass), and ``UNAVAILABLE`` / ``STORAGE_UNAVAILABLE``
beyond the policy's few attempts, since a database restart outlasts them. A target may name
several replicas (``dns:///…``, an address list), balanced ``round_robin``. TLS and the
bearer token (``credentials.Credentials``) live in the channel, so every stub made on it
carries them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from assay.client.credentials import Credentials
from assay.client.overload import AioOverloadRetry, OverloadRetry
from assay.transport import DEFAULT_MAX_MESSAGE_BYTES, LOAD_BALANCING_CONFIG, METADATA_OPTIONS

DEFAULT_TIMEOUT_SECONDS = 30.0
RETRY_POLICY = {
    "maxAttempts": 4,
    "initialBackoff": "0.1s",
    "maxBackoff": "2s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}


def is_retry_safe(method: MethodDescriptor) -> bool:
    """Whether repeating the call cannot do anything twice."""
    options = descriptor_pb2.MethodOptions()
    options.ParseFromString(method.GetOptions().SerializeToString())
    safe_levels = (
        descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS,
        descriptor_pb2.MethodOptions.IDEMPOTENT,
    )
    return options.idempotency_level in safe_levels or (
        "request_id" in method.input_type.fields_by_name
    )


def retry_safe_paths(services: Iterable[ServiceDescriptor]) -> list[str]:
    """``/package.Service/Method`` of every retry-safe method of ``services``."""
    return [
        f"/{service.full_name}/{method.name}"
        for service in services
        for method in service.methods
        if is_retry_safe(method)
    ]


def service_config(services: Iterable[ServiceDescriptor]) -> dict[str, Any]:
    """The gRPC service config that balances calls round_robin over the target's addresses
    and retries exactly the retry-safe methods of ``services``."""
    names = [
        {"service": service.full_name, "method": method.name}
        for service in services
        for method in service.methods
        if is_retry_safe(method)
    ]
    config: dict[str, Any] = {"loadBalancingConfig": LOAD_BALANCING_CONFIG}
    if names:
        config["methodConfig"] = [{"name": names, "retryPolicy": RETRY_POLICY}]
    return config


def channel_options(
    services: Iterable[ServiceDescriptor], max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> list[tuple[str, Any]]:
    """Options for a channel to ``services``: retries, and the servers' message-size and
    metadata limits (so a bearer token up to the servers' cap is sent and its refusal read)."""
    return [
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(service_config(services))),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        *METADATA_OPTIONS,
    ]


def _options(
    target: str,
    services: list[ServiceDescriptor],
    credentials: Credentials | None,
    max_message_bytes: int,
) -> list[tuple[str, Any]]:
    options = channel_options(services, max_message_bytes)
    return options + (credentials.channel_options(target) if credentials is not None else [])


def sync_channel(
    target: str,
    services: Iterable[ServiceDescriptor],
    credentials: Credentials | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> grpc.Channel:
    """A blocking channel with the Assay options: TLS and a bearer token on every call when
    ``credentials`` say so, plaintext otherwise (ValueError: a token in plaintext off
    loopback)."""
    services = list(services)
    options = _options(target, services, credentials, max_message_bytes)
    secure = credentials.channel_credentials(target) if credentials is not None else None
    if secure is None:
        channel = grpc.insecure_channel(target, options=options)
    else:
        channel = grpc.secure_channel(target, secure, options=options)
    return grpc.intercept_channel(channel, OverloadRetry(retry_safe_paths(services)))


def aio_channel(
    target: str,
    services: Iterable[ServiceDescriptor],
    credentials: Credentials | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> grpc.aio.Channel:
    """The asyncio twin of ``sync_channel``."""
    services = list(services)
    options = _options(target, services, credentials, max_message_bytes)
    interceptors = [AioOverloadRetry(retry_safe_paths(services))]
    secure = credentials.channel_credentials(target) if credentials is not None else None
    if secure is None:
        return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(target, secure, options=options, interceptors=interceptors)
