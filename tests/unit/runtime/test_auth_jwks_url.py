"""The token verifier with the provider's JWKS by URL: fetched at start, refetched when a
token names a key the set lacks (bounded by the cooldown), kept when a fetch fails. The
JWKS is served by a real HTTP server on loopback; only the monotonic clock is the test's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from assay.errors import Unauthenticated
from assay.runtime.auth import jwks
from assay.runtime.auth.dev_credentials import DEV_AUDIENCE, DEV_ISSUER, public_jwk
from assay.runtime.auth.tokens import TokenVerifier
from tests.support.eventually import eventually
from tests.support.loopback_http import QuietHandler, base_url, loopback_server, serving

OLD = ec.generate_private_key(ec.SECP256R1())
NEW = ec.generate_private_key(ec.SECP256R1())


class Provider:
    """A JWKS endpoint the test rewrites, counting the fetches."""

    def __init__(self) -> None:
        self.document: Any = {"keys": [public_jwk(OLD, "old")]}
        self.status = 200
        self.fetches = 0
        # Set: each answer waits until it is released (a slow provider).
        self.hold: threading.Event | None = None
        provider = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                provider.fetches += 1
                if provider.hold is not None:
                    provider.hold.wait(timeout=30)
                self.send_json(provider.status, json.dumps(provider.document).encode())

        self.server = loopback_server(Handler)
        self.url = f"{base_url(self.server)}/jwks"


@pytest.fixture
def provider() -> Iterator[Provider]:
    found = Provider()
    with serving(found.server):
        yield found


class Clock:
    """The ``time`` module inside ``jwks``: a monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(jwks, "time", fake)
    return fake


def token(key: ec.EllipticCurvePrivateKey, kid: str | None) -> str:
    body = {"iss": DEV_ISSUER, "aud": DEV_AUDIENCE, "sub": "alice", "exp": time.time() + 60}
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(body, key, "ES256", headers=headers)


def without_kid(key: ec.EllipticCurvePrivateKey) -> dict[str, Any]:
    return {k: v for k, v in public_jwk(key, "unused").items() if k != "kid"}


def verifier(url: str) -> TokenVerifier:
    return TokenVerifier(url, frozenset({DEV_ISSUER}), DEV_AUDIENCE)


class TestJwksByUrl:
    def test_fetched_at_start(self, provider: Provider, clock: Clock) -> None:
        """A token signed with a key the URL serves verifies; one fetch."""
        checking = verifier(provider.url)
        assert checking.verify(token(OLD, "old"))["sub"] == "alice"
        assert provider.fetches == 1

    def test_a_token_without_kid_uses_the_only_key(self, provider: Provider, clock: Clock) -> None:
        """Providers that leave ``kid`` out of the header (oidc-provider-mock does) work
        while the set holds one key."""
        assert verifier(provider.url).verify(token(OLD, None))["sub"] == "alice"

    def test_an_unknown_kid_refetches_once_per_cooldown(
        self, provider: Provider, clock: Clock
    ) -> None:
        """A rotated-in key is fetched on first sight; made-up kids inside the cooldown
        cost no fetch, and after it one fetch each cooldown."""
        checking = verifier(provider.url)
        clock.now += jwks.URL_COOLDOWN_SECONDS
        provider.document = {"keys": [public_jwk(OLD, "old"), public_jwk(NEW, "new")]}
        assert checking.verify(token(NEW, "new"))["sub"] == "alice"
        assert provider.fetches == 2
        for attempt in range(5):
            with pytest.raises(Unauthenticated, match="not in the JWKS"):
                checking.verify(token(NEW, f"made-up-{attempt}"))
        assert provider.fetches == 2
        clock.now += jwks.URL_COOLDOWN_SECONDS
        with pytest.raises(Unauthenticated, match="not in the JWKS"):
            checking.verify(token(NEW, "made-up-again"))
        assert provider.fetches == 3

    def test_a_provider_without_key_ids_rotating_its_key(
        self, provider: Provider, clock: Clock
    ) -> None:
        """A set of one key without kid, replaced: a token the old key cannot verify sends
        for the set again (bounded by the cooldown), and verifies with the new key."""
        provider.document = {"keys": [without_kid(OLD)]}
        checking = verifier(provider.url)
        provider.document = {"keys": [without_kid(NEW)]}
        with pytest.raises(Unauthenticated, match="Signature verification failed"):
            checking.verify(token(NEW, None))  # inside the cooldown: no fetch yet
        assert provider.fetches == 1
        clock.now += jwks.URL_COOLDOWN_SECONDS
        assert checking.verify(token(NEW, None))["sub"] == "alice"
        assert provider.fetches == 2

    def test_refetched_after_its_lifespan_and_a_removed_key_is_refused(
        self, provider: Provider, clock: Clock
    ) -> None:
        """Past the lifespan the set is fetched again: a key the provider dropped no longer
        verifies, even a token verified (and remembered) before."""
        checking = verifier(provider.url)
        old = token(OLD, "old")
        checking.verify(old)
        provider.document = {"keys": [public_jwk(NEW, "new")]}
        clock.now += jwks.URL_LIFESPAN_SECONDS
        with pytest.raises(Unauthenticated, match="not in the JWKS"):
            checking.verify(old)
        assert checking.verify(token(NEW, "new"))["sub"] == "alice"

    def test_refreshed_ahead_in_the_background_without_waiting(
        self, provider: Provider, clock: Clock
    ) -> None:
        """Late in its lifespan the set is fetched by a background thread: the call that
        notices goes on with the keys it has while the provider has not answered, and the
        provider's new key is in use once the answer lands, with no fetch of its own."""
        checking = verifier(provider.url)
        provider.document = {"keys": [public_jwk(OLD, "old"), public_jwk(NEW, "new")]}
        provider.hold = threading.Event()
        clock.now += jwks.URL_LIFESPAN_SECONDS * jwks.URL_REFRESH_AHEAD
        answered: list[str] = []
        call = threading.Thread(
            target=lambda: answered.append(checking.verify(token(OLD, "old"))["sub"])
        )
        call.start()
        call.join(timeout=jwks.URL_TIMEOUT_SECONDS / 2)
        assert answered == ["alice"], "the call waited for the provider"
        eventually(lambda: provider.fetches == 2, message="the background fetch under way")
        provider.hold.set()
        eventually(
            lambda: "new" in checking.source.current()[0], message="the refreshed set installed"
        )
        assert checking.verify(token(NEW, "new"))["sub"] == "alice"
        assert provider.fetches == 2

    def test_a_failed_fetch_keeps_the_keys(self, provider: Provider, clock: Clock) -> None:
        """An error page or an unusable set does not drop the keys that were good."""
        checking = verifier(provider.url)
        provider.status = 500
        clock.now += jwks.URL_LIFESPAN_SECONDS
        assert checking.verify(token(OLD, "old"))["sub"] == "alice"
        provider.status, provider.document = 200, {"keys": []}
        clock.now += jwks.URL_LIFESPAN_SECONDS
        assert checking.verify(token(OLD, "old"))["sub"] == "alice"

    def test_start_fails_without_keys(self, provider: Provider) -> None:
        provider.status = 500
        with pytest.raises(ValueError, match="cannot fetch JWKS"):
            verifier(provider.url)

    @pytest.mark.parametrize(
        "url", ["http://idp.example.com/jwks", "file:///etc/passwd", "ftp://127.0.0.1/x"]
    )
    def test_only_https_or_loopback_http(self, url: str) -> None:
        with pytest.raises(ValueError, match="expected https://"):
            verifier(url)
