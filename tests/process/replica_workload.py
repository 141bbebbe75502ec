"""The writes the adjudication-replica test sends, and what the servers acknowledged.

Each simulated client owns its reviewers and cases, so every write it plans has
one expected outcome: its two reviewers registered, each case enqueued, labelled
by both, resolved unanimously and frozen. Every write carries a request id made
up front; a call that fails the way a crashed replica fails (UNAVAILABLE, a
deadline) is sent again with the same id until one replica acknowledges it,
which is what a careful client does when it cannot know whether its first try
committed. Any other failure is kept as an error for the test to show.

A client has one route or several. One route (the multi-address target) is the
client library's own channel: round_robin, and a gRPC retry policy that already
resends a call failed with UNAVAILABLE (the same bytes, so the same id) to the
next replica. Several routes are one replica each, home first, on channels
without retries: the failure reaches the client, which resends the call itself
on the next route — so a client at home on the killed replica surely sees the
kill and resends the same request id to the other replica.

The script is split in two halves with a gate between them: the test opens the
gate once the killed replica is back, and each client opens a fresh channel
for the second half, so the restarted process takes live writes too.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import Message

from assay.client import builders
from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.errors import AssayCallError
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2

TENANT = "replicas"
FIXTURE = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
CALL_TIMEOUT_SECONDS = 10.0
# How long one write may go unacknowledged, retries included, before the client gives up.
WRITE_DEADLINE_SECONDS = 60.0
# What a replica dying under a call looks like to its caller; the write may or may not
# have committed, so the same request (same id) is sent again.
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
RETRY_PAUSE_SECONDS = 0.05


@dataclass
class Write:
    """One planned write: the client method, the request (with its request id), and the
    response the first acknowledgement carried (None until then)."""

    method: str
    request: Message
    response: Message | None = None
    # Codes of the client-visible failures before the acknowledgement, in order.
    failures: list[str] = field(default_factory=list)


@dataclass
class Tally:
    """Shared across the clients: acknowledgements so far, and the errors a retry cannot
    explain (the test expects none)."""

    acknowledged: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class ClientScript:
    """One client's reviewers, cases and writes, in the order it sends them."""

    index: int
    case_count: int
    gate_after_cases: int
    # Where calls go: one target (library channel), or one replica per route (failover).
    routes: tuple[str, ...]
    writes: list[Write] = field(default_factory=list)
    case_ids: list[str] = field(default_factory=list)
    # Which route the next call takes; a retryable failure moves it on.
    turn: int = 0

    @property
    def reviewers(self) -> tuple[str, str]:
        return (f"c{self.index:02d}-a", f"c{self.index:02d}-b")

    @property
    def planned_writes(self) -> int:
        """Two registrations, then per case: enqueue, two reviews, resolve, freeze."""
        return 2 + 5 * self.case_count

    async def run(self, tally: Tally, gate: asyncio.Event, notify: Callable[[], None]) -> None:
        """Every planned write, acknowledged; the second half waits for ``gate``.
        ``notify`` is called after each acknowledgement and each error."""
        async with self._clients() as clients:
            for reviewer in self.reviewers:
                request = builders.register_reviewer_request(reviewer, FIXTURE)
                await self._send(clients, "register_reviewer", request, tally, notify)
            for number in range(self.gate_after_cases):
                await self._case(clients, number, tally, notify)
        await gate.wait()
        self.turn = 0  # back home
        async with self._clients() as clients:
            for number in range(self.gate_after_cases, self.case_count):
                await self._case(clients, number, tally, notify)

    @asynccontextmanager
    async def _clients(self) -> AsyncIterator[list[AsyncAdjudicationClient]]:
        """One client per route, on channels of their own (fresh connections)."""
        if len(self.routes) == 1:
            async with AsyncAdjudicationClient(self.routes[0], timeout=CALL_TIMEOUT_SECONDS) as one:
                yield [one]
            return
        async with AsyncExitStack() as stack:
            channels = [
                await stack.enter_async_context(
                    grpc.aio.insecure_channel(route, options=[("grpc.enable_retries", 0)])
                )
                for route in self.routes
            ]
            yield [AsyncAdjudicationClient(c, timeout=CALL_TIMEOUT_SECONDS) for c in channels]

    async def _case(
        self,
        clients: list[AsyncAdjudicationClient],
        number: int,
        tally: Tally,
        notify: Callable[[], None],
    ) -> None:
        enqueue = builders.enqueue_case_request(
            tenant=TENANT,
            subject=f"api:c{self.index:02d}-{number}",
            predicate="retries.mode",
            candidate_values=["safe", "unsafe"],
            local_verdict="safe",
            origin="replica-test",
        )
        enqueued = await self._send(clients, "enqueue_case", enqueue, tally, notify)
        assert isinstance(enqueued, pb.EnqueueCaseResponse)
        case_id = enqueued.case.case_id
        self.case_ids.append(case_id)
        for reviewer in self.reviewers:
            review = builders.label_review_request(case_id, reviewer, "safe")
            await self._send(clients, "submit_review", review, tally, notify)
        resolve = builders.unanimous_request(case_id)
        await self._send(clients, "resolve_case", resolve, tally, notify)
        freeze = pb.FreezeGoldLabelRequest(case_id=case_id)
        await self._send(clients, "freeze_gold_label", freeze, tally, notify)

    async def _send(
        self,
        clients: list[AsyncAdjudicationClient],
        method: str,
        request: Any,
        tally: Tally,
        notify: Callable[[], None],
    ) -> Message:
        request.request_id = f"c{self.index:02d}-{len(self.writes)}-{uuid.uuid4().hex}"
        write = Write(method, request)
        self.writes.append(write)
        give_up = time.monotonic() + WRITE_DEADLINE_SECONDS
        while True:
            call: Callable[..., Awaitable[Message]] = getattr(clients[self.turn], method)
            try:
                write.response = await call(request)
            except AssayCallError as error:
                write.failures.append(error.code.name)
                if error.code not in RETRYABLE or time.monotonic() > give_up:
                    tally.errors.append(f"{method} {request.request_id}: {error}")
                    notify()
                    raise
                # The next route, after a little back-off (a channel's own retries, where
                # it has them, have already run).
                self.turn = (self.turn + 1) % len(clients)
                await asyncio.sleep(RETRY_PAUSE_SECONDS)
                continue
            tally.acknowledged += 1
            notify()
            return write.response


async def replay(target: str, scripts: list[ClientScript]) -> list[str]:
    """Send every acknowledged write again, with its request id, to ``target`` alone; the
    mismatches (a response other than the first acknowledgement, or an error)."""
    mismatches: list[str] = []
    async with AsyncAdjudicationClient(target, timeout=CALL_TIMEOUT_SECONDS) as client:

        async def one_client(script: ClientScript) -> None:
            for write in script.writes:
                call: Callable[..., Awaitable[Message]] = getattr(client, write.method)
                request_id = getattr(write.request, "request_id", "")
                try:
                    again = await call(write.request)
                except AssayCallError as error:
                    mismatches.append(f"{target} {write.method} {request_id}: {error}")
                    continue
                if again != write.response:
                    mismatches.append(f"{target} {write.method} {request_id}: another response")

        await asyncio.gather(*(one_client(script) for script in scripts))
    return mismatches
