"""Approvals' client: every RPC, plus the flow in plain values.

``AsyncApprovalClient``; ``ApprovalClient`` is generated from it, the same methods not
awaited. ``assay.v1.ApprovalService`` is served by the adjudication process, so the
target is the adjudication service's address, and it needs an authenticated caller (a
dev-mode server refuses every call, FAILED_PRECONDITION / AUTHENTICATION_REQUIRED).
The flow, in the order an approval lives it: the requester ``ask``s for one plan
candidate -> approvers (never the requester) ``decide`` -> the requester ``watch``es
until it is decided -> ``consume`` once, with the candidate's digest, before acting (or
``revoke`` it). Mutating calls get a fresh ``request_id`` when given none; pass your own
to make a retry across processes safe.
"""

# `timeout` here is the gRPC deadline sent with the call (the server sees it), not a
# local wait that asyncio.timeout could replace.
# ruff: noqa: ASYNC109

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

from assay.client import approval_builders as build
from assay.client._async.base import AsyncClient, follow_pages, unary
from assay.v1 import approval_service_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["ApprovalService"]


class AsyncApprovalClient(AsyncClient):
    """Asyncio client for ``assay.v1.ApprovalService`` (on the adjudication port)."""

    SERVICE = SERVICE

    # The RPCs, in the contract's order.
    request_approval = unary(pb.RequestApprovalRequest, pb.RequestApprovalResponse)
    get_approval = unary(pb.GetApprovalRequest, pb.GetApprovalResponse)
    list_approvals = unary(pb.ListApprovalsRequest, pb.ListApprovalsResponse)
    decide_approval = unary(pb.DecideApprovalRequest, pb.DecideApprovalResponse)
    revoke_approval = unary(pb.RevokeApprovalRequest, pb.RevokeApprovalResponse)
    consume_approval = unary(pb.ConsumeApprovalRequest, pb.ConsumeApprovalResponse)

    def watch_approval(
        self,
        request: pb.WatchApprovalRequest,
        *,
        timeout: float | None = None,
        x_request_id: str | None = None,
    ) -> AsyncIterator[pb.WatchApprovalResponse]:
        return self._stream(
            "WatchApproval", request, pb.WatchApprovalResponse, timeout, x_request_id
        )

    # Convenience. (``request_approval`` is the RPC, in the one shape every RPC method has;
    # ``ask`` is the same call from plain values.)

    async def ask(
        self,
        tenant: str,
        subject: str,
        predicate: str,
        candidate: build.CandidateLike,
        reason: str,
        *,
        expire_time: datetime | None = None,
        grant_lifetime: timedelta | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> pb.Approval:
        """Ask for an approval of one plan candidate (as the plan gave it, digest included);
        the caller is the requester. Returns the stored, PENDING approval."""
        request = build.request_approval_request(
            tenant,
            subject,
            predicate,
            candidate,
            reason,
            expire_time=expire_time,
            grant_lifetime=grant_lifetime,
            request_id=request_id,
        )
        response = await self.request_approval(request, timeout=timeout)
        return response.approval

    async def get(self, approval_id: str, *, timeout: float | None = None) -> pb.Approval:
        """One approval with every step."""
        response = await self.get_approval(
            pb.GetApprovalRequest(approval_id=approval_id), timeout=timeout
        )
        return response.approval

    async def decide(
        self,
        approval_id: str,
        approve: bool,
        reason: str,
        request_id: str | None = None,
        *,
        timeout: float | None = None,
    ) -> pb.Approval:
        """Approve (``approve=True``) or deny, with a reason; returns the approval after it."""
        request = build.decide_approval_request(approval_id, approve, reason, request_id)
        response = await self.decide_approval(request, timeout=timeout)
        return response.approval

    async def revoke(
        self,
        approval_id: str,
        reason: str,
        request_id: str | None = None,
        *,
        timeout: float | None = None,
    ) -> pb.Approval:
        """Withdraw a pending or granted approval before it is used (requester or operator)."""
        request = pb.RevokeApprovalRequest(
            approval_id=approval_id, reason=reason, request_id=request_id or ""
        )
        response = await self.revoke_approval(request, timeout=timeout)
        return response.approval

    async def consume(
        self,
        approval_id: str,
        candidate_digest: str,
        request_id: str | None = None,
        *,
        timeout: float | None = None,
    ) -> pb.Approval:
        """Use a GRANTED approval, once, for the candidate with ``candidate_digest`` (the
        requester only); returns it CONSUMED."""
        request = pb.ConsumeApprovalRequest(
            approval_id=approval_id, candidate_digest=candidate_digest, request_id=request_id or ""
        )
        response = await self.consume_approval(request, timeout=timeout)
        return response.approval

    async def watch(
        self, approval_id: str, *, timeout: float | None = None
    ) -> AsyncIterator[pb.Approval]:
        """The approval now, then after every change, until a final state (the server ends the
        stream there). ``timeout`` bounds the whole watch, not each change."""
        request = pb.WatchApprovalRequest(approval_id=approval_id)
        async for response in self.watch_approval(request, timeout=timeout):
            yield response.approval

    async def list_all(
        self,
        tenant: str = "",
        state: int | str | None = None,
        *,
        page_size: int = 0,
        timeout: float | None = None,
    ) -> AsyncIterator[pb.Approval]:
        """Every approval (of one tenant, or each the caller may see; of one state, or all),
        newest request first, following pages."""
        request = build.list_approvals_request(tenant, state, page_size)
        async for approval in follow_pages(
            self.list_approvals, request, lambda page: page.approvals, timeout
        ):
            yield approval
