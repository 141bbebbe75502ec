"""TLS for servers and for the channels Assay opens, and the rule for plaintext.

A server serves TLS when given a certificate and key, and mutual TLS (a client
certificate signed by the given CA is required) when also given a client CA.
Plaintext is allowed only on loopback, unless the operator says
``--insecure-plaintext`` out loud (and is warned at every start).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from assay.transport import is_local_target, is_loopback


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {what} {path}: {error.strerror or error}") from None


def _certificates(path: Path, what: str) -> list[x509.Certificate]:
    """The PEM certificates in ``path`` (at least one); ValueError names the file."""
    data = _read(path, what)
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ValueError(f"{what} {path} holds no PEM certificate") from None


def _private_key(path: Path, what: str) -> PrivateKeyTypes:
    data = _read(path, what)
    try:
        return serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise ValueError(f"{what} {path} is encrypted; give an unencrypted PEM key") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"{what} {path} is not a PEM private key Assay can use") from None


def _check_pair(cert_path: Path, key_path: Path, what: str) -> None:
    """The key must belong to the first certificate of the chain, which must be in date."""
    leaf = _certificates(cert_path, f"{what} certificate")[0]
    key = _private_key(key_path, f"{what} key")
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if leaf.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        raise ValueError(f"{what} key {key_path} does not belong to certificate {cert_path}")
    if leaf.not_valid_after_utc < dt.datetime.now(dt.UTC):
        expired = leaf.not_valid_after_utc.date().isoformat()
        raise ValueError(f"{what} certificate {cert_path} expired on {expired}")


@dataclass(frozen=True)
class ServerTls:
    """The files a TLS server needs; ``client_ca`` turns on mutual TLS."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def check(self) -> None:
        """Read and parse every file once, so a typo fails at start, not at the first call."""
        _check_pair(self.cert, self.key, "TLS")
        if self.client_ca is not None:
            _certificates(self.client_ca, "client CA")

    def credentials(self) -> grpc.ServerCredentials:
        pair = (_read(self.key, "TLS key"), _read(self.cert, "TLS certificate"))
        client_ca = _read(self.client_ca, "client CA") if self.client_ca else None
        return grpc.ssl_server_credentials(
            [pair], root_certificates=client_ca, require_client_auth=client_ca is not None
        )


@dataclass(frozen=True)
class ClientTls:
    """How a client trusts a server (``ca``; None: the system roots) and, for mutual TLS,
    the client's own certificate and key. ``server_name``: the name to verify the server's
    certificate against when the target itself has none (an ``ipv4:`` list of replicas;
    ``assay.transport.authority_options``)."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str | None = None

    def check(self) -> None:
        """Read and parse every file once (see ``ServerTls.check``)."""
        if (self.cert is None) != (self.key is None):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        if self.ca is not None:
            _certificates(self.ca, "CA")
        if self.cert is not None and self.key is not None:
            _check_pair(self.cert, self.key, "client")

    def credentials(self) -> grpc.ChannelCredentials:
        if (self.cert is None) != (self.key is None):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        return grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca, "CA") if self.ca else None,
            private_key=_read(self.key, "client key") if self.key else None,
            certificate_chain=_read(self.cert, "client certificate") if self.cert else None,
        )


def plaintext_refusal(host: str, tls: ServerTls | None, insecure_plaintext: bool) -> str | None:
    """Why a server must not start (one line), or None."""
    if tls is None and not insecure_plaintext and not is_loopback(host):
        return (
            f"refusing to serve plaintext on non-loopback address {host}: give --tls-cert and "
            "--tls-key (or --credentials DIR), or --insecure-plaintext to accept the risk"
        )
    return None


def resolver_plaintext_refusal(
    target: str, tls: ClientTls | None, insecure_plaintext: bool
) -> str | None:
    """Why the planner must not call its resolver at ``target`` in plaintext (one line), or None:
    the same rule as serving, since its token and the callers' evidence would cross the network."""
    local = is_local_target(target)
    if tls is None and not insecure_plaintext and not local:
        return (
            f"refusing to call the resolver at {target} in plaintext: give --resolver-ca FILE "
            "(or --credentials DIR), or --insecure-plaintext to accept the risk"
        )
    return None


def dial_host(host: str) -> str:
    """How this machine reaches a server listening on ``host``, in target form: a wildcard
    address becomes loopback, an IPv6 address gets its brackets."""
    name = host.strip().strip("[]")
    if name in ("", "0.0.0.0"):
        return "127.0.0.1"
    if name == "::":
        return "[::1]"
    return f"[{name}]" if ":" in name else name
