"""Attacks on the credential check, through a real TLS server and real tokens.

The server hosts the resolver's contract with a servicer that answers
``GetResolverPolicy`` with the principal the runtime bound (issuer, subject, roles,
tenants), so an accepted credential shows exactly who it was taken for. Its gate is
the one ``--credentials DIR`` builds: an ES256 JWKS (here with an RS256 and an EdDSA
key beside it), the dev issuer and audience, 30 s of leeway.

Every forged, confused, stale or malformed token is UNAUTHENTICATED with the precise
reason (EXPIRED for ``exp``/``nbf``, INVALID for the rest); keys rotate by rewriting
the JWKS file without a restart; tokens never reach the log; plaintext never reaches a
TLS server; and an mTLS server takes a client certificate's CN as the principal.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import io
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from assay.client.channel import aio_channel
from assay.client.credentials import Credentials
from assay.runtime.auth import current_principal
from assay.runtime.auth.dev_credentials import (
    DEV_AUDIENCE,
    DEV_ISSUER,
    DEV_KEY_ID,
    Grantee,
    make_ca,
    make_leaf,
    public_jwk,
    write_dev_credentials,
)
from assay.runtime.auth.gate import Gate
from assay.runtime.config import ServerConfig
from assay.runtime.logging import configure_logging
from assay.runtime.security import Security
from assay.runtime.server import ServiceSpec, serving
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.runtime.tls import ServerTls
from assay.transport import MAX_BEARER_TOKEN_CHARS
from assay.v1 import resolver_service_pb2
from tests.support.eventually import eventually_async

SERVICE = resolver_service_pb2.DESCRIPTOR.services_by_name["ResolverService"]
WHOAMI = "/assay.v1.ResolverService/GetResolverPolicy"
RSA_KID = "rsa-1"
ED_KID = "ed-1"
READER = Grantee("reader", ("reader",), ("*",))
LEEWAY_SECONDS = 30  # what write_dev_credentials' policy says
ROTATION_DEADLINE_SECONDS = 10.0
INVALID = "ERROR_REASON_CREDENTIALS_INVALID"
EXPIRED = "ERROR_REASON_CREDENTIALS_EXPIRED"


class WhoAmI:
    """The resolver's contract; ``GetResolverPolicy`` reports the bound principal."""

    async def GetResolverPolicy(
        self, request: Any, context: Any
    ) -> resolver_service_pb2.GetResolverPolicyResponse:
        who = current_principal()
        report = {
            "issuer": who.issuer,
            "subject": who.subject,
            "roles": sorted(who.roles),
            "tenants": sorted(who.tenants),
        }
        return resolver_service_pb2.GetResolverPolicyResponse(
            reliability_table_origin=json.dumps(report)
        )

    async def _unused(self, request: Any, context: Any) -> None:
        raise NotImplementedError

    ResolveSemantic = ResolveEvidence = ResolveColumns = ResolveHypotheses = Reconcile = _unused


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64json(value: dict[str, Any]) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def claims(**changes: Any) -> dict[str, Any]:
    """Good claims for ``reader`` from the dev issuer; a change to None drops the claim."""
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": DEV_ISSUER,
        "aud": DEV_AUDIENCE,
        "sub": "reader",
        "iat": now,
        "nbf": now,
        "exp": now + 600,
    }
    base.update(changes)
    return {key: value for key, value in base.items() if value is not None}


def pem_private(key: PrivateKeyTypes) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def rsa_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


def ed_jwk(key: ed25519.Ed25519PrivateKey, kid: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "use": "sig", "alg": "EdDSA"}


@dataclass
class Keys:
    """The server's signing keys (private halves, as an attacker would wish to have them)."""

    es: ec.EllipticCurvePrivateKey
    rsa: rsa.RSAPrivateKey
    ed: ed25519.Ed25519PrivateKey

    def es256(self, body: dict[str, Any], kid: str | None = DEV_KEY_ID) -> str:
        return jwt.encode(body, self.es, algorithm="ES256", headers=_kid(kid))

    def jwks(self) -> dict[str, Any]:
        return {
            "keys": [
                public_jwk(self.es, DEV_KEY_ID),
                rsa_jwk(self.rsa, RSA_KID),
                ed_jwk(self.ed, ED_KID),
            ]
        }


def _kid(kid: str | None) -> dict[str, Any] | None:
    return {"kid": kid} if kid is not None else None


