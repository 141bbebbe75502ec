"""The console's OpenID Connect client against a real provider (oidc-provider-mock, its own
process), without a browser: what a session near its ID token's end becomes after the
refresh grant, and what a sign-in callback must carry."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.console.oidc import OidcSignIn, SignInRefused, check_issuer
from assay.console.sessions import Session, SessionStore
from assay.console.settings import ConsoleSettings
from tests.support.oidc import ALICE, CLIENT_ID, CLIENT_SECRET, Provider, oidc_provider


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


def client(provider: Provider, directory: Path) -> OidcSignIn:
    secret = directory / "secret"
    secret.write_text(CLIENT_SECRET)
    settings = ConsoleSettings(
        oidc_issuer=provider.issuer, oidc_client_id=CLIENT_ID, oidc_client_secret_file=secret
    )
    return OidcSignIn(settings, SessionStore())


def signed_in(sign_in: OidcSignIn, provider: Provider, ends_in: float) -> Session:
    """A session of alice's from the provider's real code flow, ending in ``ends_in`` s."""
    tokens = provider.sign_in(ALICE)
    return sign_in.sessions.create(
        provider.issuer,
        "alice",
        tokens["id_token"],
        time.time() + ends_in,
        id_token=tokens["id_token"],
        refresh_token=tokens["refresh_token"],
    )


class TestRefresh:
    async def test_a_session_far_from_its_end_is_left_alone(
        self, provider: Provider, tmp_path: Path
    ) -> None:
        sign_in = client(provider, tmp_path)
        session = signed_in(sign_in, provider, ends_in=600)
        refresh = session.refresh_token
        assert await sign_in.fresh(session) is session
        assert session.refresh_token == refresh

    async def test_a_refresh_without_an_id_token_keeps_the_session_to_its_end(
        self, provider: Provider, tmp_path: Path
    ) -> None:
        """This provider renews access tokens only: the session keeps its ID token and
        ends with it, and asks no more."""
        sign_in = client(provider, tmp_path)
        session = signed_in(sign_in, provider, ends_in=30)
        ends, token = session.expires_at, session.token
        assert await sign_in.fresh(session) is session
        assert (session.expires_at, session.token, session.refresh_token) == (ends, token, "")
        assert sign_in.sessions.get(session.session_id) is session

    async def test_a_refused_refresh_ends_the_session(
        self, provider: Provider, tmp_path: Path
    ) -> None:
        """A refresh token the provider no longer honours signs the person out."""
        sign_in = client(provider, tmp_path)
        session = signed_in(sign_in, provider, ends_in=30)
        session.refresh_token = "revoked-" + session.refresh_token
        assert await sign_in.fresh(session) is None
        assert sign_in.sessions.get(session.session_id) is None


class TestCallback:
    async def test_begin_sends_pkce_state_and_nonce(
        self, provider: Provider, tmp_path: Path
    ) -> None:
        """The authorization URL carries an S256 challenge, a state and a nonce, and the
        pending login is kept under that state."""
        sign_in = client(provider, tmp_path)
        url, binding = await sign_in.begin("/review")
        assert url.startswith(f"{provider.issuer}/oauth2/authorize?")
        for part in ("code_challenge_method=S256", "code_challenge=", "state=", "nonce="):
            assert part in url
        assert binding

    @pytest.mark.parametrize("case", ["unknown state", "other browser", "replayed"])
    async def test_a_callback_that_is_not_this_browsers_pending_login_is_refused(
        self, provider: Provider, tmp_path: Path, case: str
    ) -> None:
        """A state the console never made, one begun in another browser (login CSRF), and
        one already used all sign nobody in."""
        sign_in = client(provider, tmp_path)
        _, binding = await sign_in.begin("/")
        state = next(iter(sign_in.pending._by_state))
        query = {"state": state, "code": "whatever"}
        if case == "unknown state":
            query["state"] = "made-up"
        elif case == "other browser":
            binding = "someone-else"
        else:
            sign_in.pending.take(state)
        with pytest.raises(SignInRefused, match="not valid or has expired"):
            await sign_in.finish(query, binding)


class TestIssuer:
    @pytest.mark.parametrize(
        "issuer", ["http://idp.example.com", "ftp://127.0.0.1/", "https://", "idp.example.com"]
    )
    def test_only_https_or_loopback_http(self, issuer: str) -> None:
        """The console talks to its provider over https (http only on loopback, for tests)."""
        with pytest.raises(ValueError, match="expected https://"):
            check_issuer(issuer)
