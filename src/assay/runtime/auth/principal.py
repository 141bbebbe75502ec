"""The authenticated caller of one RPC, and where the runtime keeps it for the servicer."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

# A principal granted this "tenant" may see and change every tenant.
ALL_TENANTS = "*"


class Role(StrEnum):
    """The contract's ``assay.v1.Role`` values, by their lowercase short names."""

    READER = "reader"
    REVIEWER = "reviewer"
    ADJUDICATOR = "adjudicator"
    OPERATOR = "operator"
    AUDITOR = "auditor"
    SERVICE = "service"
    APPROVER = "approver"

    @property
    def proto_name(self) -> str:
        return f"ROLE_{self.name}"

    @classmethod
    def parse(cls, text: str) -> Role:
        """``reader`` or ``ROLE_READER``; ValueError otherwise."""
        name = text.strip().lower().removeprefix("role_")
        try:
            return cls(name)
        except ValueError:
            known = ", ".join(r.value for r in cls)
            raise ValueError(f"unknown role {text!r} (known: {known})") from None


@dataclass(frozen=True)
class Principal:
    """Who is calling: the identity (issuer, subject) and what the auth policy grants it.

    ``authenticated`` is False only for the dev-mode principal of a server that
    checks no credential: it holds every role and tenant, and has no subject, so
    identity checks that need a subject are skipped for it."""

    issuer: str
    subject: str
    roles: frozenset[Role]
    tenants: frozenset[str]
    # The reviewer id the policy binds this identity to ("": the subject is the id).
    reviewer_id: str = ""
    authenticated: bool = True

    def holds_any(self, roles: Iterable[Role]) -> bool:
        return not self.roles.isdisjoint(roles)

    def holds(self, role: Role) -> bool:
        return role in self.roles

    @property
    def all_tenants(self) -> bool:
        return ALL_TENANTS in self.tenants

    def may_access(self, tenant: str) -> bool:
        """Whether the principal may see and change ``tenant``'s records."""
        return self.all_tenants or tenant in self.tenants

    @property
    def acts_as(self) -> str:
        """The reviewer or adjudicator id this principal reviews and decides as."""
        return self.reviewer_id or self.subject

    def describe(self) -> str:
        return f"{self.subject} ({self.issuer})" if self.authenticated else "dev-mode caller"


DEV_PRINCIPAL = Principal(
    issuer="",
    subject="",
    roles=frozenset(Role),
    tenants=frozenset({ALL_TENANTS}),
    authenticated=False,
)

# Set by the runtime's handler for the task that serves one RPC; no default, so code that
# asks outside an RPC fails loudly instead of acting with someone's rights.
_CURRENT: contextvars.ContextVar[Principal] = contextvars.ContextVar("assay_principal")


def bound_principal() -> Principal | None:
    """The principal bound to this task, or None (before admission, or outside an RPC)."""
    return _CURRENT.get(None)


def current_principal() -> Principal:
    """The principal of the RPC being served (LookupError outside one)."""
    return _CURRENT.get()


def bind_principal(principal: Principal) -> None:
    """Make ``principal`` the current one for this task: grpc serves each call in a task of
    its own, so the binding ends with the call (the runtime does this per call)."""
    _CURRENT.set(principal)
