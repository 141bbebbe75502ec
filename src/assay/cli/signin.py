"""The terminal's sign-in: identities from an OpenID Connect provider, and named contexts.

``assay login`` runs the authorization code flow with PKCE (S256), state and nonce through a
loopback redirect (RFC 8252): a one-request HTTP listener on ``127.0.0.1`` receives the code,
so nothing is pasted. The provider's device authorization grant would suit machines without a
browser, but the providers Assay is tested against do not all offer it. The ID token is
checked against the provider's JWKS (signature, issuer, audience = the client id, expiry) and
the nonce; it is the bearer token the commands send (a JWT the services verify), kept with the
refresh token owner-only (0600, ``private_files``) under ``$XDG_CONFIG_HOME/assay`` (default
``~/.config/assay``): ``identities/NAME.json`` and ``identities/NAME.jwt``, the latter the
token file the channel reads. Near the ID token's end a command refreshes it when the provider
gave a refresh token and renews ID tokens by refresh; otherwise it says to sign in again.

A context names the services' targets, the CA and the identity (``contexts.json``), so that
with ``assay context use NAME`` no command needs ``--target``, ``--ca`` or ``--token-file``;
flags and ``ASSAY_…`` variables still win.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import secrets
import threading
import time
import webbrowser
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from assay.cli.private_files import write_private

# httpx, Authlib and the token verifier are imported where a sign-in uses them: every
# command reads the current context, and few sign in.

SCOPE = "openid profile email"
OFFLINE_SCOPE = "offline_access"
REVIEWER_ID_CLAIM = "assay_reviewer_id"  # as the console reads it
REFRESH_MARGIN_SECONDS = 60.0
HTTP_TIMEOUT_SECONDS = 10.0
SERVICES = ("resolver", "planner", "adjudication")


class SignInError(Exception):
    """Why signing in (or staying signed in) failed, for the person at the terminal."""


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/assay`` (``~/.config/assay`` when unset)."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    return Path(base) / "assay"


def _writable(folder: Path) -> Path:
    """``folder``, created owner-only when missing (only a sign-in or context writes)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


@dataclass
class Identity:
    """A signed-in identity as stored: the provider, the client, the tokens."""

    name: str
    issuer: str
    client_id: str
    token_endpoint: str
    jwks_uri: str
    id_token: str
    refresh_token: str
    subject: str
    reviewer_id: str
    expires_at: float
    client_secret_file: str = ""

    @property
    def token_file(self) -> Path:
        return config_dir() / "identities" / f"{self.name}.jwt"

    def save(self) -> None:
        folder = _writable(config_dir() / "identities")
        write_private(folder / f"{self.name}.json", json.dumps(asdict(self), indent=2) + "\n")
        write_private(self.token_file, self.id_token + "\n")

    @classmethod
    def load(cls, name: str) -> Identity:
        path = config_dir() / "identities" / f"{name}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError) as error:
            raise SignInError(f"no identity {name!r} here: run `assay login` ({error})") from None


# --- contexts ---------------------------------------------------------------


def _contexts_path() -> Path:
    return config_dir() / "contexts.json"


def load_contexts() -> dict[str, Any]:
    """``{"current": NAME, "contexts": {NAME: {...}}}`` (empty when none was written)."""
    try:
        data = json.loads(_contexts_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"current": "", "contexts": {}}
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), dict):
        return {"current": "", "contexts": {}}
    return data


