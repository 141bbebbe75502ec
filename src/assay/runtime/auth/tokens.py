"""Bearer JWTs verified against a JWKS (a file or a URL: ``jwks``), with PyJWT (no
hand-written crypto).

A token passes when it is signed with a key of the JWKS chosen by its ``kid``, with that
key's own algorithm (so ``alg: none``, HMAC with a public key and other algorithm confusion
are refused before a signature is checked); issued by an accepted issuer for the configured
audience, with a subject, inside ``nbf``..``exp`` give or take the leeway; and with times
that are NumericDates, checked here once the signature holds, since PyJWT reads ``"123"`` or
``true`` as a time and lets ``10**400`` through to a float conversion that raises: anything
else is CREDENTIALS_INVALID, never INTERNAL.

Keys rotate without a restart: a file is re-read when it changes, a URL refetched
(``jwks``). A verified token is remembered by its SHA-256 (at most
``VERIFIED_CACHE_SIZE``, least recently used out) until it expires, so a client pays for one
signature check, not one per call; a change of the JWKS forgets them all.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt

from assay.errors import Reason, Unauthenticated
from assay.runtime.auth.jwks import ACCEPTED_ALGORITHMS, Keys, key_source, load_jwks

__all__ = ["ACCEPTED_ALGORITHMS", "TokenVerifier", "invalid", "load_jwks", "numeric_date"]

DEFAULT_LEEWAY_SECONDS = 30.0
VERIFIED_CACHE_SIZE = 4096
# The last second of the year 9999 (UTC): the largest NumericDate accepted. Every date up
# to it is exact as a float and readable by ``datetime``.
MAX_NUMERIC_DATE = 253_402_300_799
_TIME_CLAIMS = ("exp", "nbf", "iat")


def invalid(message: str) -> Unauthenticated:
    return Unauthenticated(Reason.CREDENTIALS_INVALID, message)


def _expired(message: str) -> Unauthenticated:
    return Unauthenticated(Reason.CREDENTIALS_EXPIRED, message)


class TokenVerifier:
    """Verifies bearer tokens for the accepted issuers and one audience."""

    def __init__(
        self,
        jwks: Path | str,
        issuers: frozenset[str],
        audience: str,
        leeway_seconds: float = DEFAULT_LEEWAY_SECONDS,
    ) -> None:
        if not issuers:
            raise ValueError("token verification needs at least one accepted issuer")
        if not audience:
            raise ValueError("token verification needs an audience")
        self.source = key_source(jwks)
        self.jwks_path = jwks if isinstance(jwks, Path) else None
        self.issuers = issuers
        self.audience = audience
        self.leeway = leeway_seconds
        # sha256(token) -> (claims, the wall-clock second past which it is expired)
        self._verified: OrderedDict[bytes, tuple[dict[str, Any], float]] = OrderedDict()

    def forget_verified(self) -> None:
        """Forget every remembered token (the next call of each is checked in full)."""
        self._verified.clear()

    def _current_keys(self) -> Keys:
        """The key set; a changed one forgets every remembered token."""
        keys, changed = self.source.current()
        if changed:
            self.forget_verified()
        return keys

    def _key_for(self, header: Mapping[str, Any]) -> jwt.PyJWK:
        algorithm = header.get("alg")
        # An unhashable "alg" (a list) must be refused here, not crash the set lookup.
        if not isinstance(algorithm, str) or algorithm not in ACCEPTED_ALGORITHMS:
            raise invalid(f"token algorithm {algorithm!r} is not accepted")
        keys = self._current_keys()
        kid = header.get("kid")
        if isinstance(kid, str) and kid not in keys and self.source.refetch():
            keys = self._current_keys()  # a key the provider rotated in since the last fetch
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
            claims = self._decode(token, key)
        except jwt.InvalidSignatureError as error:
            # A provider that names no kid (one key at a time) and rotated it: the URL is
            # fetched again (bounded like an unknown kid) and the token tried once more.
            if "kid" in header or not self.source.refetch():
                raise invalid(f"token rejected: {error}") from None
            try:
                claims = self._decode(token, self._key_for(header))
            except jwt.InvalidTokenError as again:
                raise invalid(f"token rejected: {again}") from None
        except jwt.InvalidTokenError as error:
            raise invalid(f"token rejected: {error}") from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise invalid("token has no subject")
        self._check_times(claims)
        return claims

    def _decode(self, token: str, key: jwt.PyJWK) -> dict[str, Any]:
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
