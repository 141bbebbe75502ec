"""The planner's only way to fusion: calls to ResolverService, bounded by the caller's deadline.

Python gRPC does not propagate deadlines, so each call gets the time the planner's own
caller has left, minus ``DEADLINE_MARGIN``. ``UNAVAILABLE`` is retried with a short backoff
only while the deadline and ``RETRY_BUDGET_SECONDS`` allow, so a resolver that is down makes
the planner fail fast with RESOLVER_UNAVAILABLE; with no ``wait_for_ready`` and a low
reconnect backoff, a resolver that comes back is used again within about a second. A target
may name several replicas, balanced ``round_robin``; both resolver RPCs are pure reads, so a
retry on the next replica is always safe, and TLS to an address list verifies
``ClientTls.server_name`` on each.

The resolver's errors are translated, not wrapped: bad evidence keeps its reason and field
paths, a deadline is a deadline, a call too expensive or too large in either direction is
REQUEST_TOO_EXPENSIVE on ``evidence``, and only the truly unexpected is RESOLVER_FAILED.
One channel lives as long as the servicer; ``close`` is the ServiceSpec hook.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay import errors
from assay.runtime import tracing
from assay.runtime.status import decode_rpc_error
from assay.runtime.tls import ClientTls
from assay.services.planner.domain.deadline import (
    DEADLINE_MARGIN_SECONDS as DEADLINE_MARGIN_SECONDS,
)
from assay.services.planner.domain.deadline import (
    DEFAULT_CALL_TIMEOUT_SECONDS as DEFAULT_CALL_TIMEOUT_SECONDS,
)
from assay.services.planner.domain.deadline import Deadline as Deadline
from assay.services.planner.wire.field_paths import PathMap, base_paths_only, no_paths, same_paths
from assay.services.planner.wire.scope import summary_of as summary_of
from assay.transport import (
    LOAD_BALANCING_CONFIG,
    METADATA_OPTIONS,
    TokenFile,
    authority_options,
)
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rgrpc

R = TypeVar("R")

# Total time spent retrying UNAVAILABLE, whatever the deadline: "quickly".
RETRY_BUDGET_SECONDS = 1.0
# Sleep before each retry of UNAVAILABLE.
RETRY_BACKOFF_SECONDS = (0.05, 0.1, 0.2, 0.4)
# Reconnect quickly after the resolver comes back (grpc's default backs off to 120 s).
_RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


class ResolverClient:
    """A long-lived channel to the resolver and the calls the planner makes."""

    def __init__(
        self,
        target: str,
        max_message_bytes: int,
        tls: ClientTls | None = None,
        token: TokenFile | None = None,
    ) -> None:
        """``tls``: the channel's TLS (None: plaintext); ``token``: the planner's own bearer
        token for the resolver (never the caller's: the planner calls as itself)."""
        self.target = target
        self._token = token
        self.max_message_bytes = max_message_bytes
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.service_config", json.dumps({"loadBalancingConfig": LOAD_BALANCING_CONFIG})),
            *METADATA_OPTIONS,
            *_RECONNECT_OPTIONS,
            *authority_options(target, tls is not None, tls.server_name if tls else None),
        ]
        # With tracing on, each call is a span of the plan's trace, sent on as `traceparent`.
        traced = tracing.client_interceptors()
        if tls is None:
            self._channel = grpc.aio.insecure_channel(target, options=options, interceptors=traced)
        else:
            self._channel = grpc.aio.secure_channel(
                target, tls.credentials(), options=options, interceptors=traced
            )
        self._stub = rgrpc.ResolverServiceStub(self._channel)
        # The same two resolution calls on bytes (no serializer: the planner sends requests
        # it serialized itself and keeps the base resolution's bytes for its own answer).
        service = rpb.DESCRIPTOR.services_by_name["ResolverService"].full_name
        self._semantic_bytes = self._channel.unary_unary(f"/{service}/ResolveSemantic")
        self._hypotheses_bytes = self._channel.unary_unary(
            f"/{service}/ResolveHypotheses",
            response_deserializer=rpb.ResolveHypothesesResponse.FromString,
        )
        self._hypotheses_raw = self._channel.unary_unary(f"/{service}/ResolveHypotheses")

    async def close(self) -> None:
        await self._channel.close()

    async def serving(self, deadline_seconds: float) -> bool:
        """Whether the resolver's health check says ResolverService is SERVING within
        ``deadline_seconds`` (the gRPC deadline of the check: the planner's own health
        follows it); False when unreachable."""
        check = health_pb2.HealthCheckRequest(
            service=rpb.DESCRIPTOR.services_by_name["ResolverService"].full_name
        )
        try:
            reply = await health_pb2_grpc.HealthStub(self._channel).Check(
                check, timeout=deadline_seconds, wait_for_ready=False
            )
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def resolve_semantic(
        self,
        request: rpb.ResolveSemanticRequest,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> rpb.ResolveSemanticResponse:
        return await self._call(
            "ResolveSemantic", self._stub.ResolveSemantic, request, deadline, metadata, same_paths
        )

    async def resolve_semantic_bytes(
        self,
        request: bytes,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> bytes:
        """``resolve_semantic`` on a serialized request, answering the serialized response."""
        answer: bytes = await self._call(
            "ResolveSemantic", self._semantic_bytes, request, deadline, metadata, same_paths
        )
        return answer

    async def resolve_hypotheses_bytes(
        self,
        request: bytes,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> rpb.ResolveHypothesesResponse:
        """``resolve_hypotheses`` on a serialized request over the caller's own evidence."""
        answer: rpb.ResolveHypothesesResponse = await self._call(
            "ResolveHypotheses",
            self._hypotheses_bytes,
            request,
            deadline,
            metadata,
            base_paths_only,
        )
        return answer

    async def resolve_hypotheses_raw(
        self,
        request: bytes,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]] = (),
    ) -> bytes:
        """``resolve_hypotheses_bytes`` answering the serialized response: the plan that
        takes its base from this call keeps the base's bytes for its own answer."""
        answer: bytes = await self._call(
            "ResolveHypotheses", self._hypotheses_raw, request, deadline, metadata, base_paths_only
        )
        return answer

    async def resolver_policy(
        self, deadline: Deadline, metadata: Sequence[tuple[str, str]] = ()
    ) -> rpb.GetResolverPolicyResponse:
        """The resolver's policy in force: its reliability table is each probe's accuracy."""
        return await self._call(
            "GetResolverPolicy",
            self._stub.GetResolverPolicy,
            rpb.GetResolverPolicyRequest(),
            deadline,
            metadata,
            no_paths,
        )

    async def resolve_hypotheses(
        self,
        request: rpb.ResolveHypothesesRequest,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]] = (),
        paths: PathMap = base_paths_only,
    ) -> rpb.ResolveHypothesesResponse:
        """``paths``: ``no_paths`` when the evidence sent is not the caller's (a scoped copy)."""
        return await self._call(
            "ResolveHypotheses", self._stub.ResolveHypotheses, request, deadline, metadata, paths
        )

    async def _call(
        self,
        method: str,
        rpc: Callable[..., Awaitable[R]],
        request: Any,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]],
        paths: PathMap,
    ) -> R:
        started = time.monotonic()
        attempt = 0
        sent = (*metadata, *(self._token.metadata() if self._token else ()))
        while True:
            timeout = deadline.call_timeout()
            if timeout <= 0:
                raise _deadline_error(method, self.target)
            try:
                return await rpc(request, timeout=timeout, metadata=sent, wait_for_ready=False)
            except grpc.aio.AioRpcError as error:
                # A resolver past its limit of calls at once refused this one unstarted: as
                # safe to retry as UNAVAILABLE, within the same budget.
                if error.code() != grpc.StatusCode.UNAVAILABLE and not _overloaded(error):
                    raise translate(error, method, self.target, paths) from None
                backoff = next_backoff(attempt, started, deadline)
                if backoff is None:
                    raise errors.Unavailable(
                        errors.Reason.RESOLVER_UNAVAILABLE,
                        f"the resolver at {self.target} is unavailable ({error.details()})",
                        metadata={"resolver_target": self.target, "attempts": str(attempt + 1)},
                    ) from None
                await asyncio.sleep(backoff)
                attempt += 1


