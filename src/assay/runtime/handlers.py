"""Turns a servicer object into gRPC method handlers that behave the same for every service.

Each handler parses the raw request bytes itself, so malformed bytes are
``INVALID_ARGUMENT`` / ``MALFORMED_REQUEST`` rather than grpc's ``UNKNOWN``. Around the
servicer call it takes or makes the ``x-request-id`` (the servicer's ``current_request_id()``,
sent on by a service calling another); refuses the call at once, with a retry delay, past
the admission limit or while shutting down (``admission``); admits the caller through the
server's ``Gate`` before the request is parsed (the servicer's ``current_principal()``); maps
``AssayError`` to rich statuses (``status.to_status``) and anything else to a generic
``INTERNAL`` with the traceback logged; and writes one log line and, when exported, the
call's metrics, in one place.

Responses are serialized deterministically. A unary method may return bytes it already
holds serialized (a replayed response). ``REQUEST_PARSERS`` lets a servicer parse a method's
request its own way (the resolver reads ``ResolveColumns``'s stream without copying it).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf import message as pb_message
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from assay import errors
from assay.runtime.admission import Admission
from assay.runtime.auth import DEV_GATE, AccessRule, Gate, access_rule
from assay.runtime.auth.principal import DEV_PRINCIPAL, bind_principal, bound_principal
from assay.runtime.logging import get_logger, rpc_line
from assay.runtime.memory import LARGE_REQUEST_BYTES, trim_after
from assay.runtime.requests import parse_request
from assay.runtime.status import internal_status, to_status

if TYPE_CHECKING:  # prometheus-client is imported only by a server that exports metrics
    from assay.runtime.metrics import Metrics, RpcMeter

# errors.proto is the vocabulary of every ErrorInfo.reason sent from here, yet no service's
# proto imports it, so nothing else puts it in the descriptor pool that server reflection
# serves from: imported, a client can `grpcurl describe assay.v1.ErrorReason`.
from assay.v1 import errors_pb2 as _errors_pb2  # noqa: F401

REQUEST_ID_KEY = "x-request-id"
_MAX_REQUEST_ID = 128
_OK = grpc.StatusCode.OK

_log = get_logger("assay.rpc")

UnaryImpl = Callable[[Any, grpc.aio.ServicerContext], Awaitable[pb_message.Message | bytes]]
StreamImpl = Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[pb_message.Message]]

# Everything below runs on every call, so it is written for the common case: one metadata
# scan, a counter for an id (random bytes cost a system call), no per-call objects beyond
# the log line's fields; the failure paths are out of line.


def _serialize(message: pb_message.Message | bytes) -> bytes:
    if type(message) is bytes:  # already serialized (deterministically) by the servicer
        return message
    return message.SerializeToString(deterministic=True)  # type: ignore[union-attr]


class _RequestIds:
    """32 hex digits: 64 random bits drawn once per process, then a 64-bit counter.

    Unique within the process and, with 2**64 random prefixes, across processes, which is
    what correlating log lines needs; drawing random bytes on every call (a system call)
    costs more than the rest of the id. A forked child draws its own prefix."""

    def __init__(self) -> None:
        self.reseed()

    def reseed(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.counter = itertools.count()

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


_REQUEST_IDS = _RequestIds()
os.register_at_fork(after_in_child=_REQUEST_IDS.reseed)


# Each call runs in a task of its own, so this is the id of the call the code runs for.
_CURRENT_REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("assay_request_id")


def current_request_id() -> str:
    """The id of the call being handled (the caller's ``x-request-id`` or the one made for
    it, as its log line says); a fresh one outside a call."""
    return _CURRENT_REQUEST_ID.get(None) or new_request_id()


class _Method:
    """What the per-call functions need to know of the method, fixed when the server starts:
    its path, for the log line; its metric series (None: the server exports no metrics);
    how its request is parsed; and the gate, access rule and admission every call passes."""

    __slots__ = ("admission", "gate", "meter", "parse", "path", "rule")

    def __init__(
        self,
        path: str,
        meter: RpcMeter | None,
        parse: Callable[[bytes], object],
        gate: Gate,
        rule: AccessRule,
        admission: Admission,
    ) -> None:
        self.path = path
        self.meter = meter
        self.parse = parse
        self.gate = gate
        self.rule = rule
        self.admission = admission


def new_request_id() -> str:
    """A fresh id for a call that came without one (see ``_RequestIds``)."""
    return _REQUEST_IDS.next()


def request_id_of(context: grpc.aio.ServicerContext) -> str:
    """The caller's ``x-request-id`` (trimmed to a sane length), or a fresh one."""
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_KEY and isinstance(value, str) and value:
            return value[:_MAX_REQUEST_ID]
    return new_request_id()


