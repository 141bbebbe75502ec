"""Who is calling, and may they: principals, the contract's access rules, tokens, the policy.

The runtime turns each call into a ``Principal`` before the servicer runs
(``gate.Gate``, called by ``runtime.handlers``): from a bearer JWT verified
against a JWKS file or URL (``tokens``, ``jwks``), or from a verified mTLS client certificate,
mapped to roles and tenants by the auth policy file (``policy``). Each RPC's
roles come from its ``(assay.v1.access)`` option in the contract (``access``).
Servicers read the caller with ``current_principal()``.
"""

from assay.runtime.auth.access import AccessRule, access_rule
from assay.runtime.auth.gate import DEV_GATE, Gate
from assay.runtime.auth.principal import (
    ALL_TENANTS,
    DEV_PRINCIPAL,
    Principal,
    Role,
    current_principal,
)

__all__ = [
    "ALL_TENANTS",
    "DEV_GATE",
    "DEV_PRINCIPAL",
    "AccessRule",
    "Gate",
    "Principal",
    "Role",
    "access_rule",
    "current_principal",
]
