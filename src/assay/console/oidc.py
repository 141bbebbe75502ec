"""Signing in with OpenID Connect: the authorization code flow with PKCE, through Authlib.

``begin`` checks the discovery document's ``issuer``, keeps a pending login server-side under
a random ``state`` and sends the browser to the provider; ``finish`` takes it back by
``state``, once, exchanges the code and checks the ID token and nonce. The pending login is
tied to this browser by a random binding in the session cookie, so a callback link made for
someone else's login (login CSRF) is refused.

The session acts as the reviewer id in the ID token's ``assay_reviewer_id`` claim when the
provider adds one (the services' policy binds a subject such as ``auth0|5f…`` to it with
``reviewer_id`` and checks the two agree), else as its subject. Its bearer token for the
services is the ID token, a JWT they verify against the same JWKS (their ``[tokens]``
audience is the console's client id); an access token need not be one (many providers,
oidc-provider-mock among them, issue opaque ones). So the session ends with the ID token,
unless a refresh (``fresh``) returns a new one.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
from authlib.common.security import generate_token  # type: ignore[import-untyped]
from authlib.integrations.base_client import OAuthError  # type: ignore[import-untyped]
from authlib.integrations.httpx_client import AsyncOAuth2Client  # type: ignore[import-untyped]

from assay.console.sessions import Session, SessionStore
from assay.console.settings import ConsoleSettings
from assay.errors import AssayError
from assay.runtime.auth.tokens import TokenVerifier
from assay.transport import is_loopback

CALLBACK_PATH = "/signin/callback"
SCOPE = "openid profile email"
# Asked for too where the provider lists it: some give a refresh token only with it.
OFFLINE_SCOPE = "offline_access"
MAX_PENDING = 1_000
PENDING_SECONDS = 600.0
# How long before the ID token expires a request refreshes it.
REFRESH_MARGIN_SECONDS = 60.0
HTTP_TIMEOUT_SECONDS = 10.0
REVIEWER_ID_CLAIM = "assay_reviewer_id"


class SignInRefused(Exception):
    """A sign-in that cannot complete; the message is for the person."""


@dataclass(frozen=True)
class Pending:
    nonce: str
    verifier: str
    next: str
    binding: str
    started: float = field(default_factory=time.monotonic)


class PendingLogins:
    """Pending logins by ``state``: taken once, dropped after ``PENDING_SECONDS``, the oldest
    dropped first past ``MAX_PENDING``."""

    def __init__(self) -> None:
        self._by_state: OrderedDict[str, Pending] = OrderedDict()

    def add(self, state: str, pending: Pending) -> None:
        self._by_state[state] = pending
        while len(self._by_state) > MAX_PENDING:
            self._by_state.popitem(last=False)

    def take(self, state: str) -> Pending | None:
        pending = self._by_state.pop(state, None)
        if pending is None or time.monotonic() - pending.started > PENDING_SECONDS:
            return None
        return pending


def check_issuer(issuer: str) -> str:
    """The issuer URL, if the console may talk to it (https, or http on loopback)."""
    parts = urlsplit(issuer)
    loopback_http = parts.scheme == "http" and is_loopback(parts.hostname or "")
    if not parts.hostname or (parts.scheme != "https" and not loopback_http):
        raise ValueError(f"--oidc-issuer {issuer!r}: expected https:// (or http:// on loopback)")
    return issuer


class OidcSignIn:
    """The console's OpenID Connect client (one per console)."""

    def __init__(self, settings: ConsoleSettings, sessions: SessionStore) -> None:
        self.issuer = check_issuer(settings.oidc_issuer)
        self.client_id = settings.oidc_client_id
        secret_file = settings.oidc_client_secret_file
        self.client_secret = secret_file.read_text(encoding="utf-8").strip() if secret_file else ""
        self.redirect_uri = settings.base_url + CALLBACK_PATH
        self.lifetime = settings.session_lifetime.total_seconds()
        self.sessions = sessions
        self.pending = PendingLogins()
        self._metadata: dict[str, Any] | None = None
        self._verifier: TokenVerifier | None = None
        self._lock = asyncio.Lock()
        self._refreshing = asyncio.Lock()
        self._verifying = threading.Lock()  # the verifier's cache is not for two threads

    def _client(self) -> AsyncOAuth2Client:
        offered = (self._metadata or {}).get("scopes_supported") or ()
        scope = f"{SCOPE} {OFFLINE_SCOPE}" if OFFLINE_SCOPE in offered else SCOPE
        return AsyncOAuth2Client(
            self.client_id,
            self.client_secret or None,
            # A public client (no secret) proves itself with PKCE alone.
            token_endpoint_auth_method="client_secret_basic" if self.client_secret else "none",
            scope=scope,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            timeout=HTTP_TIMEOUT_SECONDS,
            follow_redirects=False,
        )

    async def metadata(self) -> Mapping[str, Any]:
        """The issuer's discovery document (fetched once, its issuer checked)."""
        async with self._lock:
            if self._metadata is None:
                url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
                async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS) as http:
                    reply = await http.get(url)
                    reply.raise_for_status()
                    found = reply.json()
                if not isinstance(found, dict) or found.get("issuer") != self.issuer:
                    raise SignInRefused("The identity provider's discovery document is wrong.")
                jwks_uri = str(found.get("jwks_uri", ""))
                self._verifier = await asyncio.to_thread(
                    TokenVerifier, jwks_uri, frozenset({self.issuer}), self.client_id
                )
                self._metadata = found
            return self._metadata

    async def begin(self, next_path: str) -> tuple[str, str]:
        """Where to send the browser, and the binding its cookie carries meanwhile.

        The pending login (nonce, PKCE S256 verifier, page to return to) is kept server-side
        under a random ``state``: bounded, ten minutes at most (``PendingLogins``)."""
        try:
            found = await self.metadata()
        except (httpx.HTTPError, ValueError) as error:
            raise SignInRefused("The identity provider cannot be reached.") from error
        state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
        binding = generate_token(32)
        self.pending.add(state, Pending(nonce, verifier, next_path, binding))
        async with self._client() as client:
            url, _ = client.create_authorization_url(
                found["authorization_endpoint"], state=state, code_verifier=verifier, nonce=nonce
            )
        return str(url), binding

    async def _claims(self, id_token: object) -> dict[str, Any]:
        assert self._verifier is not None
        if not isinstance(id_token, str) or not id_token:
            raise SignInRefused("The identity provider sent no ID token.")
        try:
            claims = await asyncio.to_thread(self._verify, id_token)
        except AssayError as error:
            raise SignInRefused("The identity provider's ID token is not valid.") from error
        audience = claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != self.client_id:
            raise SignInRefused("The identity provider's ID token is not for this console.")
        return claims

    def _verify(self, id_token: str) -> dict[str, Any]:
        assert self._verifier is not None
        with self._verifying:
            return self._verifier.verify(id_token)

    async def finish(self, query: Mapping[str, str], binding: str) -> tuple[Session, str]:
        """The new session and the page to return to; ``SignInRefused`` otherwise.

        The pending login is taken once (a replayed or tampered state finds nothing), the code
        exchanged with its verifier, and the ID token checked against the provider's JWKS
        (``runtime.auth.tokens``: signature, issuer, audience = the client id, expiry) and
        the nonce."""
        pending = self.pending.take(query.get("state", ""))
        if pending is None or pending.binding != binding:
            raise SignInRefused("This sign-in is not valid or has expired. Sign in again.")
        if query.get("error"):
            raise SignInRefused("The identity provider did not sign you in.")
        try:
            found = await self.metadata()
            async with self._client() as client:
                token = await client.fetch_token(
                    found["token_endpoint"],
                    grant_type="authorization_code",
                    code=query.get("code", ""),
                    code_verifier=pending.verifier,
                )
        except (OAuthError, httpx.HTTPError) as error:
            raise SignInRefused("The identity provider refused the sign-in.") from error
        claims = await self._claims(token.get("id_token"))
        if claims.get("nonce") != pending.nonce:
            raise SignInRefused("The identity provider's ID token is not for this sign-in.")
        id_token = str(token["id_token"])
        ends = min(float(claims["exp"]), time.time() + self.lifetime)
        name = claims.get("name") or claims.get("email") or claims["sub"]
        session = self.sessions.create(
            self.issuer,
            str(claims.get(REVIEWER_ID_CLAIM) or claims["sub"]),
            id_token,
            ends,
            id_token=id_token,
            refresh_token=str(token.get("refresh_token") or ""),
            name=str(name),
        )
        return session, pending.next

    async def fresh(self, session: Session) -> Session | None:
        """``session``, its ID token refreshed when near expiry; None when it has ended.
        One refresh at a time: a provider rotating refresh tokens would refuse the second
        of two concurrent ones, so the second finds the session already fresh.

        A refresh needs the provider's refresh token and takes the new ID token it returns;
        a refresh the provider refuses ends the session, and one answered without an ID
        token (the provider does not renew them) leaves it to end when its token does."""
        if not self._near(session):
            return session
        async with self._refreshing:
            if not self._near(session):
                return session
            return await self._refresh(session)

    def _near(self, session: Session) -> bool:
        """Whether the session holds an ID token of ours, due for a refresh that can extend
        it (not past the session's own end)."""
        deadline = session.signed_in_at + self.lifetime
        near = session.expires_at - time.time() < REFRESH_MARGIN_SECONDS
        ours = session.issuer == self.issuer and bool(session.refresh_token)
        return ours and near and deadline - session.expires_at > 1.0

    async def _refresh(self, session: Session) -> Session | None:
        deadline = session.signed_in_at + self.lifetime
        try:
            found = await self.metadata()
            async with self._client() as client:
                token = await client.refresh_token(
                    found["token_endpoint"], refresh_token=session.refresh_token
                )
        except (OAuthError, httpx.HTTPError, SignInRefused):
            self.sessions.end(session.session_id)  # revoked or refused: signed out
            return None
        session.refresh_token = str(token.get("refresh_token") or session.refresh_token)
        if not token.get("id_token"):
            session.refresh_token = ""  # no ID token by refresh: it ends with the one it has
            return session
        try:
            claims = await self._claims(token["id_token"])
        except SignInRefused:
            self.sessions.end(session.session_id)
            return None
        if claims["sub"] != _subject(session.id_token):
            self.sessions.end(session.session_id)
            return None
        session.token = session.id_token = str(token["id_token"])
        session.expires_at = min(float(claims["exp"]), deadline)
        return session


def _subject(id_token: str) -> object:
    """The subject of an ID token this console verified when it signed the person in."""
    return jwt.decode(id_token, options={"verify_signature": False}).get("sub")
