"""The secure path for the external-tool tier (grpcurl, Node): a credentials folder as
``assay dev-credentials DIR`` writes it, the three services served ``--credentials DIR``
(``assay_stack(directory, creds)``: TLS, bearer tokens, the auth policy; what
``assay up --credentials DIR`` gives a user) on free loopback ports with a throwaway
database, and a resolver that also requires a client certificate (``mutual_tls_resolver``;
``client_certificate`` issues one from the folder's CA). ``secure_deployment`` starts all of
it for a test module.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from assay.runtime.auth.dev_credentials import DevCredentials, make_leaf, write_dev_credentials
from tests.support.processes import AssayProcess, free_port, service_process
from tests.support.stack import Stack, assay_stack

CLIENT_CERTIFICATE_LIFETIME = dt.timedelta(days=1)


def client_certificate(creds: DevCredentials, name: str) -> tuple[Path, Path]:
    """A client certificate with CN ``name`` signed by the folder's CA, and its key
    (``DIR/clients/NAME.pem``, ``DIR/clients/NAME-key.pem``, the key owner-only)."""
    ca_cert = x509.load_pem_x509_certificate(creds.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(creds.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    now = dt.datetime.now(dt.UTC)
    key, cert = make_leaf(ca_key, ca_cert, name, now, CLIENT_CERTIFICATE_LIFETIME, client=True)
    folder = creds.root / "clients"
    folder.mkdir(mode=0o700, exist_ok=True)
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


# The CN of the client certificate the mutual TLS tests present, and what the policy grants it.
CERTIFICATE_SUBJECT = "reader-bot"
CERTIFICATE_GRANT = f"""
[[principals]]
issuer = "x509"
subject = "{CERTIFICATE_SUBJECT}"
roles = ["reader"]
tenants = []
"""


@contextmanager
def mutual_tls_resolver(
    directory: Path, creds: DevCredentials, client: tuple[Path, Path]
) -> Iterator[AssayProcess]:
    """A resolver that requires a client certificate of the folder's CA and still accepts
    bearer tokens. Its policy is the folder's plus a grant for the certificate with CN
    ``CERTIFICATE_SUBJECT`` (issuer ``x509``: a certificate's CN never matches a token
    subject's entry)."""
    cert, key = client
    policy = creds.root / "policy-mtls.toml"
    policy.write_text(creds.policy.read_text(encoding="utf-8") + CERTIFICATE_GRANT)
    trust = grpc.ssl_channel_credentials(
        creds.ca.read_bytes(), private_key=key.read_bytes(), certificate_chain=cert.read_bytes()
    )
    port = free_port()
    args = ["serve", "resolver", "--port", str(port), "--credentials", str(creds.root)]
    args += ["--tls-client-ca", str(creds.ca), "--auth-policy", str(policy)]
    with service_process(args, directory / "mtls-resolver.log", port, credentials=trust) as running:
        yield running


@dataclass(frozen=True)
class SecureDeployment:
    """The three services and a mutual TLS resolver, all serving one credentials folder, and
    the client certificate (with CN ``CERTIFICATE_SUBJECT``) that opens the latter."""

    creds: DevCredentials
    stack: Stack
    mtls_resolver: AssayProcess
    client: tuple[Path, Path]

    def logs(self) -> str:
        """Every server's log, for a failure message."""
        text = self.mtls_resolver.log_path.read_text(encoding="utf-8", errors="replace")
        return self.stack.logs() + f"\n--- mutual TLS resolver log ---\n{text[-4000:]}"


DeploymentT = TypeVar("DeploymentT", bound=SecureDeployment)


@contextmanager
def secure_deployment(directory: Path, kind: type[DeploymentT]) -> Iterator[DeploymentT]:
    """A credentials folder in ``directory/creds``, a client certificate from its CA, the
    secured stack and the mutual TLS resolver, as a ``kind`` (``SecureDeployment`` or a
    test's subclass adding its own helpers); every server stops when the block ends."""
    creds = write_dev_credentials(directory / "creds")
    client = client_certificate(creds, CERTIFICATE_SUBJECT)
    with (
        assay_stack(directory, creds) as stack,
        mutual_tls_resolver(directory, creds, client) as mtls,
    ):
        yield kind(creds, stack, mtls, client)