@dataclass
class TlsServer:
    target: str
    root: Path
    keys: Keys
    ca: bytes
    log: io.StringIO

    def channel(self) -> grpc.aio.Channel:
        return grpc.aio.secure_channel(self.target, grpc.ssl_channel_credentials(self.ca))

    async def whoami(self, metadata: Sequence[tuple[str, str]]) -> dict[str, Any] | DecodedError:
        """Who the server took a call with ``metadata`` for (over a TLS channel)."""
        async with self.channel() as channel:
            return await whoami(channel, metadata)

    def write_jwks(self, keys: list[dict[str, Any]]) -> None:
        """Publish a new key set, with an mtime the verifier cannot mistake for the old one."""
        path = self.root / "jwks.json"
        before = path.stat().st_mtime_ns
        path.write_text(json.dumps({"keys": keys}))
        later = max(path.stat().st_mtime_ns, before) + 1_000_000_000
        os.utime(path, ns=(later, later))


async def whoami(
    channel: grpc.aio.Channel, metadata: Sequence[tuple[str, str]]
) -> dict[str, Any] | DecodedError:
    """The principal the server bound for a call with ``metadata``, or the call's failure."""
    try:
        raw = await channel.unary_unary(WHOAMI)(b"", metadata=tuple(metadata), timeout=10)
    except grpc.aio.AioRpcError as error:
        return decode_rpc_error(error)
    response = resolver_service_pb2.GetResolverPolicyResponse.FromString(raw)
    found: dict[str, Any] = json.loads(response.reliability_table_origin)
    return found


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys(
        es=ec.generate_private_key(ec.SECP256R1()),
        rsa=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ed=ed25519.Ed25519PrivateKey.generate(),
    )


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream)
    yield stream
    configure_logging("info")


@pytest.fixture
async def server(tmp_path: Path, keys: Keys, log_stream: io.StringIO) -> AsyncIterator[TlsServer]:
    """A TLS server with the gate ``--credentials`` builds, its JWKS holding ``keys``."""
    creds = write_dev_credentials(tmp_path / "creds", [READER])
    creds.jwks.write_text(json.dumps(keys.jwks()))  # the test's keys, so every test can sign
    security = Security.from_credentials(creds.root)
    config = ServerConfig(host="127.0.0.1", grace_seconds=1.0, tls=security.tls, gate=security.gate)
    spec = ServiceSpec("whoami", SERVICE, WhoAmI(), port=0)
    async with serving([spec], config) as running:
        yield TlsServer(running[0].address, creds.root, keys, creds.ca.read_bytes(), log_stream)


def none_token(body: dict[str, Any]) -> str:
    return f"{b64json({'alg': 'none', 'typ': 'JWT', 'kid': DEV_KEY_ID})}.{b64json(body)}."


def raw_token(header: dict[str, Any], body: dict[str, Any]) -> str:
    """A token with a header PyJWT would not write, and a signature of the right length."""
    return f"{b64json(header)}.{b64json(body)}.{b64url(bytes(64))}"


def hs256_token(secret: bytes, body: dict[str, Any]) -> str:
    """HS256 over the claims with ``secret`` as the HMAC key: the classic confusion attack
    when the secret is the server's public key (PyJWT refuses to make one, so by hand)."""
    signing_input = f"{b64json({'alg': 'HS256', 'typ': 'JWT', 'kid': DEV_KEY_ID})}.{b64json(body)}"
    digest = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(digest)}"


def public_pem(keys: Keys) -> bytes:
    return keys.es.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def tampered(keys: Keys) -> str:
    """A good token whose claims were edited (``sub`` to ``operator``) after signing."""
    header, _, signature = keys.es256(claims()).split(".")
    return f"{header}.{b64json(claims(sub='operator'))}.{signature}"


