"""Retrying calls a server refused because it was running its limit of calls at once.

A server past ``--max-concurrent-rpcs`` refuses a call before starting it with
``RESOURCE_EXHAUSTED``, reason ``ERROR_REASON_OVERLOADED`` and a ``RetryInfo`` delay. The
channel's gRPC retry policy cannot retry exactly that: it would retry every
``RESOURCE_EXHAUSTED``, including a message larger than the limit, which fails again the same
way (2.4 s of backoff for a definite answer). So these interceptors, sync and asyncio, retry
a unary call only when the status says OVERLOADED, only for retry-safe methods (the same set
the retry policy names), after the server's delay, at most ``OVERLOAD_ATTEMPTS`` times in
all, and never past the call's own timeout: when the delay would not fit, the caller gets the
refusal itself (RESOURCE_EXHAUSTED, reason ERROR_REASON_OVERLOADED) at once.
``UNAVAILABLE`` (a server shutting down) is left to the retry policy, which honours the same
delay through the ``grpc-retry-pushback-ms`` trailer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

OVERLOAD_ATTEMPTS = 4
OVERLOADED = "ERROR_REASON_OVERLOADED"
_DETAILS_KEY = "grpc-status-details-bin"
# When the server named no delay (it always does): wait this long.
_FALLBACK_DELAY_SECONDS = 0.1


def overload_delay(
    code: grpc.StatusCode | None, trailers: Iterable[tuple[str, Any]]
) -> float | None:
    """The server's retry delay when the status is an OVERLOADED refusal, else None."""
    if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    raw = next((value for key, value in trailers if key == _DETAILS_KEY), None)
    if not isinstance(raw, bytes):
        return None
    status = status_pb2.Status.FromString(raw)
    overloaded, delay = False, _FALLBACK_DELAY_SECONDS
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            overloaded = info.reason == OVERLOADED
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            delay = retry.retry_delay.ToTimedelta().total_seconds()
    return delay if overloaded else None


class _Budget:
    """Attempts left and the call's own deadline, for one call."""

    def __init__(self, timeout: float | None) -> None:
        self.attempts = 1
        self.expires = None if timeout is None else time.monotonic() + timeout

    def allows(self, delay: float) -> bool:
        """Whether one more attempt after ``delay`` fits; counts it when it does."""
        if self.attempts >= OVERLOAD_ATTEMPTS:
            return False
        if self.expires is not None and time.monotonic() + delay >= self.expires:
            return False
        self.attempts += 1
        return True

    def details(self, details: Any) -> Any:
        """``details`` with the timeout left (grpc's call details are named tuples)."""
        if self.expires is None:
            return details
        return details._replace(timeout=max(0.0, self.expires - time.monotonic()))


class OverloadRetry(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The blocking channel's interceptor (module docstring)."""

    def __init__(self, methods: Iterable[str]) -> None:
        self._methods = frozenset(methods)

    def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], client_call_details: Any, request: Any
    ) -> Any:
        if client_call_details.method not in self._methods:
            return continuation(client_call_details, request)
        budget = _Budget(client_call_details.timeout)
        details = client_call_details
        while True:
            outcome = continuation(details, request)
            delay = overload_delay(outcome.code(), outcome.trailing_metadata() or ())
            if delay is None or not budget.allows(delay):
                return outcome
            time.sleep(delay)
            details = budget.details(client_call_details)


class AioOverloadRetry(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The asyncio channel's interceptor (module docstring)."""

    def __init__(self, methods: Iterable[str]) -> None:
        self._methods = frozenset(methods)

    async def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], client_call_details: Any, request: Any
    ) -> Any:
        if _method_name(client_call_details.method) not in self._methods:
            return await continuation(client_call_details, request)
        budget = _Budget(client_call_details.timeout)
        details = client_call_details
        while True:
            call = await continuation(details, request)
            code = await call.code()
            delay = overload_delay(code, await call.trailing_metadata() or ())
            if delay is None or not budget.allows(delay):
                return call
            await asyncio.sleep(delay)
            details = budget.details(client_call_details)


def _method_name(method: str | bytes) -> str:
    return method.decode() if isinstance(method, bytes) else method
