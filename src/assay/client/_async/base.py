"""The clients' base: one call or one stream with the Assay options, errors made typed.

The clients take either a target (they then own a channel configured by
``assay.client.channel``, with TLS and a bearer token when given
``credentials``) or a channel the caller owns (shared across clients, or a
``grpc_testing`` channel in tests). A caller-owned channel already decided its
transport, so credentials go to the channel helper that made it, not to the
client: giving both is a ValueError rather than a token silently not sent.
Every ``grpc.RpcError`` is re-raised as the matching ``AssayCallError`` subclass.
A client class names each unary RPC once, ``get_case = unary(GetCaseRequest,
GetCaseResponse)``: the method it becomes has the one shape every RPC shares.
``follow_pages`` drains a list RPC, page after page, for the convenience methods.
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from types import MethodType
from typing import Any, Generic, Protocol, Self, TypeVar, cast, overload

import grpc
from google.protobuf import message as pb_message

from assay.client.calls import (
    AsyncChannel,
    ClientBase,
    Metadata,
    Req,
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


ReqIn = TypeVar("ReqIn", bound=pb_message.Message, contravariant=True)
RespOut = TypeVar("RespOut", bound=pb_message.Message, covariant=True)
Bound = TypeVar("Bound")


class UnaryCall(Protocol[ReqIn, RespOut]):
    """A unary RPC method as called on a client."""

    async def __call__(
        self, request: ReqIn, *, timeout: float | None = None, x_request_id: str | None = None
    ) -> RespOut: ...


class UnaryCallDefaultRequest(Protocol[ReqIn, RespOut]):
    """A unary RPC method whose request may be left out (an empty one is sent)."""

    async def __call__(
        self,
        request: ReqIn | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> RespOut: ...


class Rpc(Generic[Bound]):
    """A client method made from a function: the function on the class, bound on a client.

    On a client class it checks that the service has the RPC with these message
    types, so a mistyped pairing fails at import, not at the first call.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        request_type: type[pb_message.Message],
        response_type: type[pb_message.Message],
    ) -> None:
        self.function = function
        self.types = (request_type.DESCRIPTOR, response_type.DESCRIPTOR)
        self.rpc = rpc_name(request_type)

    def __set_name__(self, owner: type[AsyncClient], name: str) -> None:
        method = owner.SERVICE.methods_by_name.get(self.rpc)
        if method is None or (method.input_type, method.output_type) != self.types:
            raise TypeError(f"{owner.SERVICE.full_name} has no RPC {self.rpc} of these messages")
        self.function.__name__ = name
        self.function.__qualname__ = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(self, client: None, owner: type[AsyncClient]) -> Callable[..., Any]: ...

    @overload
    def __get__(self, client: AsyncClient, owner: type[AsyncClient]) -> Bound: ...

    def __get__(self, client: AsyncClient | None, owner: type[AsyncClient]) -> Any:
        return self.function if client is None else MethodType(self.function, client)


def rpc_name(request_type: type[pb_message.Message]) -> str:
    """The RPC taking ``request_type``: every request message is named ``<Rpc>Request``."""
    return request_type.DESCRIPTOR.name.removesuffix("Request")


def unary(request_type: type[Req], response_type: type[Resp]) -> Rpc[UnaryCall[Req, Resp]]:
    """The client method of the unary RPC taking ``request_type``."""
    rpc = rpc_name(request_type)

    async def call(
        self: AsyncClient,
        request: Req,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> Resp:
        return await self._unary(rpc, request, response_type, timeout, x_request_id)

    return Rpc(call, request_type, response_type)


def unary_default_request(
    request_type: type[Req], response_type: type[Resp]
) -> Rpc[UnaryCallDefaultRequest[Req, Resp]]:
    """Like ``unary``, for an RPC whose request may be left out: an empty one is sent."""
    rpc = rpc_name(request_type)

    async def call(
        self: AsyncClient,
        request: Req | None = None,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> Resp:
        sent = request_type() if request is None else request
        return await self._unary(rpc, sent, response_type, timeout, x_request_id)

    return Rpc(call, request_type, response_type)


Item = TypeVar("Item")


class PageRequest(Protocol):
    page_token: str


class Page(Protocol):
    @property
    def next_page_token(self) -> str: ...


PageReqIn = TypeVar("PageReqIn", bound=PageRequest, contravariant=True)
PageOut = TypeVar("PageOut", bound=Page, covariant=True)
PageReqT = TypeVar("PageReqT", bound=PageRequest)
PageT = TypeVar("PageT", bound=Page)


class ListCall(Protocol[PageReqIn, PageOut]):
    """A list RPC method, as ``follow_pages`` calls it."""

    async def __call__(self, request: PageReqIn, *, timeout: float | None = None) -> PageOut: ...


async def follow_pages(
    list_call: ListCall[PageReqT, PageT],
    request: PageReqT,
    items: Callable[[PageT], Iterable[Item]],
    timeout: float | None,
) -> AsyncIterator[Item]:
    """Every item of every page of a list RPC: ``request`` is sent again with each
    ``next_page_token`` until a page comes back without one."""
    while True:
        page = await list_call(request, timeout=timeout)
        for item in items(page):
            yield item
        if not page.next_page_token:
            return
        request.page_token = page.next_page_token
