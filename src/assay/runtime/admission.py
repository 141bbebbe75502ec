"""Admission control: how many calls one service runs at once, and refusing calls while it drains.

Every call of a service's own RPCs passes ``Admission.enter`` first. Past ``limit`` calls in
flight (``RESOURCE_EXHAUSTED``, ``ERROR_REASON_OVERLOADED``), or once the server drains for
shutdown (``UNAVAILABLE``, ``ERROR_REASON_SHUTTING_DOWN``), the call is refused at once,
before its request is parsed. Both carry a ``google.rpc.RetryInfo`` delay, also sent as
gRPC's ``grpc-retry-pushback-ms`` trailer, which grpc-core's retry policy obeys instead of
its backoff; it doubles with the client's reported attempts (``grpc-previous-rpc-attempts``)
and is jittered, so a refused burst comes back spread out. A refused call did no work, so
repeating it is always safe.

Why not grpc's ``maximum_concurrent_rpcs``: it counts health and reflection calls too (a
saturated server would fail its health checks) and refuses with a bare status, no retry
delay and no log line. Here each refusal is one ordinary RPC log line (code and reason), and
the counts go into the shutdown line. ``drain``, ``idle`` and ``abandon`` are shutdown's steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from assay import errors
from assay.runtime.config import DEFAULT_MAX_CONCURRENT_RPCS

# gRPC's retry pushback (honoured by grpc-core's retry policy) and the attempt count it sends.
PUSHBACK_KEY = "grpc-retry-pushback-ms"
PREVIOUS_ATTEMPTS_KEY = "grpc-previous-rpc-attempts"
# The first retry delay after a refusal, doubled per attempt the client reports, capped.
OVERLOADED_RETRY_SECONDS = 0.1
SHUTTING_DOWN_RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 5.0

Metadata = tuple[tuple[str, str | bytes], ...]


@dataclass(frozen=True)
class Refusal:
    """A call turned away: its status (details in ``trailing_metadata``), and what to log."""

    code: grpc.StatusCode
    reason: errors.Reason
    message: str
    trailing_metadata: Metadata


def retry_delay(base: float, previous_attempts: int, rand: random.Random | None = None) -> float:
    """``base`` doubled per previous attempt, capped, then jittered to between 50% and 100%."""
    ceiling = min(MAX_RETRY_SECONDS, base * (1 << min(previous_attempts, 16)))
    draw = rand.random() if rand is not None else random.random()
    return ceiling * (0.5 + 0.5 * draw)


def _previous_attempts(context: grpc.aio.ServicerContext) -> int:
    for key, value in context.invocation_metadata() or ():
        if key == PREVIOUS_ATTEMPTS_KEY and isinstance(value, str) and value.isdigit():
            return int(value)
    return 0


def _packed(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def refusal(
    code: grpc.StatusCode,
    reason: errors.Reason,
    message: str,
    delay: float,
    metadata: dict[str, str],
) -> Refusal:
    """The status of a refused call: ErrorInfo and RetryInfo details, and the pushback trailer."""
    info = error_details_pb2.ErrorInfo(
        reason=str(reason), domain=errors.ERROR_DOMAIN, metadata=metadata
    )
    wait = duration_pb2.Duration()
    wait.FromNanoseconds(int(delay * 1e9))
    retry = error_details_pb2.RetryInfo(retry_delay=wait)
    proto = status_pb2.Status(
        code=code.value[0], message=message, details=[_packed(info), _packed(retry)]
    )
    status = rpc_status.to_status(proto)
    pushback = (PUSHBACK_KEY, str(max(1, round(delay * 1000))))
    return Refusal(code, reason, message, (*status.trailing_metadata, pushback))


class Admission:
    """The calls one service is running, bounded by ``limit``; see the module docstring."""

    def __init__(self, limit: int = DEFAULT_MAX_CONCURRENT_RPCS, service: str = "") -> None:
        if limit <= 0:
            raise ValueError("the limit on concurrent calls must be positive")
        self.limit = limit
        self.service = service
        self.refused_overloaded = 0
        self.refused_shutting_down = 0
        self._draining = False
        # Each admitted call's context, and the task running it (to cancel it past the grace).
        self._calls: dict[grpc.aio.ServicerContext, asyncio.Task[object] | None] = {}
        self._idle: asyncio.Event | None = None
        self._last_turned_away = 0.0  # time.monotonic() of the last refusal while draining

    @property
    def in_flight(self) -> int:
        return len(self._calls)

    @property
    def draining(self) -> bool:
        return self._draining

    def enter(self, context: grpc.aio.ServicerContext) -> bool:
        """Admit the call (True), or not (False: answer it with ``refusal_for``)."""
        calls = self._calls
        if self._draining or len(calls) >= self.limit:
            return False
        calls[context] = asyncio.current_task()
        # grpc runs done callbacks when the call is over whichever way it ends (status sent,
        # cancelled, failed), so a slot is never leaked by a path the handler did not expect.
        context.add_done_callback(self._leave)
        return True

    def _leave(self, context: grpc.aio.ServicerContext) -> None:
        self._calls.pop(context, None)
        if not self._calls and self._idle is not None:
            self._idle.set()

    def refusal_for(self, context: grpc.aio.ServicerContext, request_id: str) -> Refusal:
        """Why the call just refused by ``enter`` was refused, as its status."""
        attempts = _previous_attempts(context)
        if self._draining:
            self.refused_shutting_down += 1
            self._last_turned_away = time.monotonic()
            return self._shutting_down(request_id, attempts, "the server is shutting down")
        self.refused_overloaded += 1
        return refusal(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            errors.Reason.OVERLOADED,
            f"the server is running its limit of {self.limit} concurrent calls; "
            "retry after the delay in RetryInfo",
            retry_delay(OVERLOADED_RETRY_SECONDS, attempts),
            {"max_concurrent_rpcs": str(self.limit), "request_id": request_id},
        )

    def _shutting_down(self, request_id: str, attempts: int, message: str) -> Refusal:
        metadata = {"request_id": request_id} if request_id else {}
        return refusal(
            grpc.StatusCode.UNAVAILABLE,
            errors.Reason.SHUTTING_DOWN,
            message,
            retry_delay(SHUTTING_DOWN_RETRY_SECONDS, attempts),
            metadata,
        )

    def drain(self) -> None:
        """From now on refuse every new call with UNAVAILABLE / SHUTTING_DOWN."""
        self._draining = True

    async def idle(self) -> None:
        """Return once no admitted call is running (the caller bounds the wait)."""
        while self._calls:
            self._idle = asyncio.Event()
            await self._idle.wait()

    async def quiet(self, seconds: float) -> None:
        """Return once no call has been turned away for ``seconds`` (the caller bounds the wait).

        Calls grpc has queued but the server not yet taken are dropped with a bare CANCELLED
        when the grpc server stops; while calls keep arriving, the queue is not empty, so
        stopping waits until they have been refused (clients back off for the retry delay)."""
        while True:  # the refusals that reset the wait come from other tasks
            left = self._last_turned_away + seconds - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(left)

    async def abandon(self) -> int:
        """End the calls still running (the grace period is over); returns how many there were.

        Each caller gets UNAVAILABLE / SHUTTING_DOWN (its call did not finish, so a retry-safe
        RPC may be repeated) rather than a bare CANCELLED, then the call's task is cancelled,
        so nothing it awaits keeps the process alive."""
        calls = list(self._calls.items())
        for context, task in calls:
            if not context.done():
                ended = self._shutting_down(
                    "", 0, "the server shut down before the call finished (grace period over)"
                )
                # The call may end by itself meanwhile (UsageError) or be gone (any grpc error):
                # either way it has its status.
                with contextlib.suppress(Exception):
                    await context.abort(ended.code, ended.message, ended.trailing_metadata)
            if task is not None and not task.done():
                task.cancel()
        return len(calls)
