"""What every Assay client does on every call, sync or async, written once.

- a timeout on every call: the client's default (``DEFAULT_TIMEOUT_SECONDS``
  unless the client was built with another), overridable per call. There is
  deliberately no "no timeout": a call that can hang forever is a bug;
- ``x-request-id`` metadata when the caller gives one (the server logs it and
  echoes it, and failed calls carry it as ``AssayCallError.request_id``);
- a fresh ``request_id`` in the body of a mutating request that has the field
  but was given none, so the channel's retries of UNAVAILABLE are safe: the
  server recognises the repeat and returns the first result;
- every ``grpc.RpcError`` re-raised as the matching ``AssayCallError`` subclass.

The clients take either a target (they then own a channel configured by
``assay.client.channel``, with TLS and a bearer token when given
``credentials``) or a channel the caller owns (shared across clients, or a
``grpc_testing`` channel in tests). A caller-owned channel already decided its
transport, so credentials go to the channel helper that made it, not to the
client: giving both is a ValueError rather than a token silently not sent.
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

import grpc
from google.protobuf import message as pb_message
from google.protobuf.descriptor import ServiceDescriptor

from assay.client.channel import DEFAULT_TIMEOUT_SECONDS, aio_channel, sync_channel
from assay.client.credentials import Credentials
from assay.client.errors import AssayCallError, from_rpc_error

REQUEST_ID_HEADER = "x-request-id"

Req = TypeVar("Req", bound=pb_message.Message)
Resp = TypeVar("Resp", bound=pb_message.Message)

Metadata = Sequence[tuple[str, str]]


def new_request_id() -> str:
    """A fresh retry key for a mutating request."""
    return uuid.uuid4().hex


def with_request_id(request: Req) -> Req:
    """``request`` with a ``request_id`` filled in when it has the field and it is empty.

    The caller's message is not modified: a copy is filled, so reusing a request
    object for a second, deliberate call gets a second id.
    """
    fields = request.DESCRIPTOR.fields_by_name
    if "request_id" not in fields or getattr(request, "request_id"):  # noqa: B009
        return request
    filled = type(request)()
    filled.CopyFrom(request)
    setattr(filled, "request_id", new_request_id())  # noqa: B010
    return filled


def call_metadata(base: Metadata, x_request_id: str | None) -> tuple[tuple[str, str], ...]:
    """The metadata sent with a call: the client's, plus ``x-request-id`` when given."""
    extra = ((REQUEST_ID_HEADER, x_request_id),) if x_request_id else ()
    return (*tuple(base), *extra)


def _check_timeout(timeout: float) -> float:
    # A caller's programming error, not a failed call: ValueError, not AssayCallError.
    if not timeout > 0:
        raise ValueError(f"timeout must be positive seconds, not {timeout!r}")
    return timeout


def _no_credentials_for_owned_channel(credentials: Credentials | None) -> None:
    if credentials is not None:
        raise ValueError(
            "credentials apply to a channel the client opens from a target; for a channel you "
            "own, give them to assay.client.channel.sync_channel / aio_channel instead"
        )


def _serialize(message: pb_message.Message) -> bytes:
    return message.SerializeToString()


class _ClientBase:
    """Options and method paths shared by the sync and async bases."""

    SERVICE: ClassVar[ServiceDescriptor]

    def __init__(self, timeout: float, metadata: Metadata) -> None:
        self.timeout = _check_timeout(timeout)
        self.metadata = tuple(metadata)
        # One multicallable per method, made on first use: creating one per call costs more
        # than many small calls do.
        self._stubs: dict[str, Any] = {}

    def _path(self, method: str) -> str:
        return f"/{self.SERVICE.full_name}/{method}"

    def _options(self, timeout: float | None, x_request_id: str | None) -> dict[str, Any]:
        return {
            "timeout": self.timeout if timeout is None else _check_timeout(timeout),
            "metadata": call_metadata(self.metadata, x_request_id),
        }


class SyncClient(_ClientBase):
    """Base of the blocking clients."""

    def __init__(
        self,
        target: str | grpc.Channel,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        metadata: Metadata = (),
        credentials: Credentials | None = None,
    ) -> None:
        super().__init__(timeout, metadata)
        if not isinstance(target, str):
            _no_credentials_for_owned_channel(credentials)
        self._owns_channel = isinstance(target, str)
        self.channel: grpc.Channel = (
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
                request_serializer=_serialize,
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
            request_serializer=_serialize,
            response_deserializer=response_type.FromString,
        )
        call = stub(with_request_id(request), **self._options(timeout, x_request_id))
        try:
            yield from cast(Iterator[Resp], call)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()  # a no-op once the stream has ended; frees it if the caller stopped


class AsyncClient(_ClientBase):
    """Base of the asyncio clients."""

    def __init__(
        self,
        target: str | grpc.aio.Channel,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        metadata: Metadata = (),
        credentials: Credentials | None = None,
    ) -> None:
        super().__init__(timeout, metadata)
        if not isinstance(target, str):
            _no_credentials_for_owned_channel(credentials)
        self._owns_channel = isinstance(target, str)
        self.channel: grpc.aio.Channel = (
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
                request_serializer=_serialize,
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
            request_serializer=_serialize,
            response_deserializer=response_type.FromString,
        )
        call = stub(with_request_id(request), **self._options(timeout, x_request_id))
        try:
            async for item in call:
                yield cast(Resp, item)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from error
        finally:
            call.cancel()


__all__ = [
    "REQUEST_ID_HEADER",
    "AssayCallError",
    "AsyncClient",
    "Credentials",
    "SyncClient",
    "call_metadata",
    "new_request_id",
    "with_request_id",
]