def _log_rpc(
    method: _Method,
    code: grpc.StatusCode,
    started: float,
    request_id: str,
    peer: str,
    reason: str = "",
    error: str = "",
) -> None:
    """The one line for an RPC: info when it succeeded, warning otherwise; and its metrics."""
    elapsed = time.perf_counter() - started
    if method.meter is not None:
        method.meter.record(code, elapsed)
    caller = bound_principal()
    if code is _OK:  # the common line, without building its fields (``RpcLog.ok``)
        # who (never the credential itself); none for the dev-mode caller
        subject = caller.subject if caller is not None and caller.authenticated else None
        rpc_line().ok(method.path, round(elapsed * 1000, 3), request_id, peer, subject)
        return
    fields: dict[str, Any] = {
        "method": method.path,
        "code": code.name,
        "duration_ms": round(elapsed * 1000, 3),
        "request_id": request_id,
        "peer": peer,
    }
    if caller is not None and caller.authenticated:
        fields["caller"] = caller.subject  # who, never the credential itself
    if reason:
        fields["reason"] = reason
    if error:
        fields["error"] = error
    rpc_line().warning(fields)


async def _fail(
    method: _Method,
    context: grpc.aio.ServicerContext,
    started: float,
    request_id: str,
    peer: str,
    error: BaseException,
) -> bool:
    """Log the call's line and end it the way ``error`` says.

    A domain error becomes its rich status; anything else a generic INTERNAL, with the
    traceback logged under the request id; an abort already under way stands. Returns
    False once the status is sent (the caller returns), True for cancellation and what is
    not ours to map (the caller re-raises with a bare ``raise``: raised from here, ``error``
    would hold this frame, which holds ``error``).

    No exception leaves the handler for a status it sent, because that leaked every
    rejected request: grpc keeps the ``AbortError`` that ``abort`` raises on the call's
    state, which the call's frames reach through ``context``, so once it propagated through
    them its traceback (and the error it was raised while handling) made a cycle holding
    the request bytes and the parsed request until a full collection -- rare in a server
    (``gc_tuning``). Caught here and stripped of both (``_forget_where``), it is re-raised
    by grpc itself from its own frames when the handler returns, ending the call."""
    if isinstance(error, (asyncio.CancelledError, GeneratorExit)):
        # Shutdown ends a call still running after the grace with UNAVAILABLE before it
        # cancels its task: log the status the caller got, not the cancellation.
        code = context.code() or grpc.StatusCode.CANCELLED
        _log_rpc(method, code, started, request_id, peer)
        return True
    if isinstance(error, grpc.aio.AbortError):  # the servicer aborted: its status is sent
        _log_rpc(method, context.code() or grpc.StatusCode.UNKNOWN, started, request_id, peer)
        _forget_where(error)
        return False
    if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit: not ours to map
        _log_rpc(method, grpc.StatusCode.UNKNOWN, started, request_id, peer)
        return True
    if isinstance(error, errors.AssayError):
        status = to_status(error, request_id)
        reason, message = str(error.reason), error.message
    else:
        status = internal_status(request_id)
        reason, message = str(errors.Reason.INTERNAL), ""
        _log.error(
            "rpc_unhandled_exception", method=method.path, request_id=request_id, exc_info=error
        )
    _log_rpc(method, status.code, started, request_id, peer, reason, message)
    metadata = (*status.trailing_metadata, (REQUEST_ID_KEY, request_id))
    try:
        await context.abort(status.code, status.details, metadata)
    except grpc.aio.AbortError as aborted:
        _forget_where(aborted)
    return False


def _forget_where(aborted: BaseException) -> None:
    """Drop what ties grpc's stored ``AbortError`` to this call's frames (see ``_fail``)."""
    aborted.__traceback__ = None
    aborted.__context__ = None
    aborted.__cause__ = None


async def _refuse(
    method: _Method,
    context: grpc.aio.ServicerContext,
    started: float,
    request_id: str,
    peer: str,
) -> None:
    """Turn away a call the method's admission did not admit: its one log line, then its status.

    The abort is caught and its traceback dropped: grpc keeps the exception and re-raises it
    when the handler returns, ending the call, and a traceback through these frames would
    tie them (and the request) to it in a cycle."""
    refusal = method.admission.refusal_for(context, request_id)
    reason = str(refusal.reason)
    _log_rpc(method, refusal.code, started, request_id, peer, reason, refusal.message)
    metadata = (*refusal.trailing_metadata, (REQUEST_ID_KEY, request_id))
    try:
        await context.abort(refusal.code, refusal.message, metadata)
    except grpc.aio.AbortError as aborted:
        aborted.__traceback__ = None


def _open(
    method: _Method, raw: bytes, context: grpc.aio.ServicerContext
) -> tuple[float, str, str, bool]:
    """What every call starts with: its clock, request id and peer, and whether admission
    let it in (if not, the caller answers it with ``_refuse``)."""
    started = time.perf_counter()
    if len(raw) >= LARGE_REQUEST_BYTES:  # give its memory back once the call is over
        context.add_done_callback(trim_after)
    request_id = request_id_of(context)
    _CURRENT_REQUEST_ID.set(request_id)
    # Read the peer now: after a client cancels a server stream, context.peer() can crash
    # grpcio's aio core (seen with 1.85), and the log line is written exactly then.
    peer = context.peer()
    return started, request_id, peer, method.admission.enter(context)


