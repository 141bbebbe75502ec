"""The one check every call passes before its servicer runs: who is calling, and may they.

``Gate.admit`` reads the call's credential (an ``authorization: Bearer`` JWT,
else a verified mTLS client certificate), maps it through the auth policy to a
``Principal`` and checks it holds one of the roles the RPC's access rule names.
A gate with nothing to check (``DEV_GATE``: no JWKS, no client CA) admits every
call as ``DEV_PRINCIPAL``, which is what ``assay up`` on loopback runs with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from assay.errors import PermissionDenied, Reason, Unauthenticated
from assay.runtime.auth.access import AccessRule
from assay.runtime.auth.policy import X509_ISSUER, AuthPolicy, load_policy
from assay.runtime.auth.principal import DEV_PRINCIPAL, Principal
from assay.runtime.auth.tokens import TokenVerifier, invalid
from assay.transport import AUTHORIZATION_KEY, MAX_BEARER_TOKEN_CHARS

_BEARER = "bearer "


class Gate:
    """Authenticates and authorizes calls; ``enabled`` is False in dev mode."""

    def __init__(
        self,
        policy: AuthPolicy | None = None,
        verifier: TokenVerifier | None = None,
        client_certificates: bool = False,
    ) -> None:
        if (verifier is not None or client_certificates) and policy is None:
            raise ValueError("authenticating callers needs an auth policy (--auth-policy)")
        self.policy = policy
        self.verifier = verifier
        self.client_certificates = client_certificates

    @property
    def enabled(self) -> bool:
        return self.policy is not None

    @property
    def reviewer_issuer(self) -> str:
        return self.policy.reviewer_issuer if self.policy is not None else ""

    @property
    def reviewer_subjects(self) -> Mapping[str, str]:
        """Reviewer id -> the subject the policy binds it to (``reviewer_id`` entries)."""
        return self.policy.reviewer_subjects if self.policy is not None else {}

    @classmethod
    def from_files(
        cls, policy_path: Path | None, jwks_path: Path | None, client_certificates: bool
    ) -> Gate:
        """The gate for a server's flags; ValueError names what is missing or wrong."""
        if policy_path is None:
            if jwks_path is not None or client_certificates:
                raise ValueError("--jwks and --tls-client-ca need --auth-policy")
            return DEV_GATE
        policy = load_policy(policy_path)
        verifier = None
        if policy.tokens is not None:
            jwks: Path | str | None = jwks_path or policy.tokens.jwks or policy.tokens.jwks_url
            if not jwks:
                raise ValueError(f"{policy_path} accepts tokens but no JWKS is given (--jwks)")
            verifier = TokenVerifier(
                jwks, policy.tokens.issuers, policy.tokens.audience, policy.tokens.leeway_seconds
            )
        elif not client_certificates:
            raise ValueError(
                f"{policy_path} has no [tokens] table and no --tls-client-ca: "
                "no caller could authenticate"
            )
        return cls(policy, verifier, client_certificates)

    def authenticate(
        self, metadata: Sequence[tuple[str, str | bytes]], auth_context: Mapping[str, list[bytes]]
    ) -> Principal:
        if self.policy is None:
            return DEV_PRINCIPAL
        token = _bearer_token(metadata)
        if token is not None:
            if self.verifier is None:
                raise invalid("this server accepts client certificates, not bearer tokens")
            claims = self.verifier.verify(token)
            return self.policy.principal(claims["iss"], claims["sub"], claims)
        if self.client_certificates:
            names = auth_context.get("x509_common_name") or []
            if names:
                subject = names[0].decode("utf-8", "replace")
                return self.policy.principal(X509_ISSUER, subject, {})
        raise Unauthenticated(
            Reason.CREDENTIALS_MISSING,
            "this call needs a credential: 'authorization: Bearer <JWT>'"
            + (" or a client certificate" if self.client_certificates else ""),
        )

    def admit(
        self,
        rule: AccessRule,
        metadata: Sequence[tuple[str, str | bytes]],
        auth_context: Mapping[str, list[bytes]],
    ) -> Principal:
        """The caller, if it may call a method with ``rule``; raises otherwise."""
        principal = self.authenticate(metadata, auth_context)
        if not principal.holds_any(rule.roles):
            raise PermissionDenied(
                Reason.ROLE_REQUIRED,
                f"{principal.describe()} holds none of the roles this call needs: "
                f"{rule.describe()}",
                metadata={"required_roles": rule.describe()},
            )
        return principal


def _bearer_token(metadata: Sequence[tuple[str, str | bytes]]) -> str | None:
    for key, value in metadata:
        if key != AUTHORIZATION_KEY:
            continue
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        if not text[: len(_BEARER)].lower() == _BEARER:
            raise invalid("the authorization header is not 'Bearer <JWT>'")
        token = text[len(_BEARER) :].strip()
        if not token:
            raise invalid("the bearer token is empty")
        if len(token) > MAX_BEARER_TOKEN_CHARS:
            raise invalid(
                f"the bearer token is {len(token)} characters long; "
                f"the limit is {MAX_BEARER_TOKEN_CHARS}"
            )
        return token
    return None


DEV_GATE = Gate()