def _overloaded(error: grpc.aio.AioRpcError) -> bool:
    return (
        error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        and decode_rpc_error(error).reason == errors.Reason.OVERLOADED
    )


def next_backoff(attempt: int, started: float, deadline: Deadline) -> float | None:
    """How long to wait before retrying, or None when no retry fits the budget or deadline."""
    if attempt >= len(RETRY_BACKOFF_SECONDS):
        return None
    backoff = RETRY_BACKOFF_SECONDS[attempt]
    if time.monotonic() - started + backoff > RETRY_BUDGET_SECONDS:
        return None
    left = deadline.remaining()
    if left is not None and left - DEADLINE_MARGIN_SECONDS <= backoff:
        return None
    return backoff


def _deadline_error(method: str, target: str) -> errors.DeadlineExceeded:
    return errors.DeadlineExceeded(
        errors.Reason.RESOLVER_DEADLINE_EXCEEDED,
        f"the resolver at {target} did not answer {method} within the caller's deadline",
        metadata={"resolver_target": target},
    )


def _reason(name: str, fallback: errors.Reason) -> errors.Reason:
    try:
        return errors.Reason(name)
    except ValueError:
        return fallback


# The resolver's reasons for a call that would cost more than its caps allow.
_TOO_EXPENSIVE = frozenset({errors.Reason.REQUEST_TOO_EXPENSIVE, errors.Reason.RESPONSE_TOO_LARGE})


