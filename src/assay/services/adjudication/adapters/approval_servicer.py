"""The gRPC adapter of ``assay.v1.ApprovalService``: translate, call ``Approvals``, translate.

Served by the adjudication process beside ``AdjudicationServicer``, on the same store,
ledger and port. As there, mutations hand the use case a render function, so a retried
request id returns the first response's bytes; the runtime has checked the caller's roles
and tenants against the contract's ``access`` rules before a method runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from assay.services.adjudication.adapters.call_context import caller, request_key, response_bytes
from assay.services.adjudication.domain.approvals import ApprovalView
from assay.services.adjudication.use_cases.approvals import Approvals
from assay.services.adjudication.wire import approvals as wire
from assay.v1 import approval_service_pb2 as pb


def _renders(response: Callable[..., Any]) -> Callable[[ApprovalView], bytes]:
    """The render of a change's response: its message holding the approval, as bytes."""
    return lambda view: response_bytes(response(approval=wire.approval(view)))


class ApprovalServicer:
    """Implements ``assay.v1.ApprovalService``."""

    def __init__(self, approvals: Approvals) -> None:
        self.approvals = approvals

    async def RequestApproval(
        self, request: pb.RequestApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        render = _renders(pb.RequestApprovalResponse)
        return await self.approvals.request(
            request_key(request), wire.ask(request), render, caller()
        )

    async def GetApproval(
        self, request: pb.GetApprovalRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetApprovalResponse:
        view = await self.approvals.get(request.approval_id, caller())
        return pb.GetApprovalResponse(approval=wire.approval(view))

    async def ListApprovals(
        self, request: pb.ListApprovalsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListApprovalsResponse:
        views, token = await self.approvals.list(
            caller(),
            request.tenant,
            wire.state(request.state),
            request.page_size,
            request.page_token,
        )
        return pb.ListApprovalsResponse(
            approvals=[wire.approval(v) for v in views], next_page_token=token
        )

    async def DecideApproval(
        self, request: pb.DecideApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self._change(request, pb.DecideApprovalResponse)

    async def RevokeApproval(
        self, request: pb.RevokeApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self._change(request, pb.RevokeApprovalResponse)

    async def ConsumeApproval(
        self, request: pb.ConsumeApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        return await self._change(request, pb.ConsumeApprovalResponse)

    async def _change(self, request: wire.ChangeRequest, response: Callable[..., Any]) -> bytes:
        return await self.approvals.change(
            request_key(request), wire.change(request), _renders(response), caller()
        )

    async def WatchApproval(
        self, request: pb.WatchApprovalRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchApprovalResponse]:
        async for view in self.approvals.watch(request.approval_id, caller()):
            yield pb.WatchApprovalResponse(approval=wire.approval(view))
