"""A real OpenID Connect provider for the tests, and a secure stack that trusts it.

``oidc_provider`` starts oidc-provider-mock as its own process on a free loopback port and
waits for its discovery document (never a fixed sleep). It accepts any client id and
secret and signs in whoever is typed into its login form, issuing ID tokens signed with its
JWKS. ``Provider.sign_in`` drives that form with httpx through the real authorization code
flow (PKCE, state, nonce) for a test that needs a person's tokens without a browser.

``oidc_stack`` serves the three services over TLS with an auth policy whose ``[tokens]``
trusts the provider by ``jwks_url`` for the console's client id; alice's provider subject is
``ALICE`` (not a valid reviewer id), bound to reviewer id ``alice``. The planner calls the
resolver with an ID token of its own from the provider. ``seed`` registers alice (bound to
that subject) and enqueues acme cases for her to review.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from assay.console.oidc import REVIEWER_ID_CLAIM
from assay.executor.stack import local_stack
from assay.runtime.auth.dev_credentials import write_dev_credentials
from assay.runtime.auth.gate import Gate
from assay.runtime.security import Security
from assay.runtime.tls import ClientTls, ServerTls
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import gold_pb2
from tests.service.adjudication_support import case_message, rid
from tests.support.eventually import eventually
from tests.support.processes import free_port
from tests.support.secure import SecureStack

CLIENT_ID = "assay-console"
CLIENT_SECRET = "any-secret-will-do"
# alice's subject at the provider: the shape Auth0 gives, which no reviewer id may take.
ALICE = "auth0|5f0c3e9a41b2d7"
SUBJECTS = {"alice": ALICE, "bob": "bob", "operator": "operator", "planner": "planner"}
STARTUP_SECONDS = 20.0
SEED_TIMEOUT = 20.0


@dataclass(frozen=True)
class Provider:
    """A running oidc-provider-mock: its issuer (also its base URL) and process."""

    issuer: str
    process: subprocess.Popen[bytes]

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def sign_in(
        self, subject: str, client_id: str = CLIENT_ID, redirect_uri: str = "http://127.0.0.1/cb"
    ) -> dict[str, Any]:
        """The token endpoint's answer for ``subject``, signed in through the login form."""
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": "openid profile email",
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
        }
        with httpx.Client(timeout=10.0) as http:
            form = http.get(f"{self.issuer}/oauth2/authorize", params=query)
            form.raise_for_status()
            sent = http.post(str(form.url), data={"sub": subject})
            assert sent.status_code == 302, sent.text
            back = parse_qs(urlsplit(sent.headers["location"]).query)
            assert back["state"] == [state]
            reply = http.post(
                f"{self.issuer}/oauth2/token",
                data={
                    "grant_type": "authorization_code",
                    "code": back["code"][0],
                    "redirect_uri": redirect_uri,
                    "code_verifier": verifier,
                },
                # The provider takes any secret, but some secret (it has no public clients).
                auth=(client_id, CLIENT_SECRET),
            )
            reply.raise_for_status()
            tokens: dict[str, Any] = reply.json()
            return tokens

    def id_token(self, subject: str, client_id: str = CLIENT_ID) -> str:
        return str(self.sign_in(subject, client_id)["id_token"])


@contextlib.contextmanager
def oidc_provider(*options: str) -> Iterator[Provider]:
    """oidc-provider-mock on a free loopback port (``options``: more of its flags), stopped
    after. alice's ID tokens carry the reviewer id the console acts as."""
    port = free_port()
    alice = json.dumps({"sub": ALICE, "name": "Alice", REVIEWER_ID_CLAIM: "alice"})
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oidc_provider_mock",
            "--port",
            str(port),
            "--user-claims",
            alice,
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    issuer = f"http://127.0.0.1:{port}"
    try:

        def discovered() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"oidc-provider-mock exited with {process.returncode}")
            reply = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2.0)
            return reply.status_code == 200 and reply.json()["issuer"] == issuer

        eventually(
            discovered,
            message="oidc-provider-mock serves its discovery document",
            timeout=STARTUP_SECONDS,
            interval=0.05,
            ignoring=(httpx.HTTPError,),
        )
        yield Provider(issuer, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def oidc_policy(provider: Provider, client_id: str = CLIENT_ID) -> str:
    """The auth policy trusting ``provider`` for tokens issued to ``client_id``."""
    return f"""
[tokens]
jwks_url = "{provider.jwks_url}"
issuers = ["{provider.issuer}"]
audience = "{client_id}"

[[principals]]
subject = "operator"
roles = ["operator", "auditor", "reader"]
tenants = ["*"]

[[principals]]
subject = "{ALICE}"
reviewer_id = "alice"
roles = ["reviewer", "reader"]
tenants = ["acme"]

[[principals]]
subject = "bob"
roles = ["reviewer", "reader"]
tenants = ["acme"]

[[principals]]
subject = "planner"
roles = ["service"]
"""


@dataclass(frozen=True)
class OidcStack(SecureStack):
    """A secure stack trusting ``provider``; ``auth(name)`` carries that person's ID token
    from the provider (``SUBJECTS`` maps names to subjects)."""

    provider: Provider | None = None
    _tokens: dict[str, str] = field(default_factory=dict)

    def auth(self, name: str) -> tuple[tuple[str, str], ...]:
        assert self.provider is not None
        if name not in self._tokens:
            self._tokens[name] = self.provider.id_token(SUBJECTS.get(name, name))
        return (("authorization", f"Bearer {self._tokens[name]}"),)


@contextlib.asynccontextmanager
async def oidc_stack(
    directory: Path, provider: Provider, client_id: str = CLIENT_ID, more_principals: str = ""
) -> AsyncIterator[OidcStack]:
    """The services over TLS (certificates from ``write_dev_credentials``), trusting only
    ``provider``'s ID tokens for ``client_id``, on ``directory/assay.db``.
    ``more_principals`` (policy TOML) is appended to the policy's own principals."""
    creds = write_dev_credentials(directory / "creds", ())
    policy = directory / "oidc-policy.toml"
    policy.write_text(oidc_policy(provider, client_id) + more_principals, encoding="utf-8")
    planner_token = directory / "planner.jwt"
    planner_token.touch(mode=0o600)
    planner_token.write_text(provider.id_token("planner", client_id) + "\n", encoding="ascii")
    security = Security(
        tls=ServerTls(creds.server_cert, creds.server_key),
        gate=Gate.from_files(policy, None, client_certificates=False),
        peer_tls=ClientTls(ca=creds.ca),
        peer_token=planner_token,
    )
    async with local_stack(directory / "assay.db", security=security) as targets:
        yield OidcStack(targets, creds, provider)


async def seed(stack: OidcStack, cases: int) -> list[str]:
    """alice registered (bound to her provider subject) and ``cases`` acme cases, whose ids
    are returned sorted."""
    async with stack.channel("adjudication") as channel:
        stub = adj_grpc.AdjudicationServiceStub(channel)
        operator = stack.auth("operator")
        await stub.RegisterReviewer(
            adj.RegisterReviewerRequest(
                request_id=rid(),
                reviewer=adj.Reviewer(reviewer_id="alice", kind=gold_pb2.REVIEWER_KIND_HUMAN),
            ),
            metadata=operator,
            timeout=SEED_TIMEOUT,
        )
        made = []
        for _ in range(cases):
            reply = await stub.EnqueueCase(
                adj.EnqueueCaseRequest(request_id=rid(), case=case_message(tenant="acme")),
                metadata=operator,
                timeout=SEED_TIMEOUT,
            )
            made.append(reply.case.case_id)
        return sorted(made)
