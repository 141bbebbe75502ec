"""Bearer JWTs verified against a JWKS file, with PyJWT (no hand-written crypto).

A token passes when it is signed with a key of the JWKS chosen by its ``kid``, with that
key's own algorithm (so ``alg: none``, HMAC with a public key and other algorithm confusion
are refused before a signature is checked); issued by an accepted issuer for the configured
audience, with a subject, inside ``nbf``..``exp`` give or take the leeway; and with times
that are NumericDates, checked here once the signature holds, since PyJWT reads ``"123"`` or
``true`` as a time and lets ``10**400`` through to a float conversion that raises: anything
else is CREDENTIALS_INVALID, never INTERNAL.

The JWKS file is re-read when it changes (checked at most once a second), so keys rotate
without a restart. A verified token is remembered by its SHA-256 (at most
``VERIFIED_CACHE_SIZE``, least recently used out) until it expires, so a client pays for one
signature check, not one per call; a change of the JWKS forgets them all.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from assay.errors import Reason, Unauthenticated

# The algorithms Assay accepts, each tied to the key type that must carry it.
ACCEPTED_ALGORITHMS = frozenset({"RS256", "ES256", "EdDSA"})
DEFAULT_LEEWAY_SECONDS = 30.0
_RELOAD_CHECK_SECONDS = 1.0
VERIFIED_CACHE_SIZE = 4096
# The last second of the year 9999 (UTC): the largest NumericDate accepted. Every date up
# to it is exact as a float and readable by ``datetime``.
MAX_NUMERIC_DATE = 253_402_300_799
_TIME_CLAIMS = ("exp", "nbf", "iat")


def invalid(message: str) -> Unauthenticated:
    return Unauthenticated(Reason.CREDENTIALS_INVALID, message)


def _expired(message: str) -> Unauthenticated:
    return Unauthenticated(Reason.CREDENTIALS_EXPIRED, message)


@dataclass(frozen=True)
class _KeySet:
    keys: Mapping[str, jwt.PyJWK]  # by kid ("" for a key without one)
    mtime_ns: int


def load_jwks(path: Path) -> dict[str, jwt.PyJWK]:
    """The usable keys of a JWKS file, by ``kid``; ValueError when it holds none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read JWKS {path}: {error}") from None
    entries = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"JWKS {path}: expected an object with a 'keys' array")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:  # PyJWKError, and InvalidKeyError for a curve like X25519
            continue  # a key type, curve or encoding Assay does not verify with
        if key.algorithm_name not in ACCEPTED_ALGORITHMS:
            continue
        kid = entry.get("kid", "")
        if not isinstance(kid, str) or kid in keys:
            raise ValueError(f"JWKS {path}: key ids must be unique strings ({kid!r})")
        keys[kid] = key
    if not keys:
        raise ValueError(
            f"JWKS {path} has no usable signing key ({', '.join(sorted(ACCEPTED_ALGORITHMS))})"
        )
    return keys


