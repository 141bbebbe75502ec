"""Builds the planner's ``ServiceSpec``: one long-lived resolver channel and the servicer.

The channel is created here, inside the serving event loop, and closed by the
spec's ``close`` hook on shutdown. Creating it does not connect: the planner
starts (and reports SERVING) whether or not the resolver is up yet, and each
plan fails with RESOLVER_UNAVAILABLE until it is.
"""

from __future__ import annotations

from assay.runtime.config import DEFAULT_MAX_MESSAGE_BYTES
from assay.runtime.server import ServiceSpec
from assay.runtime.tls import ClientTls
from assay.services.planner.resolver_client import ResolverClient
from assay.services.planner.servicer import PlannerServicer
from assay.services.registry import ServeOptions
from assay.transport import TokenFile
from assay.v1 import planner_service_pb2

SERVICE_DESCRIPTOR = planner_service_pb2.DESCRIPTOR.services_by_name["PlannerService"]


def make_servicer(
    resolver_target: str,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    tls: ClientTls | None = None,
    token: TokenFile | None = None,
) -> PlannerServicer:
    """A servicer with its own resolver channel (call inside a running event loop)."""
    return PlannerServicer(ResolverClient(resolver_target, max_message_bytes, tls, token))


async def build_spec(options: ServeOptions) -> ServiceSpec:
    """The planner on ``options.port``, calling the resolver at ``options.resolver_target``
    over ``options.resolver_tls`` with its own token (``options.resolver_token_file``)."""
    token = TokenFile(options.resolver_token_file) if options.resolver_token_file else None
    servicer = make_servicer(
        options.resolver_target, options.max_message_bytes, options.resolver_tls, token
    )
    return ServiceSpec(
        name="planner",
        descriptor=SERVICE_DESCRIPTOR,
        servicer=servicer,
        port=options.port,
        close=servicer.resolver.close,
    )
