"""The auth policy file: which identities hold which roles, for which tenants.

TOML or JSON: a ``[tokens]`` table (the JWKS file or URL, accepted issuers, the audience,
the leeway, the issuer a ``HUMAN`` reviewer is bound under; omitted to accept client
certificates only) and ``[[principals]]`` entries, each matching an identity (issuer and
subject), every token carrying a claim value, or a verified client certificate (issuer
``x509``, its CN), and granting roles and tenants (``"*"`` for all). An entry for one
subject may also give the ``reviewer_id`` that identity reviews as, for a provider whose
subjects (``auth0|5f…``) are not valid reviewer ids. The format, with an example, is in
docs/security.md ("The auth policy file").

A caller's roles and tenants are the union over every entry it matches; an authenticated
caller that matches none holds no role, so every RPC refuses it with PERMISSION_DENIED.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.runtime.auth.jwks import check_jwks_url
from assay.runtime.auth.principal import Principal, Role
from assay.runtime.auth.tokens import DEFAULT_LEEWAY_SECONDS

X509_ISSUER = "x509"
_GRANT_KEYS = frozenset({"issuer", "subject", "claim", "value", "roles", "tenants", "reviewer_id"})


@dataclass(frozen=True)
class Grant:
    """One ``[[principals]]`` entry: who it matches and what it grants."""

    roles: frozenset[Role]
    tenants: frozenset[str]
    issuer: str = ""
    subject: str = ""
    claim: str = ""
    value: str = ""
    # The reviewer id this subject reviews and adjudicates as ("": its subject).
    reviewer_id: str = ""

    def matches(self, issuer: str, subject: str, claims: Mapping[str, Any]) -> bool:
        # A grant that names no issuer is for tokens only: a client certificate's CN matches
        # only grants that say issuer "x509", so a certificate named "operator" is not the
        # token subject "operator".
        if self.issuer != issuer and (self.issuer or issuer == X509_ISSUER):
            return False
        if self.subject:
            return self.subject == subject
        found = claims.get(self.claim)
        if isinstance(found, list):
            return self.value in found
        return found == self.value


@dataclass(frozen=True)
class TokenSettings:
    jwks: Path | None
    jwks_url: str
    issuers: frozenset[str]
    audience: str
    leeway_seconds: float
    reviewer_issuer: str


@dataclass(frozen=True)
class AuthPolicy:
    grants: tuple[Grant, ...]
    tokens: TokenSettings | None
    # The ``[approvals]`` table as written: the adjudication service reads it (quorums,
    # lifetimes, the notification webhook); the runtime only checks that it is a table.
    approvals: Mapping[str, Any] = field(default_factory=dict)
    # The ``[review]`` table as written (reviews per round, assigned-only tenants): the
    # adjudication service reads it; the runtime only checks that it is a table.
    review: Mapping[str, Any] = field(default_factory=dict)

    def principal(self, issuer: str, subject: str, claims: Mapping[str, Any]) -> Principal:
        roles: set[Role] = set()
        tenants: set[str] = set()
        reviewer_id = ""
        for grant in self.grants:
            if grant.matches(issuer, subject, claims):
                roles |= grant.roles
                tenants |= grant.tenants
                reviewer_id = reviewer_id or grant.reviewer_id
        return Principal(issuer, subject, frozenset(roles), frozenset(tenants), reviewer_id)

    @property
    def reviewer_subjects(self) -> Mapping[str, str]:
        """Reviewer id -> the subject it is bound to, where the policy names one."""
        return {g.reviewer_id: g.subject for g in self.grants if g.reviewer_id}

    @property
    def reviewer_issuer(self) -> str:
        """The issuer a HUMAN reviewer's id is bound under (``x509`` when the policy accepts
        client certificates only: the reviewer is then a certificate's CN)."""
        return self.tokens.reviewer_issuer if self.tokens else X509_ISSUER


def _strings(where: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: expected a list of non-empty strings")
    return list(value)


def _text(where: str, table: Mapping[str, Any], key: str, required: bool = False) -> str:
    value = table.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise ValueError(f"{where}.{key}: expected a non-empty string")
    return value


def _grant(index: int, entry: object) -> Grant:
    where = f"principals[{index}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a table")
    unknown = set(entry) - _GRANT_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    names = _strings(f"{where}.roles", entry.get("roles"))
    try:
        roles = frozenset(Role.parse(name) for name in names)
    except ValueError as error:
        raise ValueError(f"{where}.roles: {error}") from None
    tenants = frozenset(_strings(f"{where}.tenants", entry.get("tenants", [])))
    grant = Grant(
        roles=roles,
        tenants=tenants,
        issuer=_text(where, entry, "issuer"),
        subject=_text(where, entry, "subject"),
        claim=_text(where, entry, "claim"),
        value=_text(where, entry, "value"),
        reviewer_id=_text(where, entry, "reviewer_id"),
    )
    if bool(grant.subject) == bool(grant.claim):
        raise ValueError(f"{where}: give either subject or claim (with value)")
    if grant.claim and not grant.value:
        raise ValueError(f"{where}: claim needs a value")
    if grant.reviewer_id and not grant.subject:
        raise ValueError(f"{where}: reviewer_id binds one subject (give subject, not claim)")
    return grant


