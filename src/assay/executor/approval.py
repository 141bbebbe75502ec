"""Asking people before acting: one REQUIRES_APPROVAL candidate through ApprovalService.

The executor asks for the candidate exactly as the plan gave it (its digest included),
for the run's tenant, with a reason naming the run and the gap; it then waits on
WatchApproval (pushed, not polled) for at most ``Settings.approval_wait`` seconds, and
acts only after consuming a GRANTED approval with the candidate's own digest, so a grant
for any other action can never be used for this one. The pending request expires when the
wait ends (its ``expire_time``), and a run that stops waiting revokes it too, so no grant
outlives the run that asked. Anything short of a consumed grant (a denial, expiry, a
revocation, the wait running out, a refusal) ends the attempt with that outcome and
nothing is done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

import grpc

from assay.client.approvals import AsyncApprovalClient
from assay.client.errors import AssayCallError
from assay.executor.model import ApprovalAsked, ApprovalOutcome, ApprovalRecord, Settings
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

# The server records the expiry at the request's deadline and pushes it; the watch's own
# deadline sits a little later so the run hears EXPIRED rather than timing out first.
WATCH_GRACE_SECONDS = 5.0
MAX_REASON = 2000

_ENDED = {
    pb.APPROVAL_STATE_DENIED: (ApprovalOutcome.DENIED, pb.APPROVAL_STEP_KIND_DENIED),
    pb.APPROVAL_STATE_EXPIRED: (ApprovalOutcome.EXPIRED, pb.APPROVAL_STEP_KIND_EXPIRED),
    pb.APPROVAL_STATE_REVOKED: (ApprovalOutcome.REVOKED, pb.APPROVAL_STEP_KIND_REVOKED),
}


@dataclass(frozen=True)
class Ask:
    """One request: what is asked for, why, and the key that makes a retry of it safe."""

    candidate: plan_pb2.AcquisitionCandidate
    probe: str
    reason: str
    request_id: str


def approval_reason(
    run_tag: str, settings: Settings, status: str, probe: str, candidate_id: str, missing: list[str]
) -> str:
    """Why this run asks: the run, the unresolved target, and the grants it lacks."""
    needs = ", ".join(missing) or "an approval"
    text = (
        f"executor run {run_tag}: {settings.predicate} of {settings.subject} is {status}; "
        f"{probe} ({candidate_id}) would observe it but needs {needs}, not granted to this run"
    )
    return text[:MAX_REASON]


def _actors(approval: pb.Approval, kind: int) -> tuple[str, ...]:
    return tuple(s.actor.subject for s in approval.steps if s.kind == kind)


def _last_reason(approval: pb.Approval, kind: int) -> str:
    reasons = [s.reason for s in approval.steps if s.kind == kind]
    return reasons[-1] if reasons else ""


def ended(approval: pb.Approval) -> ApprovalRecord:
    """The record of an approval that will not be used by this run (denied, expired,
    revoked, or anything but GRANTED)."""
    outcome, kind = _ENDED.get(approval.state, (ApprovalOutcome.REFUSED, 0))
    if outcome is ApprovalOutcome.REFUSED:
        state = pb.ApprovalState.Name(approval.state).removeprefix("APPROVAL_STATE_")
        return ApprovalRecord(approval.approval_id, outcome, (), f"the approval is {state}")
    return ApprovalRecord(
        approval.approval_id, outcome, _actors(approval, kind), _last_reason(approval, kind)
    )


Watch = AsyncGenerator[pb.Approval, None]


async def until_decided(stream: Watch, approval: pb.Approval, seconds: float) -> pb.Approval:
    """The approval once it is no longer PENDING, or as last seen when ``seconds`` run out.
    The stream stays open (a ``break`` does not close it) for the use that may follow."""
    latest = approval
    try:
        async with asyncio.timeout(seconds):
            async for seen in stream:
                latest = seen
                if seen.state != pb.APPROVAL_STATE_PENDING:
                    break
    except TimeoutError:
        pass
    except AssayCallError as error:
        if error.code is not grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
    return latest


async def drain(stream: Watch) -> None:
    """Read a watch to its end after the grant was used (the server ends it at CONSUMED),
    so the call finishes OK rather than cancelled; bounded, and nothing depends on it."""
    with contextlib.suppress(TimeoutError, AssayCallError):
        async with asyncio.timeout(WATCH_GRACE_SECONDS):
            async for _ in stream:
                pass


async def ask_and_wait(
    client: AsyncApprovalClient,
    settings: Settings,
    ask: Ask,
    on_asked: Callable[[ApprovalAsked], None],
) -> ApprovalRecord:
    """Ask, wait for the decision, and consume a grant; CONSUMED is the only outcome after
    which the caller may act."""
    wait = settings.approval_wait
    try:
        asked = await client.ask(
            settings.tenant,
            settings.subject,
            settings.predicate,
            ask.candidate,
            ask.reason,
            expire_time=datetime.now(UTC) + timedelta(seconds=wait),
            request_id=ask.request_id,
        )
    except AssayCallError as error:
        return ApprovalRecord("", ApprovalOutcome.REFUSED, (), f"request refused: {error}")
    approval_id = asked.approval_id
    on_asked(
        ApprovalAsked(
            approval_id,
            ask.probe,
            ask.candidate.candidate_id,
            asked.tenant,
            asked.quorum,
            asked.requester.subject,
            wait,
        )
    )
    seconds = wait + WATCH_GRACE_SECONDS
    stream = cast(Watch, client.watch(approval_id, timeout=seconds))
    try:
        record = await _decided_and_used(client, ask, asked, stream, seconds)
        if record.outcome is ApprovalOutcome.CONSUMED:
            await drain(stream)
        return record
    finally:
        await stream.aclose()


async def _decided_and_used(
    client: AsyncApprovalClient, ask: Ask, asked: pb.Approval, stream: Watch, seconds: float
) -> ApprovalRecord:
    """Wait on ``stream`` for the decision; on a grant, use it for this candidate only."""
    approval_id, wait = asked.approval_id, seconds - WATCH_GRACE_SECONDS
    try:
        decided = await until_decided(stream, asked, seconds)
    except AssayCallError as error:
        await _withdraw(client, approval_id, f"the executor's watch failed: {error.code.name}")
        return ApprovalRecord(approval_id, ApprovalOutcome.REFUSED, (), f"watch failed: {error}")
    if decided.state == pb.APPROVAL_STATE_PENDING:
        await _withdraw(client, approval_id, f"the executor stopped waiting after {wait:g}s")
        return ApprovalRecord(
            approval_id, ApprovalOutcome.TIMEOUT, (), f"no decision within {wait:g}s"
        )
    if decided.state != pb.APPROVAL_STATE_GRANTED:
        return ended(decided)
    try:
        used = await client.consume(
            approval_id, ask.candidate.candidate_digest, request_id=f"{ask.request_id}:use"
        )
    except AssayCallError as error:
        # Revoked or expired between the grant and the use, or another candidate's digest:
        # say which when the approval tells, and never act.
        try:
            latest = await client.get(approval_id)
        except AssayCallError:
            latest = decided
        if latest.state in _ENDED:
            return ended(latest)
        return ApprovalRecord(approval_id, ApprovalOutcome.REFUSED, (), f"use refused: {error}")
    approvers = _actors(used, pb.APPROVAL_STEP_KIND_APPROVED)
    return ApprovalRecord(approval_id, ApprovalOutcome.CONSUMED, approvers)


async def _withdraw(client: AsyncApprovalClient, approval_id: str, reason: str) -> None:
    """Revoke a request this run no longer waits on, so no one grants it for nothing; a
    failure here changes nothing the run does (it does not act either way)."""
    with contextlib.suppress(AssayCallError):
        await client.revoke(approval_id, reason)
