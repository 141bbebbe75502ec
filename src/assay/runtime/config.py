"""Server settings, read from flags first, then ``ASSAY_*`` environment variables, then defaults.

The maximum message size is deliberately large: 100,000-claim evidence must fit, with room
for responses that echo claims back (``excluded``), while memory stays bounded. It bounds
responses as well as requests: no response is built past it, nor past ``budget``'s multiple
of its request. A smaller default would refuse the answers to evidence it accepts
(``ResolveEvidence`` answers with a multiple of its request); what the largest request costs
is bounded per call by the caller's deadline and in total by the admission limit, and
``--max-message-bytes`` lowers both limits together. The sizes and costs behind this are in
docs/performance.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assay.runtime.auth import DEV_GATE, Gate
from assay.runtime.tls import ServerTls

# Defined on neutral ground, which the client library shares; re-exported for the servers.
from assay.transport import DEFAULT_MAX_MESSAGE_BYTES as DEFAULT_MAX_MESSAGE_BYTES
from assay.transport import METADATA_OPTIONS

DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_HOST = "127.0.0.1"
# Calls one service runs at once; more are refused with RESOURCE_EXHAUSTED and a retry delay
# (see ``admission``). 256 keeps a server busy (the resolver computes small calls on the event
# loop and heavy ones on two worker threads, the planner and adjudication mostly wait on I/O)
# while bounding the requests held in memory.
DEFAULT_MAX_CONCURRENT_RPCS = 256


class ConfigurationError(ValueError):
    """A service cannot start with the configuration it was given (a missing or unusable
    file or flag): the command line reports it in one line with exit code 2, like a bad flag."""


def env_str(name: str, default: str) -> str:
    """An ``ASSAY_*`` setting, or its default when unset or empty."""
    value = os.environ.get(name, "")
    return value if value else default


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not an integer") from None


def env_optional_int(name: str) -> int | None:
    """An ``ASSAY_*`` integer that is off (None) when unset or empty."""
    return env_int(name, 0) if os.environ.get(name, "") else None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a number") from None


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def env_bool(name: str) -> bool:
    """An ``ASSAY_*`` switch: 1/true/yes/on, or 0/false/no/off; unset or empty is off."""
    raw = os.environ.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if not raw or raw in _FALSE:
        return False
    raise SystemExit(f"{name}={raw!r} is not a switch (use 1 or 0)")


def env_path(name: str) -> str | None:
    """An ``ASSAY_*`` file setting, or None when unset or empty."""
    return os.environ.get(name, "") or None


@dataclass(frozen=True)
class ServerConfig:
    """How one process serves: where it listens, how large a message may be, how long to drain,
    with which TLS files (None: plaintext), which gate for callers (``DEV_GATE``: none),
    how many calls each service runs at once, and the port of the Prometheus endpoint
    (None: no metrics; it listens on ``host`` too)."""

    host: str = DEFAULT_HOST
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    tls: ServerTls | None = None
    gate: Gate = field(default=DEV_GATE)
    max_concurrent_rpcs: int = DEFAULT_MAX_CONCURRENT_RPCS
    metrics_port: int | None = None

    @classmethod
    def from_env(cls) -> ServerConfig:
        return cls(
            host=env_str("ASSAY_HOST", DEFAULT_HOST),
            max_message_bytes=env_int("ASSAY_MAX_MESSAGE_BYTES", DEFAULT_MAX_MESSAGE_BYTES),
            grace_seconds=env_float("ASSAY_GRACE_SECONDS", DEFAULT_GRACE_SECONDS),
            max_concurrent_rpcs=env_int("ASSAY_MAX_CONCURRENT_RPCS", DEFAULT_MAX_CONCURRENT_RPCS),
            metrics_port=env_optional_int("ASSAY_METRICS_PORT"),
        )

    def channel_options(self) -> list[tuple[str, int]]:
        """gRPC options that apply the message-size limit in both directions, and the
        metadata limit that lets every bearer token up to the cap reach the gate."""
        return [
            ("grpc.max_receive_message_length", self.max_message_bytes),
            ("grpc.max_send_message_length", self.max_message_bytes),
            *METADATA_OPTIONS,
        ]
