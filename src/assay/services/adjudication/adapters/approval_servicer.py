"""The gRPC adapter of ``assay.v1.ApprovalService``: translate, call ``Approvals``, translate.

Served by the adjudication process beside ``AdjudicationServicer``, on the same store,
ledger and port. As there, mutations hand the use case a render function, so a retried
request id returns the first response's bytes; the runtime has checked the caller's roles
and tenants against the contract's ``access`` rules before a method runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from assay.runtime.auth.principal import current_principal
from assay.services.adjudication.domain.approvals import ApprovalView
from assay.services.adjudication.domain.model import Caller
from assay.services.adjudication.use_cases.approvals import Approvals
from assay.services.adjudication.use_cases.retries import RequestKey
from assay.services.adjudication.wire import approvals as wire
from assay.services.adjudication.wire import convert, scalars
from assay.v1 import approval_service_pb2 as pb


def _bytes(message: Any) -> bytes:
    data: bytes = message.SerializeToString(deterministic=True)
    return data


def _key(method: str, request: Any) -> RequestKey:
    return RequestKey(request.request_id, method, scalars.request_digest(request))


def _caller() -> Caller:
    return convert.caller(current_principal())


class ApprovalServicer:
    """Implements ``assay.v1.ApprovalService``."""

    def __init__(self, approvals: Approvals) -> None:
        self.approvals = approvals

    async def RequestApproval(
        self, request: pb.RequestApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        def render(view: ApprovalView) -> bytes:
            return _bytes(pb.RequestApprovalResponse(approval=wire.approval(view)))

        return await self.approvals.request(
            _key("RequestApproval", request), wire.ask(request), render, _caller()
        )

    async def GetApproval(
        self, request: pb.GetApprovalRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetApprovalResponse:
        view = await self.approvals.get(request.approval_id, _caller())
        return pb.GetApprovalResponse(approval=wire.approval(view))

    async def ListApprovals(
        self, request: pb.ListApprovalsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListApprovalsResponse:
        views, token = await self.approvals.list(
            _caller(),
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
        def render(view: ApprovalView) -> bytes:
            return _bytes(pb.DecideApprovalResponse(approval=wire.approval(view)))

        return await self.approvals.decide(
            _key("DecideApproval", request),
            request.approval_id,
            wire.decision(request.decision),
            request.reason,
            render,
            _caller(),
        )

    async def RevokeApproval(
        self, request: pb.RevokeApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        def render(view: ApprovalView) -> bytes:
            return _bytes(pb.RevokeApprovalResponse(approval=wire.approval(view)))

        return await self.approvals.revoke(
            _key("RevokeApproval", request), request.approval_id, request.reason, render, _caller()
        )

    async def ConsumeApproval(
        self, request: pb.ConsumeApprovalRequest, context: grpc.aio.ServicerContext
    ) -> bytes:
        def render(view: ApprovalView) -> bytes:
            return _bytes(pb.ConsumeApprovalResponse(approval=wire.approval(view)))

        return await self.approvals.consume(
            _key("ConsumeApproval", request),
            request.approval_id,
            request.candidate_digest,
            render,
            _caller(),
        )

    async def WatchApproval(
        self, request: pb.WatchApprovalRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchApprovalResponse]:
        async for view in self.approvals.watch(request.approval_id, _caller()):
            yield pb.WatchApprovalResponse(approval=wire.approval(view))