def save_contexts(data: Mapping[str, Any]) -> None:
    _writable(config_dir())
    write_private(_contexts_path(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def current_context() -> dict[str, str]:
    """The context in use (``ASSAY_CONTEXT`` names another), or an empty one."""
    data = load_contexts()
    name = os.environ.get("ASSAY_CONTEXT", "").strip() or str(data.get("current", ""))
    found = data["contexts"].get(name) if name else None
    return dict(found) if isinstance(found, dict) else {}


def default_identity() -> str:
    """The identity a command means when it names none: the current context's, else the
    last one signed in, else ``default``."""
    return current_context().get("identity") or load_contexts().get("signed_in") or "default"


def remember_sign_in(name: str) -> None:
    data = load_contexts()
    data["signed_in"] = name
    save_contexts(data)


def context_target(service: str) -> str:
    """The current context's target for ``service`` ("" when none is set)."""
    return current_context().get(service, "")


# --- the loopback redirect flow ---------------------------------------------


def discover(issuer: str) -> dict[str, Any]:
    """The issuer's discovery document, its ``issuer`` checked."""
    import httpx

    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        reply = httpx.get(url, timeout=HTTP_TIMEOUT_SECONDS)
        reply.raise_for_status()
        found = reply.json()
    except (httpx.HTTPError, ValueError) as error:
        raise SignInError(f"cannot read {url}: {error}") from None
    if not isinstance(found, dict) or found.get("issuer") != issuer:
        raise SignInError(f"{url} names another issuer than {issuer!r}")
    return found


def _client(client_id: str, secret: str, metadata: Mapping[str, Any], redirect: str = "") -> Any:
    from authlib.integrations.httpx_client import OAuth2Client  # type: ignore[import-untyped]

    offered = metadata.get("scopes_supported") or ()
    return OAuth2Client(
        client_id,
        secret or None,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        scope=f"{SCOPE} {OFFLINE_SCOPE}" if OFFLINE_SCOPE in offered else SCOPE,
        redirect_uri=redirect or None,
        code_challenge_method="S256",
        timeout=HTTP_TIMEOUT_SECONDS,
    )


class _Callback(http.server.BaseHTTPRequestHandler):
    """Takes the one redirect back from the provider and says the terminal may go on."""

    received: dict[str, str] | None = None

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != "/callback":
            self.send_error(404)
            return
        type(self).received = {k: v[0] for k, v in parse_qs(parts.query).items()}
        body = b"Signed in: you may close this page and go back to the terminal.\n"
        self.send_response(200)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass  # the request line holds the code


def _wait_for_callback(
    server: http.server.HTTPServer, handler: type[_Callback], timeout: float
) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    server.timeout = 0.5
    while handler.received is None:
        if time.monotonic() > deadline:
            raise SignInError(f"no answer from the browser within {timeout:g} s")
        server.handle_request()
    return handler.received


def login(
    name: str,
    issuer: str,
    client_id: str,
    secret_file: Path | None,
    show: Callable[[str], None],
    open_browser: bool = True,
    timeout: float = 300.0,
) -> Identity:
    """Sign in through the browser; the stored identity."""
    import httpx
    from authlib.integrations.base_client import OAuthError  # type: ignore[import-untyped]

    metadata = discover(issuer)
    secret = secret_file.read_text(encoding="utf-8").strip() if secret_file else ""
    handler = type("Callback", (_Callback,), {"received": None})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    try:
        redirect = f"http://127.0.0.1:{server.server_address[1]}/callback"
        verifier, nonce = secrets.token_urlsafe(64), secrets.token_urlsafe(32)
        with _client(client_id, secret, metadata, redirect) as client:
            url, state = client.create_authorization_url(
                metadata["authorization_endpoint"], code_verifier=verifier, nonce=nonce
            )
            show(url)
            if open_browser:
                threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
            answer = _wait_for_callback(server, handler, timeout)
            if answer.get("state") != state:
                raise SignInError("the answer to this sign-in carries another state: refused")
            if answer.get("error"):
                raise SignInError(f"the provider did not sign you in: {answer['error']}")
            try:
                token = client.fetch_token(
                    metadata["token_endpoint"], code=answer.get("code", ""), code_verifier=verifier
                )
            except (OAuthError, httpx.HTTPError) as error:
                raise SignInError(f"the provider refused the code: {error}") from None
    finally:
        server.server_close()
    claims = verify_id_token(token.get("id_token"), issuer, client_id, str(metadata["jwks_uri"]))
    if claims.get("nonce") != nonce:
        raise SignInError("the ID token is not for this sign-in (nonce)")
    identity = Identity(
        name=name,
        issuer=issuer,
        client_id=client_id,
        token_endpoint=str(metadata["token_endpoint"]),
        jwks_uri=str(metadata["jwks_uri"]),
        id_token=str(token["id_token"]),
        refresh_token=str(token.get("refresh_token") or ""),
        subject=str(claims["sub"]),
        reviewer_id=str(claims.get(REVIEWER_ID_CLAIM) or claims["sub"]),
        expires_at=float(claims["exp"]),
        client_secret_file=str(secret_file.resolve()) if secret_file else "",
    )
    identity.save()
    remember_sign_in(name)
    return identity


def verify_id_token(token: object, issuer: str, client_id: str, jwks_uri: str) -> dict[str, Any]:
    from assay.errors import AssayError
    from assay.runtime.auth.tokens import TokenVerifier

    if not isinstance(token, str) or not token:
        raise SignInError("the provider sent no ID token")
    try:
        return TokenVerifier(jwks_uri, frozenset({issuer}), client_id).verify(token)
    except (AssayError, ValueError) as error:
        raise SignInError(f"the provider's ID token is not valid: {error}") from None


def fresh(identity: Identity) -> Identity:
    """``identity`` with an ID token that is not about to end: refreshed when the provider
    allows; SignInError when it has ended and cannot be renewed."""
    if identity.expires_at - time.time() > REFRESH_MARGIN_SECONDS:
        return identity
    if identity.refresh_token:
        import httpx
        from authlib.integrations.base_client import OAuthError

        secret_file = Path(identity.client_secret_file) if identity.client_secret_file else None
        secret = secret_file.read_text(encoding="utf-8").strip() if secret_file else ""
        metadata = discover(identity.issuer)
        try:
            with _client(identity.client_id, secret, metadata) as client:
                token = client.refresh_token(
                    identity.token_endpoint, refresh_token=identity.refresh_token
                )
        except (OAuthError, httpx.HTTPError):
            token = {}
        identity.refresh_token = str(token.get("refresh_token") or "")
        if token.get("id_token"):
            claims = verify_id_token(
                token["id_token"], identity.issuer, identity.client_id, identity.jwks_uri
            )
            if claims["sub"] == identity.subject:
                identity.id_token = str(token["id_token"])
                identity.expires_at = float(claims["exp"])
        identity.save()
    if identity.expires_at <= time.time():
        raise SignInError(
            f"the sign-in {identity.name!r} ({identity.subject}) has ended: run `assay login`"
        )
    return identity


def logout(identity: Identity) -> str:
    """Sign ``identity`` out: its refresh token revoked at the provider when it offers RFC
    7009 revocation, then its files deleted. Returns the provider's end-session address (the
    browser's sign-in there is the provider's to end), or ""."""
    metadata: Mapping[str, Any] = {}
    with contextlib.suppress(SignInError):
        metadata = discover(identity.issuer)
    revocation = str(metadata.get("revocation_endpoint") or "")
    if identity.refresh_token and revocation:
        import httpx
        from authlib.integrations.base_client import OAuthError

        secret_file = Path(identity.client_secret_file) if identity.client_secret_file else None
        secret = secret_file.read_text(encoding="utf-8").strip() if secret_file else ""
        try:
            with _client(identity.client_id, secret, metadata) as client:
                answer = client.revoke_token(
                    revocation, token=identity.refresh_token, token_type_hint="refresh_token"
                )
            refused = f"HTTP {answer.status_code}" if answer.status_code >= 400 else ""
        except (OAuthError, httpx.HTTPError) as error:
            refused = str(error)
        if refused:
            raise SignInError(
                f"the provider refused to revoke {identity.name!r}'s refresh token ({refused}); "
                "its files are kept: try again, or delete them"
            )
    folder = config_dir() / "identities"
    for path in (folder / f"{identity.name}.json", identity.token_file):
        path.unlink(missing_ok=True)
    return str(metadata.get("end_session_endpoint") or "")


def context_credentials(with_token: bool = True) -> tuple[Path | None, Path | None]:
    """The current context's token file (its identity's, refreshed first; None unless
    ``with_token``) and CA."""
    context = current_context()
    name, ca = context.get("identity", ""), context.get("ca", "")
    token_file = fresh(Identity.load(name)).token_file if name and with_token else None
    return token_file, Path(ca) if ca else None


def signed_in_reviewer() -> str:
    """The reviewer id of the current context's identity ("" when there is none)."""
    name = current_context().get("identity", "")
    if not name:
        return ""
    return Identity.load(name).reviewer_id
