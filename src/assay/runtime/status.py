"""The one table from error type to gRPC status, and its inverse for clients.

Server side: ``to_status`` looks an exception's class up along its MRO and builds a
``google.rpc.Status`` carrying ``ErrorInfo`` (reason, domain, metadata) and, when there are
field violations, ``BadRequest``. Client side: ``decode_rpc_error`` reads those details back
out of an ``RpcError`` (it lives in ``assay.rpc_errors``, which the client library shares;
re-exported here).

Every status is bounded here, once for every service (``bounded_status_proto``), because the
details travel in a trailer (``grpc-status-details-bin``, next to the percent-encoded
``grpc-message``) and gRPC clients refuse trailers past their metadata limit (16 KiB by
default, and at random from about 8 KiB): an error too large to deliver reaches the caller
as ``RESOURCE_EXHAUSTED`` with nothing in it.
"""

from __future__ import annotations

from itertools import islice

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from google.rpc.error_details_pb2 import BadRequest
from grpc_status import rpc_status

from assay import errors
from assay.rpc_errors import DecodedError, decode_rpc_error

# gRPC's retry pushback trailer (honoured by grpc-core's retry policy), in milliseconds.
PUSHBACK_KEY = "grpc-retry-pushback-ms"

STATUS_BY_ERROR: dict[type[errors.AssayError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.DataLoss: grpc.StatusCode.DATA_LOSS,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
}


def status_code_for(error: errors.AssayError) -> grpc.StatusCode:
    """The status code of the nearest class in the error's hierarchy that the table names."""
    for cls in type(error).__mro__:
        code = STATUS_BY_ERROR.get(cls)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


# The bounds of one status (``bounded_status_proto``). Sizes are UTF-8 bytes.
MAX_VIOLATIONS = 50
MAX_FIELD_BYTES = 256
MAX_DESCRIPTION_BYTES = 256
MAX_MESSAGE_BYTES = 512
MAX_METADATA_ENTRIES = 16
MAX_METADATA_KEY_BYTES = 64
MAX_METADATA_VALUE_BYTES = 1024
# Metadata values when the full ones leave no room for a violation.
SHORT_METADATA_VALUE_BYTES = 64
# Serialized details plus grpc-message as sent; the rest of an 8 KiB trailer is left for
# grpc-status, x-request-id and HPACK's 32 bytes per entry.
TRAILER_BUDGET_BYTES = 7168
# Room kept for at least one violation and the "more" entry before metadata is shortened.
_VIOLATION_ROOM = 2 * (MAX_FIELD_BYTES + MAX_DESCRIPTION_BYTES + 16)
_ELLIPSIS = "…"
_ELLIPSIS_BYTES = len(_ELLIPSIS.encode())
# Bytes grpc sends as-is in grpc-message; every other byte becomes three ("%XX").
_UNESCAPED = frozenset(range(0x20, 0x7F)) - {ord("%")}


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes, cut on a character boundary and marked."""
    if len(text) * 4 <= limit:  # no character takes more than four bytes
        return text
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - _ELLIPSIS_BYTES].decode("utf-8", "ignore") + _ELLIPSIS


def message_wire_bytes(message: str) -> int:
    """The size of ``message`` as the grpc-message header carries it (percent-encoded)."""
    raw = message.encode()
    return len(raw) + 2 * sum(1 for byte in raw if byte not in _UNESCAPED)


def _packed(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def _metadata(error: errors.AssayError, request_id: str, value_limit: int | None) -> dict[str, str]:
    """The error's metadata, bounded, with the request id; ``value_limit`` None drops all
    but the request id, which is never shortened below the usual limit (it finds the log)."""
    out: dict[str, str] = {}
    if value_limit is not None:
        for key, value in islice(error.metadata.items(), MAX_METADATA_ENTRIES):
            out[clip(str(key), MAX_METADATA_KEY_BYTES)] = clip(str(value), value_limit)
    if request_id:
        out["request_id"] = clip(request_id, MAX_METADATA_VALUE_BYTES)
    return out


def _more(error: errors.AssayError, shown: int, field: str) -> BadRequest.FieldViolation:
    """The last entry of a cut list: how many violations are not shown, from ``field`` on."""
    omitted = len(error.violations) + error.more_violations - shown
    at_least = "" if error.violations_complete else "at least "
    return BadRequest.FieldViolation(
        field=field, description=f"{at_least}{omitted} more violations not shown"
    )


def _violations(error: errors.AssayError, keep: int) -> list[BadRequest.FieldViolation]:
    """The first ``keep`` violations, bounded, and a "more" entry when any are left out."""
    listed = error.violations
    out = [
        BadRequest.FieldViolation(
            field=clip(v.field, MAX_FIELD_BYTES),
            description=clip(v.description, MAX_DESCRIPTION_BYTES),
        )
        for v in listed[:keep]
    ]
    if keep < len(listed) + error.more_violations:
        first_omitted = clip(listed[keep].field, MAX_FIELD_BYTES) if keep < len(listed) else ""
        out.append(_more(error, keep, first_omitted))
    return out


def _proto(
    code: grpc.StatusCode,
    error: errors.AssayError,
    message: str,
    metadata: dict[str, str],
    violations: list[BadRequest.FieldViolation],
) -> status_pb2.Status:
    info = error_details_pb2.ErrorInfo(
        reason=str(error.reason), domain=errors.ERROR_DOMAIN, metadata=metadata
    )
    details = [_packed(info)]
    if error.retry_delay is not None:
        wait = duration_pb2.Duration()
        wait.FromNanoseconds(int(error.retry_delay * 1e9))
        details.append(_packed(error_details_pb2.RetryInfo(retry_delay=wait)))
    if violations:
        details.append(_packed(error_details_pb2.BadRequest(field_violations=violations)))
    return status_pb2.Status(code=code.value[0], message=message, details=details)


def bounded_status_proto(error: errors.AssayError, request_id: str = "") -> status_pb2.Status:
    """The ``google.rpc.Status`` of ``error``, small enough to deliver (module docstring).

    At most ``MAX_VIOLATIONS`` field violations, the last one then saying how many more
    there were; every field path, description, message and metadata value cut (on a
    character boundary, marked with ``…``); and ``TRAILER_BUDGET_BYTES`` bounding the
    serialized details plus the message as sent, shedding violations from the end (and,
    only if that is not enough, shortening the metadata) until it fits."""
    code = status_code_for(error)
    message = clip(error.message, MAX_MESSAGE_BYTES)
    # The details carry the message once more; the header carries it percent-encoded.
    room = TRAILER_BUDGET_BYTES - message_wire_bytes(message)
    listed = len(error.violations)
    total = listed + error.more_violations
    keep = min(listed, total if total <= MAX_VIOLATIONS else MAX_VIOLATIONS - 1)
    metadata = _metadata(error, request_id, MAX_METADATA_VALUE_BYTES)
    # Metadata that leaves no room for a violation is shortened first, then dropped (the
    # request id stays): the field paths are what a caller acts on.
    reserve = _VIOLATION_ROOM if listed else 0
    for shorter in (SHORT_METADATA_VALUE_BYTES, None):
        if _proto(code, error, message, metadata, []).ByteSize() + reserve <= room:
            break
        metadata = _metadata(error, request_id, shorter)
    proto = _proto(code, error, message, metadata, _violations(error, keep))
    while proto.ByteSize() > room and keep > 1:
        # Shed from the end, in proportion to the excess, then settle one at a time.
        per = max(1, proto.ByteSize() // max(1, keep + 1))
        keep = max(1, min(keep - 1, keep - (proto.ByteSize() - room) // per))
        proto = _proto(code, error, message, metadata, _violations(error, keep))
    return proto


def to_status(error: errors.AssayError, request_id: str = "") -> grpc.Status:
    """The rich ``grpc.Status`` for a domain error, ready for ``context.abort_with_status``.
    An error with a ``retry_delay`` also sends it as gRPC's ``grpc-retry-pushback-ms``
    trailer, which grpc-core's retry policy waits for instead of its own backoff."""
    status = rpc_status.to_status(bounded_status_proto(error, request_id))
    if error.retry_delay is None:
        return status
    pushback = (PUSHBACK_KEY, str(max(1, round(error.retry_delay * 1000))))
    # grpc_status builds a named tuple: the same status, one trailer more.
    extended: grpc.Status = status._replace(trailing_metadata=(*status.trailing_metadata, pushback))
    return extended


def internal_status(request_id: str) -> grpc.Status:
    """The generic status for an unexpected failure: no internals, just where to look."""
    return to_status(
        errors.AssayError(
            errors.Reason.INTERNAL,
            f"internal error; see the server log for request_id {request_id}",
        ),
        request_id,
    )


__all__ = [
    "MAX_VIOLATIONS",
    "STATUS_BY_ERROR",
    "TRAILER_BUDGET_BYTES",
    "DecodedError",
    "bounded_status_proto",
    "clip",
    "decode_rpc_error",
    "internal_status",
    "status_code_for",
    "to_status",
]