class TokenVerifier:
    """Verifies bearer tokens for the accepted issuers and one audience."""

    def __init__(
        self,
        jwks_path: Path,
        issuers: frozenset[str],
        audience: str,
        leeway_seconds: float = DEFAULT_LEEWAY_SECONDS,
    ) -> None:
        if not issuers:
            raise ValueError("token verification needs at least one accepted issuer")
        if not audience:
            raise ValueError("token verification needs an audience")
        self.jwks_path = jwks_path
        self.issuers = issuers
        self.audience = audience
        self.leeway = leeway_seconds
        self._keys = _KeySet(load_jwks(jwks_path), self._mtime())
        self._checked = time.monotonic()
        # sha256(token) -> (claims, the wall-clock second past which it is expired)
        self._verified: OrderedDict[bytes, tuple[dict[str, Any], float]] = OrderedDict()

    def forget_verified(self) -> None:
        """Forget every remembered token (the next call of each is checked in full)."""
        self._verified.clear()

    def _mtime(self) -> int:
        try:
            return os.stat(self.jwks_path).st_mtime_ns
        except OSError:
            return -1

    def _current_keys(self) -> Mapping[str, jwt.PyJWK]:
        """The key set, re-read when the file changed (a bad new file keeps the old keys)."""
        moment = time.monotonic()
        if moment - self._checked >= _RELOAD_CHECK_SECONDS:
            self._checked = moment
            mtime = self._mtime()
            if mtime != self._keys.mtime_ns:
                # A bad new file keeps the keys that were good.
                with contextlib.suppress(ValueError):
                    self._keys = _KeySet(load_jwks(self.jwks_path), mtime)
                    self.forget_verified()
        return self._keys.keys

    def _key_for(self, header: Mapping[str, Any]) -> jwt.PyJWK:
        algorithm = header.get("alg")
        # An unhashable "alg" (a list) must be refused here, not crash the set lookup.
        if not isinstance(algorithm, str) or algorithm not in ACCEPTED_ALGORITHMS:
            raise invalid(f"token algorithm {algorithm!r} is not accepted")
        keys = self._current_keys()
        kid = header.get("kid")
        if kid is None and len(keys) == 1:
            key = next(iter(keys.values()))
        elif not isinstance(kid, str) or kid not in keys:
            raise invalid(f"token key id {kid!r} is not in the JWKS")
        else:
            key = keys[kid]
        if key.algorithm_name != algorithm:
            raise invalid(f"token algorithm {algorithm} does not match its key's")
        return key

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims; ``Unauthenticated`` with the precise reason otherwise."""
        self._current_keys()  # a changed JWKS forgets every remembered token first
        fingerprint = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        remembered = self._verified.get(fingerprint)
        if remembered is not None:
            if time.time() < remembered[1]:
                self._verified.move_to_end(fingerprint)
                return remembered[0]
            del self._verified[fingerprint]  # expired: the full check says so precisely
        claims = self._verify_fully(token)
        self._verified[fingerprint] = (claims, float(claims["exp"]) + self.leeway)
        if len(self._verified) > VERIFIED_CACHE_SIZE:
            self._verified.popitem(last=False)
        return claims

    def _verify_fully(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:  # DecodeError, or a header PyJWT refuses (a numeric kid)
            raise invalid("the bearer token is not a JWT") from None
        key = self._key_for(header)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self.issuers,
                leeway=self.leeway,
                options={
                    "require": ["exp", "iss", "aud", "sub"],
                    # The times are checked below, with their types and range.
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidTokenError as error:
            raise invalid(f"token rejected: {error}") from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise invalid("token has no subject")
        self._check_times(claims)
        return claims

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        """``exp``, ``nbf`` and ``iat`` are NumericDates (else CREDENTIALS_INVALID), and
        now is inside them give or take the leeway (else CREDENTIALS_EXPIRED)."""
        times = {name: numeric_date(claims, name) for name in _TIME_CLAIMS}
        moment = time.time()
        exp, nbf, iat = times["exp"], times["nbf"], times["iat"]
        if exp is not None and exp <= moment - self.leeway:
            raise _expired("token has expired (exp)")
        if nbf is not None and nbf > moment + self.leeway:
            raise _expired("token is not valid yet (nbf)")
        if iat is not None and iat > moment + self.leeway:
            raise _expired("token is not valid yet: issued in the future (iat)")


def numeric_date(claims: Mapping[str, Any], name: str) -> float | None:
    """The claim as seconds since 1970 (None when absent); CREDENTIALS_INVALID unless it is
    a JSON number from 0 to ``MAX_NUMERIC_DATE`` (not a boolean, string, list or NaN)."""
    if name not in claims:
        return None
    value = claims[name]
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # Compared, never converted first: float(10**400) raises; NaN compares false.
    if not number or not 0 <= value <= MAX_NUMERIC_DATE:
        raise invalid(
            f"token claim {name} is not a NumericDate (seconds since 1970, "
            f"from 0 to {MAX_NUMERIC_DATE}, the end of the year 9999)"
        )
    return float(value)
