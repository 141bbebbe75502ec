"""Local credentials for trying the secure path: a CA, a server certificate, a signing key,
its JWKS, an auth policy and one token per example principal (``assay dev-credentials``).

Everything is generated here with ``cryptography`` and PyJWT; private keys and
tokens are written owner-only (0600). The layout is what ``--credentials DIR``
reads::

    DIR/ca.pem  DIR/ca-key.pem          the local CA (trust ca.pem in clients)
    DIR/server.pem  DIR/server-key.pem  for localhost, 127.0.0.1 and ::1
    DIR/signing-key.pem  DIR/jwks.json  ES256 token signing key and its public JWKS
    DIR/policy.toml                     who holds which roles and tenants
    DIR/tokens/NAME.jwt                 one bearer token per principal (sub = NAME)

These are for a developer's machine and tests, not production: a real
deployment takes its certificates from its PKI and its JWKS from its identity
provider (docs/security.md).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEV_ISSUER = "https://assay.dev.local"
DEV_AUDIENCE = "assay"
DEV_KEY_ID = "assay-dev-1"
DEFAULT_LIFETIME = dt.timedelta(days=30)


@dataclass(frozen=True)
class Grantee:
    """An example principal: its subject, roles and tenants (``*``: all)."""

    name: str
    roles: tuple[str, ...]
    tenants: tuple[str, ...]


EXAMPLE_PRINCIPALS: tuple[Grantee, ...] = (
    Grantee("operator", ("operator", "auditor", "reader"), ("*",)),
    Grantee("alice", ("reviewer", "reader"), ("acme",)),
    Grantee("bob", ("reviewer", "reader"), ("acme",)),
    Grantee("carol", ("adjudicator", "reviewer", "reader"), ("acme",)),
    Grantee("mallory", ("reviewer", "reader"), ("globex",)),
    Grantee("dave", ("approver", "reader"), ("acme",)),
    Grantee("planner", ("service",), ()),
)


@dataclass(frozen=True)
class DevCredentials:
    """Where each file of a credentials folder is."""

    root: Path

    @property
    def ca(self) -> Path:
        return self.root / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca-key.pem"

    @property
    def server_cert(self) -> Path:
        return self.root / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.root / "server-key.pem"

    @property
    def signing_key(self) -> Path:
        return self.root / "signing-key.pem"

    @property
    def jwks(self) -> Path:
        return self.root / "jwks.json"

    @property
    def policy(self) -> Path:
        return self.root / "policy.toml"

    def token_path(self, name: str) -> Path:
        return self.root / "tokens" / f"{name}.jwt"

    def token(self, name: str) -> str:
        return self.token_path(name).read_text(encoding="ascii").strip()

    def missing(self) -> list[Path]:
        """The files ``--credentials`` needs that are not there."""
        needed = (self.ca, self.server_cert, self.server_key, self.jwks, self.policy)
        return [path for path in needed if not path.is_file()]


def _write_private(path: Path, data: bytes) -> None:
    """Create (or replace) ``path`` owner-only before a byte is written."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Assay development"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


# What the CA's key may do: sign, and sign certificates and revocation lists; no other use.
_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True, key_cert_sign=True, crl_sign=True,
    content_commitment=False, key_encipherment=False, data_encipherment=False,
    key_agreement=False, encipher_only=False, decipher_only=False,
)  # fmt: skip


def make_ca(
    common_name: str, now: dt.datetime, lifetime: dt.timedelta
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def make_leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    common_name: str,
    now: dt.datetime,
    lifetime: dt.timedelta,
    hosts: Iterable[str] = (),
    client: bool = False,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A server certificate for ``hosts`` (names or IP addresses), or a client certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def public_jwk(key: ec.EllipticCurvePrivateKey, kid: str) -> dict[str, str]:
    """The public JWK of an ES256 signing key (PyJWT's own encoding, plus kid/use/alg)."""
    jwk: dict[str, str] = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "use": "sig", "alg": "ES256"}


def sign_token(
    key: ec.EllipticCurvePrivateKey,
    subject: str,
    now: dt.datetime,
    lifetime: dt.timedelta,
    issuer: str = DEV_ISSUER,
    audience: str = DEV_AUDIENCE,
    kid: str = DEV_KEY_ID,
) -> str:
    claims = {
        "iss": issuer,
        "sub": subject,
        "aud": audience,
        "iat": int(now.timestamp()),
        "nbf": int(now.timestamp()),
        "exp": int((now + lifetime).timestamp()),
        "jti": secrets.token_hex(8),
    }
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})


def policy_toml(principals: Iterable[Grantee], issuer: str, audience: str) -> str:
    def strings(values: Iterable[str]) -> str:
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    lines = [
        "# Assay auth policy written by `assay dev-credentials` (see docs/security.md).",
        "[tokens]",
        'jwks = "jwks.json"',
        f"issuers = [{json.dumps(issuer)}]",
        f"audience = {json.dumps(audience)}",
        "leeway_seconds = 30",
    ]
    for who in principals:
        lines += [
            "",
            "[[principals]]",
            f"subject = {json.dumps(who.name)}",
            f"roles = {strings(who.roles)}",
            f"tenants = {strings(who.tenants)}",
        ]
    return "\n".join(lines) + "\n"


def write_dev_credentials(
    root: Path,
    principals: Iterable[Grantee] = EXAMPLE_PRINCIPALS,
    lifetime: dt.timedelta = DEFAULT_LIFETIME,
    hosts: Iterable[str] = ("localhost", "127.0.0.1", "::1"),
) -> DevCredentials:
    """Write a fresh credentials folder at ``root`` (created owner-only if missing)."""
    chosen = tuple(principals)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    (root / "tokens").mkdir(mode=0o700, exist_ok=True)
    creds = DevCredentials(root)
    now = dt.datetime.now(dt.UTC)
    ca_key, ca_cert = make_ca("Assay development CA", now, lifetime)
    server_key, server_cert = make_leaf(ca_key, ca_cert, "localhost", now, lifetime, hosts)
    signing = ec.generate_private_key(ec.SECP256R1())
    pem = serialization.Encoding.PEM
    creds.ca.write_bytes(ca_cert.public_bytes(pem))
    _write_private(creds.ca_key, _pem_key(ca_key))
    creds.server_cert.write_bytes(server_cert.public_bytes(pem))
    _write_private(creds.server_key, _pem_key(server_key))
    _write_private(creds.signing_key, _pem_key(signing))
    creds.jwks.write_text(json.dumps({"keys": [public_jwk(signing, DEV_KEY_ID)]}, indent=2) + "\n")
    creds.policy.write_text(policy_toml(chosen, DEV_ISSUER, DEV_AUDIENCE))
    for who in chosen:
        token = sign_token(signing, who.name, now, lifetime)
        _write_private(creds.token_path(who.name), (token + "\n").encode("ascii"))
    return creds