# name -> how to make the authorization header's value from the server's keys
Attack = Callable[[Keys], str]
INVALID_BEARERS: dict[str, Attack] = {
    "forged signature (another key, right kid)": lambda k: jwt.encode(
        claims(), ec.generate_private_key(ec.SECP256R1()), "ES256", headers={"kid": DEV_KEY_ID}
    ),
    "tampered claims": tampered,
    "unknown kid": lambda k: k.es256(claims(), kid="not-in-the-jwks"),
    "no kid while the JWKS holds several keys": lambda k: k.es256(claims(), kid=None),
    "alg none": lambda k: none_token(claims()),
    "alg a list": lambda k: raw_token({"alg": ["ES256"], "kid": DEV_KEY_ID}, claims()),
    "kid a number": lambda k: raw_token({"alg": "ES256", "kid": 1}, claims()),
    "HS256 keyed with the public key PEM": lambda k: hs256_token(public_pem(k), claims()),
    "HS256 keyed with the public JWK": lambda k: hs256_token(
        json.dumps(public_jwk(k.es, DEV_KEY_ID)).encode(), claims()
    ),
    "RS256 header on the EC key": lambda k: jwt.encode(
        claims(), k.rsa, "RS256", headers={"kid": DEV_KEY_ID}
    ),
    "ES256 header on the RSA key": lambda k: k.es256(claims(), kid=RSA_KID),
    "HS512 header": lambda k: jwt.encode(claims(), "s" * 64, "HS512", headers={"kid": DEV_KEY_ID}),
    "wrong issuer": lambda k: k.es256(claims(iss="https://attacker.example")),
    "wrong audience": lambda k: k.es256(claims(aud="someone-else")),
    "no audience": lambda k: k.es256(claims(aud=None)),
    "no subject": lambda k: k.es256(claims(sub=None)),
    "empty subject": lambda k: k.es256(claims(sub="")),
    "no expiry": lambda k: k.es256(claims(exp=None)),
    "not a JWT": lambda k: "not-a-jwt",
    "three bad segments": lambda k: "a.b.c",
}
# Times that are not NumericDates (a JSON number of seconds from 0 to the end of the year
# 9999): each is CREDENTIALS_INVALID in exp, nbf and iat alike, never INTERNAL.
NOT_NUMERIC_DATES: dict[str, Any] = {
    "10**30": 10**30,
    "10**400": 10**400,
    "1e300": 1e300,
    "-1": -1,
    "-10**30": -(10**30),
    "NaN": float("nan"),
    "a numeric string": "2000000000",
    "true": True,
    "a list": [2000000000],
}


def _with_time(claim: str, value: Any) -> Attack:
    return lambda k: k.es256(claims(**{claim: value}))


INVALID_BEARERS.update(
    {
        f"{claim} {name}": _with_time(claim, value)
        for claim in ("exp", "nbf", "iat")
        for name, value in NOT_NUMERIC_DATES.items()
    }
)
EXPIRED_BEARERS: dict[str, Attack] = {
    "expired beyond the leeway": lambda k: k.es256(claims(exp=int(time.time()) - 120)),
    "not valid yet beyond the leeway": lambda k: k.es256(claims(nbf=int(time.time()) + 600)),
    "issued in the future beyond the leeway": lambda k: k.es256(claims(iat=int(time.time()) + 600)),
}


class TestTokensRefused:
    @pytest.mark.parametrize("attack", sorted(INVALID_BEARERS))
    async def test_invalid(self, server: TlsServer, attack: str) -> None:
        """Each forgery or malformed token: UNAUTHENTICATED, CREDENTIALS_INVALID."""
        token = INVALID_BEARERS[attack](server.keys)
        failure = await server.whoami(bearer(token))
        assert isinstance(failure, DecodedError), f"{attack} was accepted as {failure}"
        assert failure.code == grpc.StatusCode.UNAUTHENTICATED, failure
        assert failure.reason == INVALID, failure
        assert token not in failure.message

    @pytest.mark.parametrize("attack", sorted(EXPIRED_BEARERS))
    async def test_expired(self, server: TlsServer, attack: str) -> None:
        """Outside ``nbf``..``exp`` by more than the leeway: CREDENTIALS_EXPIRED."""
        failure = await server.whoami(bearer(EXPIRED_BEARERS[attack](server.keys)))
        assert isinstance(failure, DecodedError), f"{attack} was accepted"
        assert failure.code == grpc.StatusCode.UNAUTHENTICATED, failure
        assert failure.reason == EXPIRED, failure

    @pytest.mark.parametrize(
        "header",
        ["Basic cmVhZGVyOnNlY3JldA==", "Bearer", "Bearer    ", "Token abc", "bearer-abc"],
    )
    async def test_not_a_bearer_header(self, server: TlsServer, header: str) -> None:
        """An authorization header that is not 'Bearer <JWT>' is invalid, not ignored."""
        failure = await server.whoami((("authorization", header),))
        assert isinstance(failure, DecodedError), f"{header!r} was accepted"
        assert failure.code == grpc.StatusCode.UNAUTHENTICATED, failure
        assert failure.reason == INVALID, failure

    async def test_no_header_is_missing(self, server: TlsServer) -> None:
        """No authorization header at all: CREDENTIALS_MISSING."""
        failure = await server.whoami(())
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.UNAUTHENTICATED
        assert failure.reason == "ERROR_REASON_CREDENTIALS_MISSING"

    async def test_valid_token_without_a_policy_entry(self, server: TlsServer) -> None:
        """Authenticated but granted nothing: PERMISSION_DENIED, ROLE_REQUIRED."""
        failure = await server.whoami(bearer(server.keys.es256(claims(sub="stranger"))))
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.PERMISSION_DENIED, failure
        assert failure.reason == "ERROR_REASON_ROLE_REQUIRED", failure
        assert "stranger" in failure.message