def too_expensive(method: str, detail: str) -> errors.InvalidArgument:
    """The caller's evidence is too large to plan over: ``method`` would exceed a cap."""
    why = f"planning over this evidence needs a resolver {method} call beyond its caps: {detail}"
    return errors.InvalidArgument(
        errors.Reason.REQUEST_TOO_EXPENSIVE,
        f"evidence: {why}",
        [errors.FieldViolation("evidence", why)],
    )


def translate(
    error: grpc.aio.AioRpcError, method: str, target: str, paths: PathMap
) -> errors.AssayError:
    """The planner's error for a failed resolver call (module docstring)."""
    code = error.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return _deadline_error(method, target)
    decoded = decode_rpc_error(error)
    if decoded.reason in _TOO_EXPENSIVE:
        return too_expensive(method, decoded.message)
    if (
        code == grpc.StatusCode.RESOURCE_EXHAUSTED
        and not decoded.reason
        and "larger than max" in decoded.message
    ):  # grpc's own message-size limit, on the request or the response
        return too_expensive(method, decoded.message)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        mapped = [(paths(v.field), v) for v in decoded.violations]
        if mapped and all(p is not None for p, _ in mapped):
            violations = [
                errors.FieldViolation(p, v.description) for p, v in mapped if p is not None
            ]
            # The resolver's metadata (e.g. `known_sources`) reaches the planner's caller too.
            metadata = {k: v for k, v in decoded.metadata.items() if k != "request_id"}
            return errors.InvalidArgument(
                _reason(decoded.reason, errors.Reason.INVALID_FIELD),
                decoded.message,
                violations,
                metadata,
            )
        if decoded.reason == errors.Reason.UNKNOWN_SOURCE:
            # The planner's own hypothetical claim: the table lacks a probe's source kind.
            return errors.FailedPrecondition(
                errors.Reason.RESOLVER_POLICY_MISMATCH,
                "the resolver's reliability table lacks a source kind a probe expects: "
                + decoded.message,
                metadata={"resolver_target": target},
            )
    return errors.AssayError(
        errors.Reason.RESOLVER_FAILED,
        f"the resolver failed {method}: {code.name} {decoded.message}",
        metadata={"resolver_target": target, "resolver_code": code.name},
    )
