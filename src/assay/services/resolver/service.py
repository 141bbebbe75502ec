"""Builds the resolver's ``ServiceSpec``: its policy (table file or builtin) and servicer.

The reliability table is read at start: a bad table file stops start-up with one line
naming the file and entry, rather than serving a guess. A table file is read again when
it changes (``adapters.policy_file``); a bad version then keeps the table in force.
"""

from __future__ import annotations

from assay.runtime.server import ServiceSpec
from assay.services.registry import ServeOptions
from assay.services.resolver.adapters.policy_file import policy_source
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.domain.policy import Policy, load_policy
from assay.services.resolver.domain.request_cost import ColumnsLimits
from assay.v1 import resolver_service_pb2

SERVICE_DESCRIPTOR = resolver_service_pb2.DESCRIPTOR.services_by_name["ResolverService"]


def make_servicer(policy: Policy | None = None) -> ResolverServicer:
    """A servicer over ``policy`` (the builtin table by default): for tests and benchmarks."""
    return ResolverServicer(policy or load_policy(None))


async def build_spec(options: ServeOptions) -> ServiceSpec:
    """The resolver on ``options.port``; the table comes from ``options.reliability_table``,
    else ``$ASSAY_RELIABILITY_TABLE`` (either watched for changes), else the builtin one. No
    response may pass ``options.max_message_bytes`` (the servers' own limit), and no
    ResolveColumns stream may hold more than ``options.columns_max_*`` allow (the defaults
    where None). Raises ``TableError``."""
    policies = policy_source(options.reliability_table)
    limits = ColumnsLimits.of(
        options.columns_max_rows, options.columns_max_bytes, options.columns_max_ratio
    )
    servicer = ResolverServicer(policies, options.max_message_bytes, limits)
    return ServiceSpec(
        name="resolver",
        descriptor=SERVICE_DESCRIPTOR,
        servicer=servicer,
        port=options.port,
        close=servicer.close,
    )
