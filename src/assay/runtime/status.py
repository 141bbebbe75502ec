"""The one table from error type to gRPC status, and its inverse for clients.

Server side: ``to_status`` looks an exception's class up along its MRO and
builds a ``google.rpc.Status`` carrying ``ErrorInfo`` (reason, domain,
metadata) and, when there are field violations, ``BadRequest``. Client side:
``decode_rpc_error`` reads those details back out of an ``RpcError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from assay import errors

STATUS_BY_ERROR: dict[type[errors.AssayError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.DataLoss: grpc.StatusCode.DATA_LOSS,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
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


def _packed(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def to_status(error: errors.AssayError, request_id: str = "") -> grpc.Status:
    """The rich ``grpc.Status`` for a domain error, ready for ``context.abort_with_status``."""
    code = status_code_for(error)
    metadata = dict(error.metadata)
    if request_id:
        metadata["request_id"] = request_id
    info = error_details_pb2.ErrorInfo(
        reason=str(error.reason), domain=errors.ERROR_DOMAIN, metadata=metadata
    )
    details = [_packed(info)]
    if error.violations:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in error.violations
            ]
        )
        details.append(_packed(bad))
    proto = status_pb2.Status(code=code.value[0], message=error.message, details=details)
    return rpc_status.to_status(proto)


def internal_status(request_id: str) -> grpc.Status:
    """The generic status for an unexpected failure: no internals, just where to look."""
    return to_status(
        errors.AssayError(
            errors.Reason.INTERNAL,
            f"internal error; see the server log for request_id {request_id}",
        ),
        request_id,
    )


@dataclass(frozen=True)
class DecodedError:
    """What a client learns from a failed call: code, reason and the bad fields."""

    code: grpc.StatusCode
    message: str
    reason: str = ""
    domain: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    violations: tuple[errors.FieldViolation, ...] = ()


def decode_rpc_error(error: grpc.RpcError) -> DecodedError:
    """Read the rich status details (if any) out of a failed call."""
    code: grpc.StatusCode = error.code()
    message: str = error.details() or ""
    try:
        proto = rpc_status.from_call(error)
    except ValueError:
        proto = None
    if proto is None:
        return DecodedError(code=code, message=message)
    reason = domain = ""
    metadata: dict[str, str] = {}
    violations: list[errors.FieldViolation] = []
    for detail in proto.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason, domain, metadata = info.reason, info.domain, dict(info.metadata)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations.extend(
                errors.FieldViolation(v.field, v.description) for v in bad.field_violations
            )
    return DecodedError(
        code=code,
        message=proto.message or message,
        reason=reason,
        domain=domain,
        metadata=metadata,
        violations=tuple(violations),
    )


__all__ = [
    "STATUS_BY_ERROR",
    "DecodedError",
    "decode_rpc_error",
    "internal_status",
    "status_code_for",
    "to_status",
]
