"""The console's way to the services: one channel per service for the whole process, and
per request a client carrying the signed-in person's own token (never a credential of the
console's). In dev mode a person has no token and the calls carry none.

``usable`` is the console's health: every channel's server answers grpc.health.v1 (which
needs no token), so a console that cannot reach its services is not ready.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, fields

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.approvals import AsyncApprovalClient
from assay.client.channel import channel_options
from assay.console.settings import ConsoleSettings
from assay.v1 import adjudication_service_pb2, approval_service_pb2

Metadata = tuple[tuple[str, str], ...]
# How long /healthz waits for a service's answer (well inside a probe's own timeout).
HEALTH_SECONDS = 2.0


@dataclass
class Backends:
    adjudication: grpc.aio.Channel

    @classmethod
    def open(cls, settings: ConsoleSettings) -> Backends:
        return cls(adjudication=_channel(settings.adjudication, settings))

    async def close(self) -> None:
        await self.adjudication.close()

    def channels(self) -> dict[str, grpc.aio.Channel]:
        """Every channel the console holds, by service."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    async def usable(self) -> dict[str, bool]:
        """Whether each service answers a health check as SERVING within ``HEALTH_SECONDS``."""

        async def serving(channel: grpc.aio.Channel) -> bool:
            try:
                reply = await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=HEALTH_SECONDS
                )
            except grpc.RpcError:
                return False
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

        named = self.channels()
        answers = await asyncio.gather(*(serving(c) for c in named.values()))
        return dict(zip(named, answers, strict=True))

    def adjudication_for(self, token: str) -> AsyncAdjudicationClient:
        """The adjudication client as the person with ``token`` (the channel is shared)."""
        return AsyncAdjudicationClient(self.adjudication, metadata=bearer(token))

    def approvals_for(self, token: str) -> AsyncApprovalClient:
        """The approvals client as the person with ``token`` (ApprovalService is served on
        the adjudication port, so it shares that channel)."""
        return AsyncApprovalClient(self.adjudication, metadata=bearer(token))


def bearer(token: str) -> Metadata:
    """The call metadata for ``token``; none without one (dev mode)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


# The services the adjudication channel carries (ApprovalService shares its port).
_SERVICES = (
    adjudication_service_pb2.DESCRIPTOR.services_by_name["AdjudicationService"],
    approval_service_pb2.DESCRIPTOR.services_by_name["ApprovalService"],
)


def _channel(target: str, settings: ConsoleSettings) -> grpc.aio.Channel:
    """The client library's channel options (round_robin over every address a ``dns:///``
    target resolves to, retries of the retry-safe methods, the servers' size limits), so
    a console in front of several adjudication replicas spreads its calls over them."""
    options = channel_options(_SERVICES)
    if settings.ca is None:
        return grpc.aio.insecure_channel(target, options=options)
    credentials = grpc.ssl_channel_credentials(settings.ca.read_bytes())
    # The name every service's certificate carries, when the target's own is not it.
    name = settings.services_server_name
    if name:
        options.append(("grpc.ssl_target_name_override", name))
    return grpc.aio.secure_channel(target, credentials, options=options)
