"""Builds the planner's ``ServiceSpec``: one long-lived resolver channel and the servicer.

The channel is created here, inside the serving event loop, and closed by the
spec's ``close`` hook on shutdown. Creating it does not connect: the planner
starts whether or not the resolver is up yet, and each plan fails with
RESOLVER_UNAVAILABLE until it is.

The resolver is the planner's dependency: the runtime asks the resolver's health
(``ResolverClient.serving``) at start and then in the background, and the
planner's own name, ``assay.v1.PlannerService``, reports NOT_SERVING while the
resolver is unreachable or not serving, and SERVING again by itself when it is
back (the server as a whole, ``""``, stays SERVING: the planner process is up).
"""

from __future__ import annotations

from assay.runtime.config import DEFAULT_MAX_MESSAGE_BYTES
from assay.runtime.server import Dependency, ServiceSpec
from assay.runtime.tls import ClientTls
from assay.services.planner.adapters.observation_file import ObservationFile
from assay.services.planner.adapters.probe_file import load_probes
from assay.services.planner.adapters.resolver_client import ResolverClient
from assay.services.planner.adapters.servicer import PlannerServicer
from assay.services.planner.domain.probes import CATALOGUE, Catalogue
from assay.services.registry import ServeOptions
from assay.transport import TokenFile
from assay.v1 import planner_service_pb2

SERVICE_DESCRIPTOR = planner_service_pb2.DESCRIPTOR.services_by_name["PlannerService"]
# How long one probe of the resolver's health may take before it counts as unreachable.
RESOLVER_PROBE_TIMEOUT_SECONDS = 1.0


def make_servicer(
    resolver_target: str,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    tls: ClientTls | None = None,
    token: TokenFile | None = None,
    catalogue: Catalogue = CATALOGUE,
    observations: ObservationFile | None = None,
) -> PlannerServicer:
    """A servicer with its own resolver channel (call inside a running event loop)."""
    return PlannerServicer(
        ResolverClient(resolver_target, max_message_bytes, tls, token), catalogue, observations
    )


async def build_spec(options: ServeOptions) -> ServiceSpec:
    """The planner on ``options.port``, calling the resolver at ``options.resolver_target``
    over ``options.resolver_tls`` with its own token (``options.resolver_token_file``)."""
    token = TokenFile(options.resolver_token_file) if options.resolver_token_file else None
    # A bad probe file is a ProbeFileError (a ValueError): refused before anything listens.
    catalogue = load_probes(options.probes_file) if options.probes_file else CATALOGUE
    # Likewise an observations file others may write (ObservationFileError).
    observations = None
    if options.observations_file is not None:
        declared = {kind: probe.latency for kind, probe in catalogue.items()}
        observations = ObservationFile(options.observations_file, declared)
    servicer = make_servicer(
        options.resolver_target,
        options.max_message_bytes,
        options.resolver_tls,
        token,
        catalogue,
        observations,
    )
    resolver = servicer.resolver

    async def resolver_serving() -> bool:
        return await resolver.serving(RESOLVER_PROBE_TIMEOUT_SECONDS)

    return ServiceSpec(
        name="planner",
        descriptor=SERVICE_DESCRIPTOR,
        servicer=servicer,
        port=options.port,
        close=resolver.close,
        dependency=Dependency(f"resolver at {options.resolver_target}", resolver_serving),
    )
