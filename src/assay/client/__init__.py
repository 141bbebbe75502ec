"""Calling Assay from Python: typed sync and async clients for the three services and approvals.

    from assay.client import ResolverClient
    from assay.client.evidence import load_json_file

    with ResolverClient("127.0.0.1:50051") as resolver:
        evidence = load_json_file("examples/evidence/safety-conflict.json")
        resolution = resolver.resolve(evidence, "api:payments.create", "idempotency.mode")

Every call has a timeout (the client's default, overridable per call), retries UNAVAILABLE
only where a retry is safe, and raises an ``AssayCallError`` subclass carrying the status
code, the ``ErrorReason`` and the bad fields. Against a server with authentication on, pass
``credentials=Credentials(...)`` (a CA to trust, a bearer token or token file, a client
certificate), e.g. ``Credentials.from_folder("creds", "alice")`` for ``creds/ca.pem`` and
``creds/tokens/alice.jwt``.
"""

from __future__ import annotations

from assay.client.adjudication import AdjudicationClient
from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.approvals import ApprovalClient, AsyncApprovalClient
from assay.client.builders import LegacyBundleWarning, from_value, to_value
from assay.client.channel import DEFAULT_TIMEOUT_SECONDS
from assay.client.credentials import Credentials
from assay.client.errors import (
    AlreadyExistsError,
    AssayCallError,
    DataLossError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
)
from assay.client.planner import AsyncPlannerClient, PlannerClient
from assay.client.resolver import AsyncResolverClient, ResolverClient

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "AdjudicationClient",
    "AlreadyExistsError",
    "ApprovalClient",
    "AssayCallError",
    "AsyncAdjudicationClient",
    "AsyncApprovalClient",
    "AsyncPlannerClient",
    "AsyncResolverClient",
    "Credentials",
    "DataLossError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "LegacyBundleWarning",
    "NotFoundError",
    "PermissionDeniedError",
    "PlannerClient",
    "ResolverClient",
    "UnauthenticatedError",
    "UnavailableError",
    "from_value",
    "to_value",
]
