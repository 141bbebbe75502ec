"""What a client presents to an Assay service: how it trusts the server, and who it is.

    creds = Credentials(ca="creds/ca.pem", token_file="creds/tokens/alice.jwt")
    with AdjudicationClient("localhost:50053", credentials=creds) as client: ...

- **TLS** when a CA, a client certificate or ``tls=True`` is given: the server's certificate
  is checked against ``ca`` (or the system roots); ``client_cert`` + ``client_key`` add mTLS.
- **A bearer token**, ``token`` or ``token_file`` (re-read when the file changes: rotation
  needs no restart), sent on every call as ``authorization: Bearer …`` call credentials, which
  gRPC attaches only to channels that protect it: TLS, or plaintext to this machine (loopback
  or a Unix socket); over plaintext to any other host it is refused with ``ValueError`` before
  any connection. It never appears in a ``repr``, a log line or an error message.
- **Several replicas** behind one target (``dns:///assay:50053``, an address list) share its
  calls; a list spanning hosts gives TLS no name, so ``server_name`` names the one every
  replica's certificate carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc

from assay.transport import (
    TokenFile,
    authority_options,
    bearer_metadata,
    check_token,
    is_local_target,
)

PathLike = str | Path


def _path(value: PathLike | None) -> Path | None:
    return None if value is None or value == "" else Path(value)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {what} {path}: {error.strerror or error}") from None


@dataclass(frozen=True, repr=False)
class Credentials:
    """TLS trust and identity for a client; every part optional (all empty: plaintext, no
    credential, which only a dev-mode server on loopback accepts)."""

    token: str | None = None
    token_file: Path | None = None
    ca: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    tls: bool = False
    server_name: str | None = None

    def __init__(
        self,
        *,
        token: str | None = None,
        token_file: PathLike | None = None,
        ca: PathLike | None = None,
        client_cert: PathLike | None = None,
        client_key: PathLike | None = None,
        tls: bool = False,
        server_name: str | None = None,
    ) -> None:
        # Paths as str or Path, "" meaning unset (as an empty environment variable does).
        if token is not None and token_file:
            raise ValueError("give a token or a token file, not both")
        if bool(client_cert) != bool(client_key):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        set_ = object.__setattr__
        set_(self, "token", check_token(token) if token is not None else None)
        set_(self, "token_file", _path(token_file))
        set_(self, "ca", _path(ca))
        set_(self, "client_cert", _path(client_cert))
        set_(self, "client_key", _path(client_key))
        set_(self, "tls", tls)
        set_(self, "server_name", server_name or None)

    @classmethod
    def from_folder(cls, directory: PathLike, name: str) -> Credentials:
        """Principal ``name`` of a folder ``assay dev-credentials`` wrote: trust its
        ``ca.pem``, send its ``tokens/NAME.jwt``."""
        root = Path(directory)
        return cls(ca=root / "ca.pem", token_file=root / "tokens" / f"{name}.jwt")

    def __repr__(self) -> str:
        parts = [
            f"{name}={str(value)!r}"
            for name, value in (
                ("token_file", self.token_file),
                ("ca", self.ca),
                ("client_cert", self.client_cert),
                ("client_key", self.client_key),
            )
            if value is not None
        ]
        if self.token is not None:
            parts.insert(0, "token=<hidden>")
        if self.tls:
            parts.append("tls=True")
        if self.server_name:
            parts.append(f"server_name={self.server_name!r}")
        return f"Credentials({', '.join(parts)})"

    @property
    def uses_tls(self) -> bool:
        """Whether the channel is TLS (a CA, a client certificate, or ``tls=True``)."""
        return self.tls or self.ca is not None or self.client_cert is not None

    @property
    def has_token(self) -> bool:
        return self.token is not None or self.token_file is not None

    def token_source(self) -> TokenSource | None:
        """What supplies the bearer token on each call (None: no token). A token file is
        read here, so a missing or empty file is a ValueError now, not a failed call later."""
        if self.token is not None:
            return StaticToken(self.token)
        if self.token_file is not None:
            return TokenFile(self.token_file)
        return None

    def check_target(self, target: str) -> None:
        """ValueError when these credentials would send a token in plaintext off this machine."""
        if self.has_token and not self.uses_tls and not is_local_target(target):
            raise ValueError(
                f"refusing to send a bearer token in plaintext to {target}: it is not this "
                "machine (loopback or a Unix socket); use TLS (a CA to trust: ca= / --ca, "
                "or the system roots: tls=True / --tls)"
            )

    def channel_options(self, target: str) -> list[tuple[str, str]]:
        """Channel options for ``target``: with TLS, the name each server's certificate is
        verified against when the target lists addresses (ValueError: it lists several
        hosts and no ``server_name`` was given)."""
        return authority_options(target, self.uses_tls, self.server_name)

    def channel_credentials(self, target: str) -> grpc.ChannelCredentials | None:
        """The gRPC channel credentials for ``target``, or None for a plain insecure channel.

        With a token and no TLS (only allowed on loopback) the channel uses gRPC's local
        credentials: still plaintext, but gRPC sends call credentials over it, and only
        after checking the peer really is this machine.
        """
        self.check_target(target)
        if self.uses_tls:
            transport = grpc.ssl_channel_credentials(
                root_certificates=_read(self.ca, "CA") if self.ca else None,
                private_key=_read(self.client_key, "client key") if self.client_key else None,
                certificate_chain=(
                    _read(self.client_cert, "client certificate") if self.client_cert else None
                ),
            )
        elif self.has_token:
            unix = target.startswith(("unix:", "unix-abstract:"))
            kind = grpc.LocalConnectionType.UDS if unix else grpc.LocalConnectionType.LOCAL_TCP
            transport = grpc.local_channel_credentials(kind)
        else:
            return None
        source = self.token_source()
        if source is None:
            return transport
        return grpc.composite_channel_credentials(
            transport, grpc.metadata_call_credentials(_BearerPlugin(source), name="assay-bearer")
        )


class TokenSource(Protocol):
    """Supplies the token for each call (``TokenFile`` re-reads its file when it changes)."""

    def metadata(self) -> tuple[tuple[str, str], ...]: ...


class StaticToken:
    """A token given as a value."""

    def __init__(self, token: str) -> None:
        self._token = check_token(token)

    def __repr__(self) -> str:
        return "StaticToken(<hidden>)"

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return bearer_metadata(self._token)


class _BearerPlugin:
    """gRPC asks this for the metadata of each call, on its own threads (a
    ``grpc.AuthMetadataPlugin``: gRPC only calls it, so it need not subclass one)."""

    def __init__(self, source: TokenSource) -> None:
        self._source = source

    def __call__(self, context: Any, callback: Any) -> None:
        try:
            metadata = self._source.metadata()
        except Exception as error:  # gRPC fails the call with this; it never names the token
            callback((), ValueError(f"cannot supply the bearer token: {type(error).__name__}"))
            return
        callback(metadata, None)


__all__ = ["Credentials", "PathLike", "StaticToken", "TokenSource"]
