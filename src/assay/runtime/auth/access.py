"""Each RPC's access rule, read from its ``(assay.v1.access)`` option in the contract.

The contract is the one place that says who may call what: the runtime enforces
the option it finds on the method descriptor, a contract test fails for any RPC
without it, and ``docs/security.md``'s role table is checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.descriptor import MethodDescriptor

from assay.runtime.auth.principal import Role
from assay.v1 import access_pb2

_ROLE_BY_NUMBER = {access_pb2.Role.Value(role.proto_name): role for role in Role}


@dataclass(frozen=True)
class AccessRule:
    """The roles that may call an RPC (any one suffices) and whether it is tenant-scoped."""

    roles: frozenset[Role]
    tenant_scoped: bool

    def describe(self) -> str:
        return ", ".join(sorted(role.value for role in self.roles))


def access_rule(method: MethodDescriptor) -> AccessRule:
    """The method's rule; TypeError when the contract gives it none (a server refuses to start)."""
    options = method.GetOptions()
    if not options.HasExtension(access_pb2.access):
        raise TypeError(f"{method.full_name} has no (assay.v1.access) option")
    rule = options.Extensions[access_pb2.access]
    roles = frozenset(_ROLE_BY_NUMBER[number] for number in rule.roles if number)
    if not roles:
        raise TypeError(f"{method.full_name}: (assay.v1.access) names no role")
    return AccessRule(roles, rule.tenant_scoped)
