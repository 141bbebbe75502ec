"""TLS for servers and for the channels Assay opens, and the rule for plaintext.

A server serves TLS when given a certificate and key, and mutual TLS (a client
certificate signed by the given CA is required) when also given a client CA.
Plaintext is allowed only on loopback, unless the operator says
``--insecure-plaintext`` out loud (and is warned at every start).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {what} {path}: {error.strerror or error}") from None


@dataclass(frozen=True)
class ServerTls:
    """The files a TLS server needs; ``client_ca`` turns on mutual TLS."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        pair = (_read(self.key, "TLS key"), _read(self.cert, "TLS certificate"))
        client_ca = _read(self.client_ca, "client CA") if self.client_ca else None
        return grpc.ssl_server_credentials(
            [pair], root_certificates=client_ca, require_client_auth=client_ca is not None
        )


@dataclass(frozen=True)
class ClientTls:
    """How a client trusts a server (``ca``; None: the system roots) and, for mutual TLS,
    the client's own certificate and key."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        if (self.cert is None) != (self.key is None):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca, "CA") if self.ca else None,
            private_key=_read(self.key, "client key") if self.key else None,
            certificate_chain=_read(self.cert, "client certificate") if self.cert else None,
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, IPv6 possibly in brackets) is this machine only."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def target_host(target: str) -> str:
    """The host part of a gRPC target such as ``localhost:50051`` or ``[::1]:50051``."""
    rest = target.split("///", 1)[-1] if "///" in target else target
    rest = rest.removeprefix("ipv4:").removeprefix("ipv6:")
    if rest.startswith("["):
        return rest[1 : rest.find("]")]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def plaintext_refusal(host: str, tls: ServerTls | None, insecure_plaintext: bool) -> str | None:
    """Why a server must not start (one line), or None."""
    if tls is None and not insecure_plaintext and not is_loopback(host):
        return (
            f"refusing to serve plaintext on non-loopback address {host}: give --tls-cert and "
            "--tls-key (or --credentials DIR), or --insecure-plaintext to accept the risk"
        )
    return None