def _admit(method: _Method, context: grpc.aio.ServicerContext) -> None:
    """Authenticate and authorize the call, and bind its principal for the servicer."""
    gate = method.gate
    if not gate.enabled:
        bind_principal(DEV_PRINCIPAL)
        return
    auth_context = context.auth_context() if gate.client_certificates else {}
    bind_principal(gate.admit(method.rule, context.invocation_metadata() or (), auth_context))


def _unary(method: _Method, impl: UnaryImpl) -> Any:
    async def behavior(
        raw: bytes, context: grpc.aio.ServicerContext
    ) -> pb_message.Message | bytes | None:
        started, request_id, peer, admitted = _open(method, raw, context)
        if not admitted:
            await _refuse(method, context, started, request_id, peer)
            return None
        try:
            _admit(method, context)
            response = await impl(method.parse(raw), context)
            context.set_trailing_metadata(((REQUEST_ID_KEY, request_id),))
        except BaseException as error:
            if await _fail(method, context, started, request_id, peer, error):
                raise
            return None  # the status is sent; grpc ends the call (see _fail)
        _log_rpc(method, _OK, started, request_id, peer)
        return response

    return grpc.unary_unary_rpc_method_handler(
        behavior, request_deserializer=None, response_serializer=_serialize
    )


def _server_stream(method: _Method, impl: StreamImpl) -> Any:
    async def behavior(
        raw: bytes, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb_message.Message]:
        started, request_id, peer, admitted = _open(method, raw, context)
        if not admitted:
            await _refuse(method, context, started, request_id, peer)
            return
        try:
            _admit(method, context)
            async for item in impl(method.parse(raw), context):
                yield item
            context.set_trailing_metadata(((REQUEST_ID_KEY, request_id),))
        except BaseException as error:
            if await _fail(method, context, started, request_id, peer, error):
                raise
            return  # the status is sent; grpc ends the call (see _fail)
        _log_rpc(method, _OK, started, request_id, peer)

    return grpc.unary_stream_rpc_method_handler(
        behavior, request_deserializer=None, response_serializer=_serialize
    )


def _method_handler(
    service: ServiceDescriptor,
    method: MethodDescriptor,
    servicer: object,
    gate: Gate,
    admission: Admission,
    metrics: Metrics | None,
) -> Any:
    rule = access_rule(method)  # a method without a rule never serves (TypeError at start)
    impl = getattr(servicer, method.name, None)
    if impl is None:
        raise TypeError(f"{type(servicer).__name__} does not implement {method.full_name}")
    request_type = message_factory.GetMessageClass(method.input_type)
    # Looked up on the class: a servicer that answers any attribute (a test double's
    # ``__getattr__``) has named no parser.
    parsers = getattr(type(servicer), "REQUEST_PARSERS", None)
    own = parsers.get(method.name) if isinstance(parsers, Mapping) else None
    parse: Callable[[bytes], object] = own or partial(parse_request, request_type)
    meter = None if metrics is None else metrics.meter(service.full_name, method.name)
    called = _Method(f"/{service.full_name}/{method.name}", meter, parse, gate, rule, admission)
    if method.client_streaming:
        raise TypeError(f"{method.full_name}: client streaming is not supported by the runtime")
    if method.server_streaming:
        return _server_stream(called, impl)
    return _unary(called, impl)


class ServiceHandler(grpc.GenericRpcHandler):  # type: ignore[misc]
    """All of one service's methods, each wrapped as described in the module docstring."""

    def __init__(
        self,
        service: ServiceDescriptor,
        servicer: object,
        gate: Gate = DEV_GATE,
        admission: Admission | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``admission``: the service's bound on calls at once (default: the default bound);
        ``metrics``: where its calls are counted (None: nowhere)."""
        self.service_name = service.full_name
        self.admission = admission or Admission(service=service.full_name)
        self._handlers = {
            f"/{service.full_name}/{m.name}": _method_handler(
                service, m, servicer, gate, self.admission, metrics
            )
            for m in service.methods
        }
        if metrics is not None:
            admission_ = self.admission
            metrics.watch_in_flight(service.full_name, lambda: admission_.in_flight)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Any:
        return self._handlers.get(handler_call_details.method)

    def method_handlers(self) -> dict[str, Any]:
        """Handlers by bare method name, for ``add_registered_method_handlers`` (the faster,
        pre-registered path: grpc-core matches the method without a Python lookup)."""
        prefix = f"/{self.service_name}/"
        return {path.removeprefix(prefix): handler for path, handler in self._handlers.items()}
