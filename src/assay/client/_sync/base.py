# Generated from src/assay/client/_async/base.py by tools/gen_sync_client.py:
# edit the asyncio source and regenerate (`just sync-client`), never this file.
"""The clients' base: one call or one stream with the Assay options, errors made typed.

The clients take either a target (they then own a channel configured by
``assay.client.channel``, with TLS and a bearer token when given
``credentials``) or a channel the caller owns (shared across clients, or a
``grpc_testing`` channel in tests). A caller-owned channel already decided its
transport, so credentials go to the channel helper that made it, not to the
client: giving both is a ValueError rather than a token silently not sent.
Every ``grpc.RpcError`` is re-raised as the matching ``AssayCallError`` subclass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Self, cast

import grpc
from google.protobuf import message as pb_message

from assay.client.calls import (
    ClientBase,
    Metadata,
    Resp,
    SyncChannel,
    no_credentials_for_owned_channel,
    serialize,
    with_request_id,
)
from assay.client.channel import DEFAULT_TIMEOUT_SECONDS, sync_channel
from assay.client.credentials import Credentials
from assay.client.errors import from_rpc_error


class SyncClient(ClientBase):
    """Base of the blocking clients."""

    def __init__(
        self,
        target: str | SyncChannel,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        metadata: Metadata = (),
        credentials: Credentials | None = None,
    ) -> None:
        super().__init__(timeout, metadata)
        if not isinstance(target, str):
            no_credentials_for_owned_channel(credentials)
        self._owns_channel = isinstance(target, str)
        self.channel: SyncChannel = (
            sync_channel(target, [self.SERVICE], credentials) if isinstance(target, str) else target
        )

    def close(self) -> None:
        """Close the channel if this client created it."""
        if self._owns_channel:
            self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unary(
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
                Resp, stub(with_request_id(request), **self._options(timeout, x_request_id))
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error

    def _stream(
        self,
        method: str,
        request: pb_message.Message,
        response_type: type[Resp],
        timeout: float | None,
        x_request_id: str | None,
    ) -> Iterator[Resp]:
        stub = self.channel.unary_stream(
            self._path(method),
            request_serializer=serialize,
            response_deserializer=response_type.FromString,
        )
        call = stub(with_request_id(request), **self._options(timeout, x_request_id))
        try:
            for item in call:
                yield cast(Resp, item)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()  # a no-op once the stream has ended; frees it if the caller stopped