class TestTokensAccepted:
    @pytest.mark.parametrize(
        ("name", "sign"),
        [
            ("ES256", lambda k: k.es256(claims())),
            ("RS256", lambda k: jwt.encode(claims(), k.rsa, "RS256", headers={"kid": RSA_KID})),
            ("EdDSA", lambda k: jwt.encode(claims(), k.ed, "EdDSA", headers={"kid": ED_KID})),
        ],
    )
    async def test_each_key_type_verifies(self, server: TlsServer, name: str, sign: Attack) -> None:
        """A token signed by any key of the JWKS, with its own algorithm, is the principal
        the policy grants: its issuer and subject, roles and tenants."""
        who = await server.whoami(bearer(sign(server.keys)))
        assert who == {
            "issuer": DEV_ISSUER,
            "subject": "reader",
            "roles": ["reader"],
            "tenants": ["*"],
        }

    @pytest.mark.parametrize(
        "change",
        [
            {"exp": -(LEEWAY_SECONDS // 3)},
            {"nbf": LEEWAY_SECONDS // 3},
        ],
        ids=["expired within the leeway", "not yet valid within the leeway"],
    )
    async def test_within_the_leeway(self, server: TlsServer, change: dict[str, int]) -> None:
        """Clock skew smaller than the leeway is forgiven."""
        ((claim, offset),) = change.items()
        token = server.keys.es256(claims(**{claim: int(time.time()) + offset}))
        who = await server.whoami(bearer(token))
        assert isinstance(who, dict), who
        assert who["subject"] == "reader"

    async def test_fractional_times_are_numeric_dates(self, server: TlsServer) -> None:
        """exp, nbf and iat with fractions of a second verify, and again from the cache."""
        moment = time.time()
        token = server.keys.es256(claims(exp=moment + 600.5, nbf=moment - 0.5, iat=moment - 0.25))
        for _ in range(2):
            who = await server.whoami(bearer(token))
            assert isinstance(who, dict), who
            assert who["subject"] == "reader"

    async def test_a_token_file_dev_credentials_wrote(self, tmp_path: Path) -> None:
        """The tokens `assay dev-credentials` writes are what its own gate accepts."""
        creds = write_dev_credentials(tmp_path / "creds", [READER])
        gate = Security.from_credentials(creds.root).gate
        assert gate.verifier is not None
        assert gate.verifier.verify(creds.token("reader"))["sub"] == "reader"


def padded_token(keys: Keys, size: int) -> str:
    """A good ES256 token for ``reader``, the longest not over ``size`` characters (a
    padding claim takes the room; base64url grows in steps, so it may be up to 3 short)."""
    pad = max(0, (size - len(keys.es256(claims(pad="")))) * 3 // 4 - 8)
    token = keys.es256(claims(pad="x" * pad))
    while len(longer := keys.es256(claims(pad="x" * (pad + 1)))) <= size:
        pad, token = pad + 1, longer
    assert size - 3 <= len(token) <= size, (len(token), size)
    return token


class TestTokenSize:
    """Bearer tokens up to the cap (16 KiB) reach the server's own check on every call,
    through the client library's channel: gRPC's metadata limits refuse none of them."""

    @pytest.mark.parametrize(
        "size", [8 * 1024, 12 * 1024, int(15.9 * 1024), MAX_BEARER_TOKEN_CHARS]
    )
    async def test_tokens_up_to_the_cap_always_pass(self, server: TlsServer, size: int) -> None:
        """50 calls each with a token of 8, 12, 15.9 and 16 KiB: every one is the principal."""
        token = padded_token(server.keys, size)
        creds = Credentials(token=token, ca=server.root / "ca.pem")
        async with aio_channel(server.target, [SERVICE], creds) as channel:
            for _ in range(50):
                who = await whoami(channel, ())
                assert isinstance(who, dict), (len(token), who)
                assert who["subject"] == "reader"

    async def test_a_token_over_the_cap_gets_the_servers_own_refusal(
        self, server: TlsServer
    ) -> None:
        """A 17 KiB token: UNAUTHENTICATED, CREDENTIALS_INVALID, saying how long it is and the
        limit; never gRPC's bare RESOURCE_EXHAUSTED (tried 50 times)."""
        token = padded_token(server.keys, 17 * 1024)
        creds = Credentials(token=token, ca=server.root / "ca.pem")
        async with aio_channel(server.target, [SERVICE], creds) as channel:
            for _ in range(50):
                failure = await whoami(channel, ())
                assert isinstance(failure, DecodedError), failure
                assert (failure.code, failure.reason) == (
                    grpc.StatusCode.UNAUTHENTICATED,
                    INVALID,
                ), failure
                assert f"the limit is {MAX_BEARER_TOKEN_CHARS}" in failure.message
                assert token not in failure.message


class TestKeyRotation:
    async def test_rotate_without_restart(self, server: TlsServer) -> None:
        """Publish a new key beside the old: new tokens pass, old ones still do; drop the
        old key: its tokens are refused, the new ones still pass. No restart."""
        keys = server.keys
        old_token = keys.es256(claims())
        new_key = ec.generate_private_key(ec.SECP256R1())
        new_token = jwt.encode(claims(), new_key, "ES256", headers={"kid": "assay-dev-2"})
        before = await server.whoami(bearer(new_token))
        assert isinstance(before, DecodedError)
        assert before.reason == INVALID

        async def accepted(token: str) -> bool:
            return isinstance(await server.whoami(bearer(token)), dict)

        async def refused(token: str) -> bool:
            failure = await server.whoami(bearer(token))
            return isinstance(failure, DecodedError) and failure.reason == INVALID

        old_jwk = public_jwk(keys.es, DEV_KEY_ID)
        new_jwk = public_jwk(new_key, "assay-dev-2")
        server.write_jwks([old_jwk, new_jwk])
        await eventually_async(
            lambda: accepted(new_token),
            message="the new key to be picked up",
            timeout=ROTATION_DEADLINE_SECONDS,
        )
        assert await accepted(old_token)

        server.write_jwks([new_jwk])
        await eventually_async(
            lambda: refused(old_token),
            message="the old key to be dropped",
            timeout=ROTATION_DEADLINE_SECONDS,
        )
        assert await accepted(new_token)


class TestTransportAndLog:
    async def test_plaintext_to_a_tls_server_fails(self, server: TlsServer) -> None:
        """A plaintext channel never completes a call to the TLS port, token or not."""
        token = server.keys.es256(claims())
        async with grpc.aio.insecure_channel(server.target) as channel:
            failure = await whoami(channel, bearer(token))
        assert isinstance(failure, DecodedError), "plaintext reached the servicer"
        assert failure.code == grpc.StatusCode.UNAVAILABLE, failure

    async def test_a_client_trusting_another_ca_fails(self, server: TlsServer) -> None:
        """The server's certificate does not verify against a CA that did not sign it."""
        _, other_ca = make_ca("Someone else", dt.datetime.now(dt.UTC), dt.timedelta(days=1))
        trust = other_ca.public_bytes(serialization.Encoding.PEM)
        credentials = grpc.ssl_channel_credentials(trust)
        async with grpc.aio.secure_channel(server.target, credentials) as channel:
            failure = await whoami(channel, bearer(server.keys.es256(claims())))
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.UNAVAILABLE, failure

    async def test_tokens_never_reach_the_log(self, server: TlsServer) -> None:
        """The RPC lines of an accepted and a refused call hold neither token, nor either
        token's signature, and do name the accepted caller."""
        good = server.keys.es256(claims())
        bad = jwt.encode(
            claims(), ec.generate_private_key(ec.SECP256R1()), "ES256", headers={"kid": DEV_KEY_ID}
        )
        assert isinstance(await server.whoami(bearer(good)), dict)
        assert isinstance(await server.whoami(bearer(bad)), DecodedError)
        text = server.log.getvalue()
        lines = [json.loads(line) for line in text.splitlines()]
        rpc = [line for line in lines if line.get("event") == "rpc"]
        assert [line["code"] for line in rpc] == ["OK", "UNAUTHENTICATED"], rpc
        for token in (good, bad):
            assert token not in text
            assert token.rsplit(".", 1)[1] not in text
        assert "Bearer" not in text


def _pem_cert(cert: Any) -> bytes:
    data: bytes = cert.public_bytes(serialization.Encoding.PEM)
    return data


@dataclass
class MtlsServer:
    target: str
    server_ca: bytes
    client_ca: tuple[Any, Any]  # (key, certificate)

    def client(self, common_name: str, ca: tuple[Any, Any] | None = None) -> grpc.aio.Channel:
        """A channel presenting a client certificate for ``common_name`` signed by ``ca``
        (default: the CA the server trusts)."""
        ca_key, ca_cert = ca or self.client_ca
        now = dt.datetime.now(dt.UTC)
        key, cert = make_leaf(ca_key, ca_cert, common_name, now, dt.timedelta(days=1), client=True)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=self.server_ca,
            private_key=pem_private(key),
            certificate_chain=_pem_cert(cert),
        )
        return grpc.aio.secure_channel(self.target, credentials)


MTLS_POLICY = """
[[principals]]
issuer = "x509"
subject = "reader-bot"
roles = ["reader"]
tenants = ["acme"]
"""


@pytest.fixture
async def mtls_server(tmp_path: Path) -> AsyncIterator[MtlsServer]:
    """TLS with a client CA and a policy mapping issuer "x509" + CN "reader-bot" to reader."""
    creds = write_dev_credentials(tmp_path / "creds", [READER])
    now = dt.datetime.now(dt.UTC)
    client_ca = make_ca("Test client CA", now, dt.timedelta(days=1))
    client_ca_pem = tmp_path / "client-ca.pem"
    client_ca_pem.write_bytes(_pem_cert(client_ca[1]))
    policy = tmp_path / "mtls-policy.toml"
    policy.write_text(MTLS_POLICY)
    tls = ServerTls(creds.server_cert, creds.server_key, client_ca=client_ca_pem)
    gate = Gate.from_files(policy, None, client_certificates=True)
    config = ServerConfig(host="127.0.0.1", grace_seconds=1.0, tls=tls, gate=gate)
    spec = ServiceSpec("whoami", SERVICE, WhoAmI(), port=0)
    async with serving([spec], config) as running:
        yield MtlsServer(running[0].address, creds.ca.read_bytes(), client_ca)


class TestMutualTls:
    async def test_a_certificate_from_the_ca_is_its_common_name(
        self, mtls_server: MtlsServer
    ) -> None:
        """A client certificate the CA signed is admitted as issuer "x509", subject its CN,
        with what the policy grants that CN."""
        async with mtls_server.client("reader-bot") as channel:
            who = await whoami(channel, ())
        assert who == {
            "issuer": "x509",
            "subject": "reader-bot",
            "roles": ["reader"],
            "tenants": ["acme"],
        }

    async def test_a_certificate_the_policy_does_not_name_holds_no_role(
        self, mtls_server: MtlsServer
    ) -> None:
        """Authenticated by the CA but granted nothing: PERMISSION_DENIED, ROLE_REQUIRED."""
        async with mtls_server.client("somebody-else") as channel:
            failure = await whoami(channel, ())
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.PERMISSION_DENIED, failure
        assert failure.reason == "ERROR_REASON_ROLE_REQUIRED"
        assert "somebody-else (x509)" in failure.message

    async def test_a_certificate_from_another_ca_fails_the_handshake(
        self, mtls_server: MtlsServer
    ) -> None:
        """Same CN, signed by a CA the server does not trust: no connection at all."""
        stranger_ca = make_ca("Stranger CA", dt.datetime.now(dt.UTC), dt.timedelta(days=1))
        async with mtls_server.client("reader-bot", ca=stranger_ca) as channel:
            failure = await whoami(channel, ())
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.UNAVAILABLE, failure

    async def test_no_client_certificate_fails_the_handshake(self, mtls_server: MtlsServer) -> None:
        """A client CA on the server makes a client certificate mandatory."""
        credentials = grpc.ssl_channel_credentials(mtls_server.server_ca)
        async with grpc.aio.secure_channel(mtls_server.target, credentials) as channel:
            failure = await whoami(channel, ())
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.UNAVAILABLE, failure

    async def test_a_bearer_token_where_none_is_accepted_is_refused(
        self, mtls_server: MtlsServer
    ) -> None:
        """A server without a JWKS refuses a bearer token rather than ignoring it."""
        async with mtls_server.client("reader-bot") as channel:
            failure = await whoami(channel, bearer("a.b.c"))
        assert isinstance(failure, DecodedError)
        assert failure.code == grpc.StatusCode.UNAUTHENTICATED, failure
        assert failure.reason == INVALID
