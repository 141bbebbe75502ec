"""A process's security settings in one value: how it serves, and how its services call
each other. Built from the serve flags, or from one ``--credentials DIR``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assay.runtime.auth import DEV_GATE, Gate
from assay.runtime.auth.dev_credentials import DevCredentials
from assay.runtime.tls import ClientTls, ServerTls
from assay.transport import is_loopback

SERVICE_TOKEN_NAME = "planner"

DEV_MODE_WARNING = (
    "WARNING: authentication is off (dev mode): every caller holds every role for every "
    "tenant; turn it on with --credentials DIR (see `assay dev-credentials`) or --auth-policy"
)


def unauthenticated_refusal(host: str, gate: Gate, insecure_no_auth: bool) -> str | None:
    """Why a server must not start in dev mode (one line), or None: off loopback, serving
    every caller every role needs ``--insecure-no-auth`` said out loud, TLS or not."""
    if not gate.enabled and not insecure_no_auth and not is_loopback(host):
        return (
            f"refusing to serve without authentication on non-loopback address {host}: give "
            "--auth-policy (or --credentials DIR), or --insecure-no-auth to let every caller "
            "hold every role for every tenant"
        )
    return None


@dataclass(frozen=True)
class Security:
    """``tls``/``gate``: how the servers serve; ``peer_tls``/``peer_token``: how the planner
    reaches the resolver (TLS trust and its own bearer token file)."""

    tls: ServerTls | None = None
    gate: Gate = field(default=DEV_GATE)
    peer_tls: ClientTls | None = None
    peer_token: Path | None = None

    @classmethod
    def from_credentials(cls, root: Path) -> Security:
        """TLS, JWT and the policy from a folder ``assay dev-credentials`` wrote."""
        creds = DevCredentials(root)
        missing = creds.missing()
        if missing:
            listed = ", ".join(str(p) for p in missing)
            raise ValueError(f"{root} is not a credentials folder (missing {listed})")
        token = creds.token_path(SERVICE_TOKEN_NAME)
        return cls(
            tls=ServerTls(creds.server_cert, creds.server_key),
            gate=Gate.from_files(creds.policy, creds.jwks, client_certificates=False),
            peer_tls=ClientTls(ca=creds.ca),
            peer_token=token if token.is_file() else None,
        )
