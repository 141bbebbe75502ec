"""Turns a servicer object into gRPC method handlers that behave the same for every service.

Each handler receives the raw request bytes and parses them itself, so that
malformed bytes become ``INVALID_ARGUMENT`` (``ERROR_REASON_MALFORMED_REQUEST``)
instead of grpc's ``UNKNOWN``/``INTERNAL``. Around the servicer call it:

- takes ``x-request-id`` from the metadata (or makes one) and echoes it back;
- maps ``AssayError`` subclasses to rich statuses through ``status.to_status``;
- turns anything unexpected into a generic ``INTERNAL`` and logs the traceback;
- writes exactly one structlog line per RPC: method, code, duration, request id.

Responses are serialized deterministically, so the same request gives the
same bytes. Servicer methods are plain ``async def Method(self, request,
context)`` (unary) or async generators (server streaming).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import message as pb_message
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from assay import errors
from assay.runtime.logging import get_logger
from assay.runtime.status import internal_status, to_status

REQUEST_ID_KEY = "x-request-id"
_MAX_REQUEST_ID = 128

_log = get_logger("assay.rpc")

UnaryImpl = Callable[[Any, grpc.aio.ServicerContext], Awaitable[pb_message.Message]]
StreamImpl = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[pb_message.Message]]


def _serialize(message: pb_message.Message) -> bytes:
    return message.SerializeToString(deterministic=True)


def request_id_of(context: grpc.aio.ServicerContext) -> str:
    """The caller's ``x-request-id`` (trimmed to a sane length), or a fresh one."""
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_KEY and isinstance(value, str) and value:
            return value[:_MAX_REQUEST_ID]
    return uuid.uuid4().hex


class _Call:
    """Book-keeping for one RPC: parsing, error mapping and its single log line."""

    def __init__(self, method: str, context: grpc.aio.ServicerContext) -> None:
        self.method = method
        self.context = context
        self.request_id = request_id_of(context)
        # Read the peer now: after a client cancels a server stream, context.peer() can crash
        # grpcio's aio core (seen with 1.85), and finish() runs exactly then.
        self.peer = context.peer()
        self.started = time.perf_counter()
        self.code = grpc.StatusCode.OK
        self.reason = ""
        self.error_message = ""

    def parse(self, request_type: type[pb_message.Message], raw: bytes) -> pb_message.Message:
        try:
            return request_type.FromString(raw)
        except pb_message.DecodeError:
            raise errors.InvalidArgument(
                errors.Reason.MALFORMED_REQUEST,
                f"request bytes are not a valid {request_type.DESCRIPTOR.full_name}",
                [errors.FieldViolation("", "request is not a parseable protobuf message")],
            ) from None

    async def fail(self, error: BaseException) -> None:
        """Abort the RPC with the status the error maps to; never returns."""
        if isinstance(error, errors.AssayError):
            status = to_status(error, self.request_id)
            self.reason = str(error.reason)
            self.error_message = error.message
        else:
            status = internal_status(self.request_id)
            self.reason = str(errors.Reason.INTERNAL)
            _log.error(
                "rpc_unhandled_exception",
                method=self.method,
                request_id=self.request_id,
                exc_info=error,
            )
        self.code = status.code
        metadata = (*status.trailing_metadata, (REQUEST_ID_KEY, self.request_id))
        await self.context.abort(status.code, status.details, metadata)

    def finish(self) -> None:
        fields: dict[str, Any] = {
            "method": self.method,
            "code": self.code.name,
            "duration_ms": round((time.perf_counter() - self.started) * 1000, 3),
            "request_id": self.request_id,
            "peer": self.peer,
        }
        if self.reason:
            fields["reason"] = self.reason
        if self.error_message:
            fields["error"] = self.error_message
        if self.code == grpc.StatusCode.OK:
            _log.info("rpc", **fields)
        else:
            _log.warning("rpc", **fields)


def _unary(method: str, request_type: type[pb_message.Message], impl: UnaryImpl) -> Any:
    async def behavior(raw: bytes, context: grpc.aio.ServicerContext) -> pb_message.Message:
        call = _Call(method, context)
        try:
            request = call.parse(request_type, raw)
            response = await impl(request, context)
            context.set_trailing_metadata(((REQUEST_ID_KEY, call.request_id),))
            return response
        except asyncio.CancelledError:
            call.code = grpc.StatusCode.CANCELLED
            raise
        except grpc.aio.AbortError:
            call.code = context.code() or grpc.StatusCode.UNKNOWN
            raise
        except Exception as error:
            await call.fail(error)
            raise AssertionError("unreachable: abort raises") from error
        finally:
            call.finish()

    return grpc.unary_unary_rpc_method_handler(
        behavior, request_deserializer=None, response_serializer=_serialize
    )


def _server_stream(method: str, request_type: type[pb_message.Message], impl: StreamImpl) -> Any:
    async def behavior(
        raw: bytes, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb_message.Message]:
        call = _Call(method, context)
        try:
            request = call.parse(request_type, raw)
            async for item in impl(request, context):
                yield item
            context.set_trailing_metadata(((REQUEST_ID_KEY, call.request_id),))
        except (asyncio.CancelledError, GeneratorExit):
            call.code = grpc.StatusCode.CANCELLED
            raise
        except grpc.aio.AbortError:
            call.code = context.code() or grpc.StatusCode.UNKNOWN
            raise
        except Exception as error:
            await call.fail(error)
        finally:
            call.finish()

    return grpc.unary_stream_rpc_method_handler(
        behavior, request_deserializer=None, response_serializer=_serialize
    )


def _method_handler(service: ServiceDescriptor, method: MethodDescriptor, servicer: object) -> Any:
    impl = getattr(servicer, method.name, None)
    if impl is None:
        raise TypeError(f"{type(servicer).__name__} does not implement {method.full_name}")
    request_type = message_factory.GetMessageClass(method.input_type)
    path = f"/{service.full_name}/{method.name}"
    if method.client_streaming:
        raise TypeError(f"{method.full_name}: client streaming is not supported by the runtime")
    if method.server_streaming:
        return _server_stream(path, request_type, impl)
    return _unary(path, request_type, impl)


class ServiceHandler(grpc.GenericRpcHandler):  # type: ignore[misc]
    """All of one service's methods, each wrapped as described in the module docstring."""

    def __init__(self, service: ServiceDescriptor, servicer: object) -> None:
        self.service_name = service.full_name
        self._handlers = {
            f"/{service.full_name}/{m.name}": _method_handler(service, m, servicer)
            for m in service.methods
        }

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        return self._handlers.get(handler_call_details.method)

    def method_handlers(self) -> dict[str, Any]:
        """Handlers by bare method name, for ``add_registered_method_handlers`` (the faster,
        pre-registered path: grpc-core matches the method without a Python lookup)."""
        prefix = f"/{self.service_name}/"
        return {path.removeprefix(prefix): handler for path, handler in self._handlers.items()}
