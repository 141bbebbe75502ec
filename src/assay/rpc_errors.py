"""Reading the rich details of a failed call, kept on neutral ground.

The server's runtime writes a ``google.rpc.Status`` (``ErrorInfo`` and
``BadRequest``) into the ``grpc-status-details-bin`` trailer of every error
(``assay.runtime.status``). Reading it back is the client's half: the client
library, the command line and the planner's own calls to the resolver all do
it, so it lives here, beside ``assay.errors``, and needs only grpcio,
grpcio-status and the common protos, never a server-only package.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from assay import errors


@dataclass(frozen=True)
class DecodedError:
    """What a client learns from a failed call: code, reason and the bad fields."""

    code: grpc.StatusCode
    message: str
    reason: str = ""
    domain: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    violations: tuple[errors.FieldViolation, ...] = ()
    retry_delay: float | None = None  # RetryInfo's delay in seconds; None: no RetryInfo


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
    return decode_status(code, proto, message)


def decode_status(
    code: grpc.StatusCode, proto: status_pb2.Status, message: str = ""
) -> DecodedError:
    """The details of a ``google.rpc.Status`` already read (from a call, or from the
    ``grpc-status-details-bin`` trailer an interceptor sees)."""
    reason = domain = ""
    metadata: dict[str, str] = {}
    violations: list[errors.FieldViolation] = []
    retry_delay: float | None = None
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
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            retry_delay = retry.retry_delay.ToTimedelta().total_seconds()
    return DecodedError(
        code=code,
        message=proto.message or message,
        reason=reason,
        domain=domain,
        metadata=metadata,
        violations=tuple(violations),
        retry_delay=retry_delay,
    )


__all__ = ["DecodedError", "decode_rpc_error", "decode_status"]
