"""The console's way to the services: one channel per service for the whole process, and
per request a client carrying the signed-in person's own token (never a credential of the
console's)."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.console.settings import ConsoleSettings

Metadata = tuple[tuple[str, str], ...]


@dataclass
class Backends:
    adjudication: grpc.aio.Channel

    @classmethod
    def open(cls, settings: ConsoleSettings) -> Backends:
        return cls(adjudication=_channel(settings.adjudication, settings))

    async def close(self) -> None:
        await self.adjudication.close()

    def adjudication_for(self, token: str) -> AsyncAdjudicationClient:
        """The adjudication client as the person with ``token`` (the channel is shared)."""
        return AsyncAdjudicationClient(self.adjudication, metadata=bearer(token))


def bearer(token: str) -> Metadata:
    return (("authorization", f"Bearer {token}"),)


def _channel(target: str, settings: ConsoleSettings) -> grpc.aio.Channel:
    if settings.ca is None:
        return grpc.aio.insecure_channel(target)
    credentials = grpc.ssl_channel_credentials(settings.ca.read_bytes())
    return grpc.aio.secure_channel(target, credentials)