def _check_reviewer_ids(grants: tuple[Grant, ...], reviewer_issuer: str) -> None:
    """Each reviewer id bound to one subject, each subject to one reviewer id, under the
    issuer reviewers are bound under (registration binds the id to that identity)."""
    by_id: dict[str, str] = {}
    by_subject: dict[str, str] = {}
    for index, grant in enumerate(grants):
        if not grant.reviewer_id:
            continue
        where = f"principals[{index}].reviewer_id"
        if grant.issuer and grant.issuer != reviewer_issuer:
            raise ValueError(
                f"{where}: reviewers are bound under issuer {reviewer_issuer!r} "
                f"(tokens.reviewer_issuer), not {grant.issuer!r}"
            )
        if by_id.setdefault(grant.reviewer_id, grant.subject) != grant.subject:
            raise ValueError(f"{where}: {grant.reviewer_id!r} is bound to another subject")
        if by_subject.setdefault(grant.subject, grant.reviewer_id) != grant.reviewer_id:
            raise ValueError(f"{where}: {grant.subject!r} is bound to another reviewer id")


def _tokens(table: object, base: Path) -> TokenSettings:
    if not isinstance(table, dict):
        raise ValueError("tokens: expected a table")
    issuers = frozenset(_strings("tokens.issuers", table.get("issuers")))
    if not issuers:
        raise ValueError("tokens.issuers: expected at least one issuer")
    if X509_ISSUER in issuers:
        raise ValueError(f"tokens.issuers: {X509_ISSUER!r} is reserved for client certificates")
    jwks = _text("tokens", table, "jwks")
    jwks_url = _text("tokens", table, "jwks_url")
    if jwks and jwks_url:
        raise ValueError("tokens: give jwks (a file) or jwks_url, not both")
    if jwks_url:
        try:
            check_jwks_url(jwks_url)
        except ValueError as error:
            raise ValueError(f"tokens.jwks_url: {error}") from None
    leeway = table.get("leeway_seconds", DEFAULT_LEEWAY_SECONDS)
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= 300:
        raise ValueError("tokens.leeway_seconds: expected a number of seconds in [0, 300]")
    reviewer_issuer = _text("tokens", table, "reviewer_issuer")
    if not reviewer_issuer:
        if len(issuers) != 1:
            raise ValueError("tokens.reviewer_issuer is required with several issuers")
        reviewer_issuer = next(iter(issuers))
    elif reviewer_issuer not in issuers:
        raise ValueError("tokens.reviewer_issuer must be one of tokens.issuers")
    return TokenSettings(
        jwks=(base / jwks) if jwks else None,
        jwks_url=jwks_url,
        issuers=issuers,
        audience=_text("tokens", table, "audience", required=True),
        leeway_seconds=float(leeway),
        reviewer_issuer=reviewer_issuer,
    )


def parse_policy(data: Mapping[str, Any], base: Path) -> AuthPolicy:
    unknown = set(data) - {"tokens", "principals", "approvals", "review"}
    if unknown:
        raise ValueError(f"unknown top-level keys {sorted(unknown)}")
    entries = data.get("principals", [])
    if not isinstance(entries, list):
        raise ValueError("principals: expected an array of tables")
    tokens = _tokens(data["tokens"], base) if "tokens" in data else None
    approvals = data.get("approvals", {})
    if not isinstance(approvals, dict):
        raise ValueError("approvals: expected a table")
    review = data.get("review", {})
    if not isinstance(review, dict):
        raise ValueError("review: expected a table")
    grants = tuple(_grant(i, e) for i, e in enumerate(entries))
    _check_reviewer_ids(grants, tokens.reviewer_issuer if tokens else X509_ISSUER)
    return AuthPolicy(grants, tokens, approvals, review)


def load_policy(path: Path) -> AuthPolicy:
    """Read a policy file (``.json`` is JSON, anything else TOML); ValueError names the problem."""
    try:
        raw = path.read_bytes()
        data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read auth policy {path}: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"auth policy {path}: expected a table at the top")
    try:
        return parse_policy(data, path.parent)
    except ValueError as error:
        raise ValueError(f"auth policy {path}: {error}") from None
