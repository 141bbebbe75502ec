"""The three services in this process with TLS and authentication on, from a credentials
folder written by ``write_dev_credentials`` (a real CA, server certificate, ES256 signing
key, JWKS, policy and one token per example principal), and channels that carry a token."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from assay.executor.stack import LocalStack, local_stack
from assay.runtime.auth.dev_credentials import (
    EXAMPLE_PRINCIPALS,
    DevCredentials,
    Grantee,
    write_dev_credentials,
)
from assay.runtime.security import Security


@dataclass(frozen=True)
class SecureStack:
    """A running secure stack and the credentials that open it."""

    targets: LocalStack
    creds: DevCredentials

    def target(self, service: str) -> str:
        address: str = getattr(self.targets, service)
        return address

    def channel(self, service: str) -> grpc.aio.Channel:
        """A TLS channel to ``service`` trusting the folder's CA (the caller closes it)."""
        credentials = grpc.ssl_channel_credentials(self.creds.ca.read_bytes())
        return grpc.aio.secure_channel(self.target(service), credentials)

    def auth(self, name: str) -> tuple[tuple[str, str], ...]:
        """Call metadata carrying the token of example principal ``name``."""
        return (("authorization", f"Bearer {self.creds.token(name)}"),)


@contextlib.asynccontextmanager
async def secure_stack(
    directory: Path,
    allow_fixture_reviewers: bool = True,
    principals: Sequence[Grantee] = EXAMPLE_PRINCIPALS,
    db: str | None = None,
    approvals: str = "",
) -> AsyncIterator[SecureStack]:
    """Credentials (a token for each of ``principals``) in ``directory/creds``, the database
    ``db`` (a ``postgresql://`` URL) or else ``directory/assay.db``; ``approvals``: TOML
    added to the auth policy (an ``[approvals]`` table)."""
    creds = write_dev_credentials(directory / "creds", principals)
    if approvals:
        with creds.policy.open("a", encoding="utf-8") as policy:
            policy.write("\n" + approvals)
    security = Security.from_credentials(creds.root)
    async with local_stack(
        db or directory / "assay.db",
        security=security,
        allow_fixture_reviewers=allow_fixture_reviewers,
        ledger_signing_key=directory / "ledger-key.pem" if db else None,
    ) as targets:
        yield SecureStack(targets, creds)
