"""The JWKS file and the bearer header, without a server: which keys a JWKS yields, when
the file is read again (on a fake clock), and how the authorization header is read."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from assay.errors import Reason, Unauthenticated
from assay.runtime.auth import jwks, tokens
from assay.runtime.auth.dev_credentials import DEV_AUDIENCE, DEV_ISSUER, public_jwk
from assay.runtime.auth.gate import Gate
from assay.runtime.auth.policy import parse_policy
from assay.runtime.auth.tokens import TokenVerifier, load_jwks
from tests.support.eventually import eventually

EC_KEY = ec.generate_private_key(ec.SECP256R1())


def es_jwk(key: ec.EllipticCurvePrivateKey = EC_KEY, kid: str = "k1") -> dict[str, Any]:
    return public_jwk(key, kid)


def write(path: Path, *keys: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": list(keys)}))
    return path


def token(key: ec.EllipticCurvePrivateKey = EC_KEY, kid: str = "k1", **claims: Any) -> str:
    body = {"iss": DEV_ISSUER, "aud": DEV_AUDIENCE, "sub": "alice", "exp": time.time() + 60}
    return jwt.encode({**body, **claims}, key, "ES256", headers={"kid": kid})


class TestLoadJwks:
    def test_keeps_the_three_accepted_key_types(self, tmp_path: Path) -> None:
        """RSA (RS256), EC P-256 (ES256) and Ed25519 (EdDSA) keys load, by kid."""
        rsa_jwk = json.loads(
            jwt.algorithms.RSAAlgorithm.to_jwk(
                rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
            )
        )
        ed_jwk = json.loads(
            jwt.algorithms.OKPAlgorithm.to_jwk(ed25519.Ed25519PrivateKey.generate().public_key())
        )
        path = write(
            tmp_path / "jwks.json", es_jwk(), {**rsa_jwk, "kid": "r"}, {**ed_jwk, "kid": "e"}
        )
        keys = load_jwks(path)
        assert {kid: key.algorithm_name for kid, key in keys.items()} == {
            "k1": "ES256",
            "r": "RS256",
            "e": "EdDSA",
        }

    @pytest.mark.parametrize(
        "skipped",
        [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {**es_jwk(ec.generate_private_key(ec.SECP384R1()), "p384"), "alg": "ES384"},
            {**es_jwk(kid="enc"), "use": "enc"},
            {"kty": "OKP", "crv": "X25519", "x": "hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo"},
            {"kty": "EC", "crv": "P-256", "kid": "broken"},
            {"kty": "RSA", "kid": "no-modulus"},
            {"x": "no kty"},
            "not an object",
        ],
        ids=["hmac", "p384", "use-enc", "x25519", "ec-no-coords", "rsa-no-n", "no-kty", "string"],
    )
    def test_skips_what_it_cannot_verify_with(self, tmp_path: Path, skipped: Any) -> None:
        """Keys of other types, curves or uses (an IdP's JWKS may hold them) are skipped,
        not fatal, and never become verification keys."""
        keys = load_jwks(write(tmp_path / "jwks.json", skipped, es_jwk()))
        assert list(keys) == ["k1"]

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("{", "cannot read JWKS"),
            ("[]", "expected an object with a 'keys' array"),
            ('{"keys": {}}', "expected an object with a 'keys' array"),
            ('{"keys": []}', "has no usable signing key (ES256, EdDSA, RS256)"),
            (json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}), "has no usable signing key"),
            (json.dumps({"keys": [es_jwk(), es_jwk()]}), "key ids must be unique"),
            (json.dumps({"keys": [{**es_jwk(), "kid": 7}]}), "key ids must be unique strings"),
        ],
    )
    def test_unusable_files(self, tmp_path: Path, content: str, message: str) -> None:
        path = tmp_path / "jwks.json"
        path.write_text(content)
        with pytest.raises(ValueError, match="JWKS") as caught:
            load_jwks(path)
        assert message in str(caught.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="cannot read JWKS"):
            load_jwks(tmp_path / "absent.json")


class FakeClock:
    """Stands in for the ``time`` module inside ``tokens`` and ``jwks``: a monotonic clock
    the test moves, and the real wall clock (token expiry is PyJWT's, against the real one)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return time.time()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(tokens, "time", fake)
    monkeypatch.setattr(jwks, "time", fake)
    return fake


def bump(path: Path) -> None:
    """Give the file an mtime it has not had (a rewrite can keep the same one)."""
    later = path.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(later, later))


class TestReload:
    def verifier(self, path: Path) -> TokenVerifier:
        return TokenVerifier(path, frozenset({DEV_ISSUER}), DEV_AUDIENCE)

    def test_read_again_at_most_once_a_second(self, tmp_path: Path, clock: FakeClock) -> None:
        """A changed file is noticed on the first check a second after the last one."""
        path = write(tmp_path / "jwks.json", es_jwk())
        verifier = self.verifier(path)
        other = ec.generate_private_key(ec.SECP256R1())
        write(path, es_jwk(), es_jwk(other, "k2"))
        bump(path)
        clock.now += 0.5
        with pytest.raises(Unauthenticated):
            verifier.verify(token(other, "k2"))
        clock.now += 0.6
        assert verifier.verify(token(other, "k2"))["sub"] == "alice"

    @pytest.mark.parametrize("damage", ["garbage", "no usable key", "deleted"])
    def test_a_bad_new_file_keeps_the_good_keys(
        self, tmp_path: Path, clock: FakeClock, damage: str
    ) -> None:
        """A half-written, emptied or removed JWKS does not lock everyone out."""
        path = write(tmp_path / "jwks.json", es_jwk())
        verifier = self.verifier(path)
        if damage == "garbage":
            path.write_text("{")
            bump(path)
        elif damage == "no usable key":
            write(path)
            bump(path)
        else:
            path.unlink()
        clock.now += 2
        assert verifier.verify(token())["sub"] == "alice"

    def test_a_single_key_may_omit_kid(self, tmp_path: Path) -> None:
        """With one key in the set, a token without ``kid`` is checked against it."""
        verifier = self.verifier(write(tmp_path / "jwks.json", es_jwk()))
        unnamed = jwt.encode(
            {"iss": DEV_ISSUER, "aud": DEV_AUDIENCE, "sub": "bob", "exp": time.time() + 60},
            EC_KEY,
            "ES256",
        )
        assert verifier.verify(unnamed)["sub"] == "bob"

    @pytest.mark.parametrize(
        ("issuers", "audience", "message"),
        [(frozenset(), "assay", "issuer"), (frozenset({DEV_ISSUER}), "", "audience")],
    )
    def test_needs_issuers_and_an_audience(
        self, tmp_path: Path, issuers: frozenset[str], audience: str, message: str
    ) -> None:
        path = write(tmp_path / "jwks.json", es_jwk())
        with pytest.raises(ValueError, match=message):
            TokenVerifier(path, issuers, audience)


class TestVerifiedCache:
    """A token is checked once and remembered until it expires or the JWKS changes."""

    def verifier(self, path: Path, leeway: float = 30) -> TokenVerifier:
        return TokenVerifier(path, frozenset({DEV_ISSUER}), DEV_AUDIENCE, leeway)

    def counting(self, monkeypatch: pytest.MonkeyPatch, verifier: TokenVerifier) -> list[str]:
        seen: list[str] = []
        full = verifier._verify_fully

        def counted(raw: str) -> dict[str, Any]:
            seen.append(raw)
            return full(raw)

        monkeypatch.setattr(verifier, "_verify_fully", counted)
        return seen

    def test_the_same_token_is_checked_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        verifier = self.verifier(write(tmp_path / "jwks.json", es_jwk()))
        full = self.counting(monkeypatch, verifier)
        first, other = token(), token(sub="bob")
        assert [verifier.verify(t)["sub"] for t in (first, first, other, first)] == [
            "alice",
            "alice",
            "bob",
            "alice",
        ]
        assert full == [first, other]

    def test_a_remembered_token_still_expires(self, tmp_path: Path) -> None:
        """Remembering never outlives ``exp``: once it passes, the token is EXPIRED."""
        verifier = self.verifier(write(tmp_path / "jwks.json", es_jwk()), leeway=0)
        expires = int(time.time()) + 1
        short = token(exp=expires)
        assert verifier.verify(short)["sub"] == "alice"
        eventually(lambda: time.time() > expires, message="the wall clock to pass exp", timeout=5)
        with pytest.raises(Unauthenticated) as refused:
            verifier.verify(short)
        assert refused.value.reason is Reason.CREDENTIALS_EXPIRED

    def test_a_changed_jwks_forgets_every_token(
        self, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Dropping a key from the file stops its remembered tokens at the next reload."""
        path = write(tmp_path / "jwks.json", es_jwk())
        verifier = self.verifier(path)
        remembered = token()
        assert verifier.verify(remembered)["sub"] == "alice"
        other = ec.generate_private_key(ec.SECP256R1())
        write(path, es_jwk(other, "k2"))
        bump(path)
        clock.now += 1.1
        with pytest.raises(Unauthenticated) as refused:
            verifier.verify(remembered)
        assert refused.value.reason is Reason.CREDENTIALS_INVALID

    def test_bounded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """At most VERIFIED_CACHE_SIZE tokens are remembered; the least recent goes first."""
        monkeypatch.setattr(tokens, "VERIFIED_CACHE_SIZE", 2)
        verifier = self.verifier(write(tmp_path / "jwks.json", es_jwk()))
        full = self.counting(monkeypatch, verifier)
        a, b, c = token(sub="a"), token(sub="b"), token(sub="c")
        for raw in (a, b, a, c, a, b):
            verifier.verify(raw)
        assert full == [a, b, c, b]  # b was the least recent when c came in


class TestAuthorizationHeader:
    @pytest.fixture
    def gate(self, tmp_path: Path) -> Gate:
        path = write(tmp_path / "jwks.json", es_jwk())
        policy = parse_policy(
            {
                "tokens": {"issuers": [DEV_ISSUER], "audience": DEV_AUDIENCE},
                "principals": [{"subject": "alice", "roles": ["reader"]}],
            },
            tmp_path,
        )
        verifier = TokenVerifier(path, frozenset({DEV_ISSUER}), DEV_AUDIENCE)
        return Gate(policy, verifier)

    @pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
    def test_scheme_is_case_insensitive(self, gate: Gate, scheme: str) -> None:
        who = gate.authenticate((("authorization", f"{scheme} {token()}"),), {})
        assert (who.issuer, who.subject) == (DEV_ISSUER, "alice")

    def test_binary_metadata_value(self, gate: Gate) -> None:
        who = gate.authenticate((("authorization", f"Bearer {token()}".encode()),), {})
        assert who.subject == "alice"

    def test_other_metadata_is_ignored(self, gate: Gate) -> None:
        """Only ``authorization`` carries a credential; no header is MISSING."""
        with pytest.raises(Unauthenticated) as caught:
            gate.authenticate((("x-authorization", f"Bearer {token()}"),), {})
        assert caught.value.reason == Reason.CREDENTIALS_MISSING

    @pytest.mark.parametrize(
        "value",
        ["Bearer " + "a" * (16 * 1024 + 1), "Bearer", "Basic YTpi", "Bearer\t"],
        ids=["too long", "empty", "basic", "tab"],
    )
    def test_bad_header_is_invalid(self, gate: Gate, value: str) -> None:
        with pytest.raises(Unauthenticated) as caught:
            gate.authenticate((("authorization", value),), {})
        assert caught.value.reason == Reason.CREDENTIALS_INVALID

    def test_a_client_certificate_alone_does_not_count_without_mtls(self, gate: Gate) -> None:
        """A gate not configured for client certificates ignores a CN in the auth context."""
        with pytest.raises(Unauthenticated) as caught:
            gate.authenticate((), {"x509_common_name": [b"alice"]})
        assert caught.value.reason == Reason.CREDENTIALS_MISSING
