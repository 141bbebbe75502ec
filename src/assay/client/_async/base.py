"""The clients' base: one call or one stream with the Assay options, errors made typed.

The clients take either a target (they then own a channel configured by
``assay.client.channel``, with TLS and a bearer token when given
``credentials``) or a channel the caller owns (shared across clients, or a
``grpc_testing`` channel in tests). A caller-owned channel already decided its
transport, so credentials go to the channel helper that made it, not to the
client: giving both is a ValueError rather than a token silently not sent.
Every ``grpc.RpcError`` is re-raised as the matching ``AssayCallError`` subclass.
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Self, cast

import grpc
from google.protobuf import message as pb_message

from assay.client.calls import (
    AsyncChannel,
    ClientBase,
    Metadata,
    Resp,
    no_credentials_for_owned_channel,
    serialize,
    with_request_id,
)
from assay.client.channel import DEFAULT_TIMEOUT_SECONDS, aio_channel
from assay.client.credentials import Credentials
from assay.client.errors import from_rpc_error


class AsyncClient(ClientBase):
    """Base of the asyncio clients."""

    def __init__(
        self,
        target: str | AsyncChannel,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        metadata: Metadata = (),
        credentials: Credentials | None = None,
    ) -> None:
        super().__init__(timeout, metadata)
        if not isinstance(target, str):
            no_credentials_for_owned_channel(credentials)
        self._owns_channel = isinstance(target, str)
        self.channel: AsyncChannel = (
            aio_channel(target, [self.SERVICE], credentials) if isinstance(target, str) else target
        )

    async def close(self) -> None:
        """Close the channel if this client created it."""
        if self._owns_channel:
            await self.channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _unary(
        self,
        method: str,
        request: pb_message.Message,
        response_type: type[Resp],
        timeout: float | None,
        x_request_id: str | None,
    ) -> Resp:
        stub = self._stubs.get(method)
        if stub is None:
            stub = self._stubs[method] = self.channel.unary_unary(
                self._path(method),
                request_serializer=serialize,
                response_deserializer=response_type.FromString,
            )
        try:
            return cast(
                Resp, await stub(with_request_id(request), **self._options(timeout, x_request_id))
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error

    async def _stream(
        self,
        method: str,
        request: pb_message.Message,
        response_type: type[Resp],
        timeout: float | None,
        x_request_id: str | None,
    ) -> AsyncIterator[Resp]:
        stub = self.channel.unary_stream(
            self._path(method),
            request_serializer=serialize,
            response_deserializer=response_type.FromString,
        )
        call = stub(with_request_id(request), **self._options(timeout, x_request_id))
        try:
            async for item in call:
                yield cast(Resp, item)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()  # a no-op once the stream has ended; frees it if the caller stopped
