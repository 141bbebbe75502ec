"""The gRPC face of the resolver: it holds the use cases (``use_cases.resolve.Resolver``)
and their translation from and to messages (``adapters.rpcs.ResolverRpcs``), and puts
each RPC behind a transport that decides where it runs and checks what it sends.

Work above ``offload.INLINE_MAX_UNITS`` runs on a worker thread and stops at its next check
once the caller is gone; smaller work runs on the loop with the cyclic collector paused
(``without_gc``), as does a call made without a gRPC context (in-process, from tests and
benchmarks: nothing is sent, so only the counting RPCs' budgets apply). The responses of
ResolveSemantic, ResolveEvidence and ResolveColumns are serialized where the work ran and
checked against their budget on the bytes that go out. ResolveColumns's work grows with the
rows its stream declares, which a compressed stream's size does not show, so it is measured
before it is read (``ResolveColumns``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import ClassVar, TypeVar

import grpc
from google.protobuf.message import Message

from assay import optional
from assay.runtime.config import DEFAULT_MAX_MESSAGE_BYTES
from assay.runtime.memory import LARGE_REQUEST_BYTES, trim_after
from assay.runtime.response_budget import ResponseBudget
from assay.services.resolver.adapters.offload import INLINE_MAX_UNITS, Offload, without_gc
from assay.services.resolver.adapters.policy_file import FixedPolicy, PolicySource
from assay.services.resolver.adapters.rpcs import ResolverRpcs
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.request_cost import ColumnsLimits
from assay.services.resolver.use_cases.resolve import Resolver
from assay.services.resolver.use_cases.stop import NEVER, Stop
from assay.services.resolver.wire.columns_request import ColumnsCall, parse_columns_request
from assay.v1 import resolver_service_pb2 as pb

_Request = TypeVar("_Request", bound=Message)
_Response = TypeVar("_Response", bound=Message)


# ResolveColumns counts one unit of work per row, and at least one per this many bytes of
# Arrow stream, as received or as decompressed.
COLUMNS_BYTES_PER_UNIT = 8
# A stream of at most this many bytes is measured on the loop (a few dozen messages, under
# a millisecond); a larger one is large work already, measured on its worker.
SURVEY_ON_LOOP_BYTES = 16 * 1024


class ResolverServicer:
    """Implements ``assay.v1.ResolverService`` over the policy in force at each call."""

    # The runtime hands ResolveColumns its request with the stream uncopied.
    REQUEST_PARSERS: ClassVar[Mapping[str, Callable[[bytes], object]]] = {
        "ResolveColumns": parse_columns_request
    }

    def __init__(
        self,
        policy: Policy | PolicySource,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        columns_limits: ColumnsLimits | None = None,
    ) -> None:
        """``policy``: one policy, or where each call takes the one in force
        (``adapters.policy_file``); ``max_message_bytes``: the server's message limit,
        which no response may pass; ``columns_limits``: what one ResolveColumns stream may
        hold (the defaults when None)."""
        policies = FixedPolicy(policy) if isinstance(policy, Policy) else policy
        resolver = Resolver(policies.current().policy, columns_limits)
        self.columns_limits = resolver.columns_limits
        self.rpcs = ResolverRpcs(resolver, max_message_bytes, policies)
        self.offload = Offload()

    async def close(self) -> None:
        """The ServiceSpec hook: heavy work that has not started is dropped."""
        self.offload.close()

    async def _serve(
        self,
        method: str,
        work: Callable[[_Request, Stop], _Response],
        request: _Request,
        context: grpc.aio.ServicerContext | None,
        units: int,
        budget: Callable[[_Request], ResponseBudget] | None = None,
        wire: Callable[[_Request, Stop], bytes] | None = None,
    ) -> _Response | bytes:
        """``work`` on the loop when it is small, else on a worker, and the response's size
        checked against ``budget`` if given (RPCs that multiply count as they go instead).

        The response is serialized here, on the worker for large work, and returned as
        bytes (the runtime sends bytes as they are): the loop never serializes a large
        response, and its size is checked on the bytes that go out, not counted by a
        ``ByteSize`` walk before the runtime serializes it again. Without a context (an
        in-process call, no transport) nothing is sent, so nothing is checked, and the
        message itself is returned. ``wire``, when given, is ``work`` answering in wire
        form already: the live call uses it."""
        if context is None:
            return without_gc(partial(_unstoppable, work), request)
        serialized = partial(_serialized, work, budget, wire)
        if units <= INLINE_MAX_UNITS:
            return without_gc(serialized, request)
        return await self.offload.run(method, serialized, request, context.time_remaining())

    async def ResolveSemantic(
        self, request: pb.ResolveSemanticRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveSemanticResponse | bytes:
        units = len(request.evidence.claims)
        budget = self.rpcs.budgets.evidence("send fewer or smaller claims about the target")
        return await self._serve(
            "ResolveSemantic", self.rpcs.resolve_semantic, request, context, units, budget
        )

    async def ResolveEvidence(
        self, request: pb.ResolveEvidenceRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveEvidenceResponse | bytes:
        units = len(request.evidence.claims)
        budget = self.rpcs.budgets.evidence("split the evidence across calls")
        return await self._serve(
            "ResolveEvidence", self.rpcs.resolve_evidence, request, context, units, budget
        )

    async def ResolveHypotheses(
        self, request: pb.ResolveHypothesesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResolveHypothesesResponse | bytes:
        # At most this many claim resolutions (and each claim read once).
        units = len(request.evidence.claims) * (len(request.hypotheses) + 1) + sum(
            len(h.claims) for h in request.hypotheses
        )
        return await self._serve(
            "ResolveHypotheses", self.rpcs.resolve_hypotheses, request, context, units
        )

    async def Reconcile(
        self, request: pb.ReconcileRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReconcileResponse | bytes:
        # At most this many claim resolutions (and each claim read once).
        units = (len(request.evidence.claims) + 1) * (len(request.proposals) + 1)
        return await self._serve("Reconcile", self.rpcs.reconcile, request, context, units)

    async def GetResolverPolicy(
        self, request: pb.GetResolverPolicyRequest, context: grpc.aio.ServicerContext | None
    ) -> pb.GetResolverPolicyResponse | bytes:
        """The response is built and serialized once per table (``InForce.policy_bytes``)
        and sent as those bytes; an in-process call (no context) gets the message."""
        if context is None:
            return self.rpcs.policy_message()
        return self.rpcs.in_force().policy_bytes

    async def ResolveColumns(
        self,
        request: pb.ResolveColumnsRequest | ColumnsCall,
        context: grpc.aio.ServicerContext,
    ) -> pb.ResolveColumnsResponse | bytes:
        """A served call arrives as a ``ColumnsCall`` (``REQUEST_PARSERS``): its stream a
        view of the bytes received. An in-process call may pass the message.

        The work grows with the rows the stream declares, not its compressed size: a small
        stream is measured on the loop (``columnar.input.bounds``: headers only, nothing
        decompressed), so a few kilobytes that declare a million rows are refused there or
        go to a worker like any large request; a larger stream goes to a worker, which
        measures it first. Memory such a call used is given back afterwards
        (``runtime.memory``), as for any large request."""
        if isinstance(request, ColumnsCall):
            message, data = request.request, request.stream
        else:  # read once and handed on: each read of a bytes field copies it
            message, data = request, request.claims_arrow
        if context is None and isinstance(request, ColumnsCall):
            message = pb.ResolveColumnsRequest()
            message.CopyFrom(request.request)
            message.claims_arrow = bytes(data)
        # A compressed stream's size says little of its rows: a small one is measured here
        # (refused here when it holds too much) and counted by what it declares.
        units = len(data) // COLUMNS_BYTES_PER_UNIT
        surveyed = None
        optional.require("pyarrow", "ResolveColumns")
        from assay.services.resolver.columnar.input.bounds import survey

        if len(data) <= SURVEY_ON_LOOP_BYTES:
            surveyed = survey(data, self.columns_limits)
            units = max(units, surveyed.rows, surveyed.decompressed // COLUMNS_BYTES_PER_UNIT)
        try:
            return await self._serve(
                "ResolveColumns",
                self.rpcs.resolve_columns,
                message,
                context,
                units,
                partial(self.rpcs.budgets.columns, size=len(data)),
                partial(self.rpcs.resolve_columns_wire, data=data, surveyed=surveyed),
            )
        finally:
            if context is not None and units > INLINE_MAX_UNITS and len(data) < LARGE_REQUEST_BYTES:
                # The runtime gives back the memory of large requests only; this small
                # request's work was large.
                trim_after()


def _unstoppable(work: Callable[[_Request, Stop], _Response], request: _Request) -> _Response:
    return work(request, NEVER)


def _serialized(
    work: Callable[[_Request, Stop], _Response],
    budget: Callable[[_Request], ResponseBudget] | None,
    wire: Callable[[_Request, Stop], bytes] | None,
    request: _Request,
    stop: Stop = NEVER,
) -> bytes:
    """``work``'s response, serialized as the runtime would (or as ``wire`` writes it),
    within ``budget`` if given."""
    if wire is not None:
        data = wire(request, stop)
    else:
        data = work(request, stop).SerializeToString(deterministic=True)
    if budget is not None:
        budget(request).add(len(data))
    return data
