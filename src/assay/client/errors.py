"""One exception type for every failed Assay call, with a subclass per status-code family.

``from_rpc_error`` turns a ``grpc.RpcError`` into the matching subclass,
carrying the status code, the ``ErrorInfo`` reason (an ``ErrorReason`` name),
the request id and the ``BadRequest`` field violations, so callers write
``except NotFoundError`` or switch on ``error.reason`` instead of parsing
status details themselves.
"""

from __future__ import annotations

import grpc

from assay.errors import FieldViolation
from assay.rpc_errors import decode_rpc_error


class AssayCallError(Exception):
    """A failed call to an Assay service."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: str = "",
        violations: tuple[FieldViolation, ...] = (),
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code.name}: {message}" + (f" ({reason})" if reason else ""))
        self.code = code
        self.message = message
        self.reason = reason
        self.violations = violations
        self.metadata = metadata or {}

    @property
    def request_id(self) -> str:
        """The server's request id for this call (find the server's log line with it)."""
        return self.metadata.get("request_id", "")

    def field_paths(self) -> list[str]:
        """The request fields the server named as bad, in its order."""
        return [v.field for v in self.violations]


class InvalidArgumentError(AssayCallError):
    """INVALID_ARGUMENT: the request is malformed; see ``violations``."""


class NotFoundError(AssayCallError):
    """NOT_FOUND: a named entity does not exist."""


class AlreadyExistsError(AssayCallError):
    """ALREADY_EXISTS: the entity exists already."""


class FailedPreconditionError(AssayCallError):
    """FAILED_PRECONDITION: a domain rule forbids the request now; see ``reason``."""


class UnauthenticatedError(AssayCallError):
    """UNAUTHENTICATED: no credential, or one the server does not accept (bad signature,
    unknown key, wrong issuer or audience, expired); ``reason`` says which."""


class PermissionDeniedError(AssayCallError):
    """PERMISSION_DENIED: the caller is known but may not do this: a role it lacks
    (``ERROR_REASON_ROLE_REQUIRED``), acting in another's name
    (``ERROR_REASON_IDENTITY_MISMATCH``), or a tenant it is not granted."""


class UnavailableError(AssayCallError):
    """UNAVAILABLE: the service (or one it depends on) cannot be reached; retry later."""


class DeadlineExceededError(AssayCallError):
    """DEADLINE_EXCEEDED: the call did not finish within its timeout."""


class DataLossError(AssayCallError):
    """DATA_LOSS: stored data failed an integrity check."""


class InternalError(AssayCallError):
    """INTERNAL or UNKNOWN: the server failed; ``request_id`` finds the traceback in its log."""


_BY_CODE: dict[grpc.StatusCode, type[AssayCallError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.ABORTED: FailedPreconditionError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.DATA_LOSS: DataLossError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNKNOWN: InternalError,
}


def from_rpc_error(error: grpc.RpcError) -> AssayCallError:
    """The typed exception for a failed call (``AssayCallError`` itself for other codes)."""
    decoded = decode_rpc_error(error)
    cls = _BY_CODE.get(decoded.code, AssayCallError)
    return cls(
        decoded.code, decoded.message, decoded.reason, decoded.violations, dict(decoded.metadata)
    )
