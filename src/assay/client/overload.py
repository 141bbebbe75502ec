"""Retrying calls a server refused with a retry delay: overloaded, or its database unavailable.

Two refusals say "repeat this later" with a ``google.rpc.RetryInfo`` delay; these
interceptors, sync and asyncio, repeat a unary call after it (``refusal_delay``), only for
retry-safe methods (the channel retry policy's set: reads, and mutations carrying the
``request_id`` the clients always fill in), never past the call's own timeout: when the next
delay would not fit, the caller gets the refusal itself at once.

- ``RESOURCE_EXHAUSTED`` / ``ERROR_REASON_OVERLOADED`` (past ``--max-concurrent-rpcs``, not
  started): the channel's retry policy cannot retry exactly that; it would retry every
  ``RESOURCE_EXHAUSTED``, including a message over the size limit, which fails the same way.
- ``UNAVAILABLE`` / ``ERROR_REASON_STORAGE_UNAVAILABLE`` (database restarting, unreachable):
  the channel's policy repeats it a few times after the server's ``grpc-retry-pushback-ms``,
  spanning less than a database restart; this takes over once it gives up. Any other
  ``UNAVAILABLE`` (a server shutting down, a lost connection) is left to that policy alone.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

import grpc
from google.rpc import status_pb2

from assay.rpc_errors import decode_status

OVERLOAD_ATTEMPTS = 4
STORAGE_ATTEMPTS = 6
OVERLOADED = "ERROR_REASON_OVERLOADED"
STORAGE_UNAVAILABLE = "ERROR_REASON_STORAGE_UNAVAILABLE"
MAX_DELAY_SECONDS = 4.0
_DETAILS_KEY = "grpc-status-details-bin"
# When an overload refusal named no delay (the servers always do): wait this long.
_FALLBACK_DELAY_SECONDS = 0.1
# The refusals retried here: (code, reason) -> attempts in all, and whether the client
# doubles the server's delay per attempt (the server does not know of the attempts).
_RETRIED: dict[tuple[grpc.StatusCode, str], tuple[int, bool]] = {
    (grpc.StatusCode.RESOURCE_EXHAUSTED, OVERLOADED): (OVERLOAD_ATTEMPTS, False),
    (grpc.StatusCode.UNAVAILABLE, STORAGE_UNAVAILABLE): (STORAGE_ATTEMPTS, True),
}
_RETRIED_CODES = frozenset(code for code, _ in _RETRIED)


def _reason_and_delay(
    code: grpc.StatusCode, trailers: Iterable[tuple[str, Any]]
) -> tuple[str, float | None]:
    """The status details' ErrorInfo reason and RetryInfo delay (None: no RetryInfo)."""
    raw = next((value for key, value in trailers if key == _DETAILS_KEY), None)
    if not isinstance(raw, bytes):
        return "", None
    decoded = decode_status(code, status_pb2.Status.FromString(raw))
    return decoded.reason, decoded.retry_delay


def refusal_delay(
    code: grpc.StatusCode | None,
    trailers: Iterable[tuple[str, Any]],
    attempt: int,
    rand: random.Random | None = None,
) -> tuple[float, int] | None:
    """For a refusal retried here (module docstring), after attempt number ``attempt`` (1 for
    the first call): the seconds to wait and the attempts allowed in all; else None.

    OVERLOADED waits the server's delay, which already grows with the attempts it is told
    of, at most ``OVERLOAD_ATTEMPTS`` attempts in all. STORAGE_UNAVAILABLE waits the
    RetryInfo delay doubled per attempt (capped at ``MAX_DELAY_SECONDS``, jittered), at most
    ``STORAGE_ATTEMPTS`` attempts. A STORAGE_UNAVAILABLE without RetryInfo (a write without
    a request id whose commit outcome is unknown) is never repeated."""
    if code not in _RETRIED_CODES:
        return None
    reason, delay = _reason_and_delay(code, trailers)
    rule = _RETRIED.get((code, reason))
    if rule is None:
        return None
    attempts, backoff = rule
    if delay is None:
        if code == grpc.StatusCode.UNAVAILABLE:
            return None  # no RetryInfo: the server says repeating it is not safe
        delay = _FALLBACK_DELAY_SECONDS
    if backoff:
        ceiling = min(MAX_DELAY_SECONDS, delay * (1 << min(attempt - 1, 16)))
        draw = rand.random() if rand is not None else random.random()
        delay = max(delay, ceiling * (0.5 + 0.5 * draw))
    return delay, attempts


class _Budget:
    """Attempts made and the call's own deadline, for one call."""

    def __init__(self, timeout: float | None) -> None:
        self.attempts = 1
        self.expires = None if timeout is None else time.monotonic() + timeout

    def next_delay(
        self, code: grpc.StatusCode | None, trailers: Iterable[tuple[str, Any]]
    ) -> float | None:
        """The wait before one more attempt, if the status is a refusal retried here and one
        more fits (then it is counted); else None: the caller gets this outcome."""
        found = refusal_delay(code, trailers, self.attempts)
        if found is None:
            return None
        delay, allowed = found
        if self.attempts >= allowed:
            return None
        if self.expires is not None and time.monotonic() + delay >= self.expires:
            return None
        self.attempts += 1
        return delay

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
            delay = budget.next_delay(outcome.code(), outcome.trailing_metadata() or ())
            if delay is None:
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
            delay = budget.next_delay(code, await call.trailing_metadata() or ())
            if delay is None:
                return call
            await asyncio.sleep(delay)
            details = budget.details(client_call_details)


def _method_name(method: str | bytes) -> str:
    return method.decode() if isinstance(method, bytes) else method
