"""Each resolver RPC as the servicer runs it: read the request, call the use case, write.

``wire.asks`` reads a request into its ask (or refuses it, with every violation), a use
case of ``use_cases.resolve`` answers it, and ``wire.answers`` writes the response within
its budget. These are plain calls on messages, with no transport: the servicer decides
where each runs and what stops it (``adapters.servicer``), and in-process callers (tests
of a rule as served, benchmarks) call them directly.
"""

from __future__ import annotations

from assay.services.resolver.columnar.input.bounds import Survey
from assay.services.resolver.use_cases.resolve import Resolver
from assay.services.resolver.use_cases.stop import NEVER, Stop
from assay.services.resolver.wire import answers, asks
from assay.services.resolver.wire.convert import ResolutionWriter
from assay.services.resolver.wire.intake import source_table
from assay.services.resolver.wire.reader import Reader
from assay.transport import DEFAULT_MAX_MESSAGE_BYTES
from assay.v1 import resolver_service_pb2 as pb


class ResolverRpcs:
    """The resolver's RPCs over one set of use cases, as calls on request messages."""

    def __init__(
        self, resolver: Resolver, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    ) -> None:
        """``max_message_bytes``: the server's message limit, which no response may pass
        (the runtime's by default)."""
        self.resolver = resolver
        self.budgets = answers.Budgets(max_message_bytes)
        self._sources = source_table(resolver.policy.reliability)

    def reader(self, stop: Stop = NEVER) -> Reader:
        """A reader of this policy's claims, checking ``stop`` as it reads."""
        if stop is NEVER:  # nothing to check: the reader skips the checks altogether
            return Reader(self.resolver.policy, self._sources)
        return Reader(self.resolver.policy, self._sources, stop.check)

    def resolve_semantic(
        self, request: pb.ResolveSemanticRequest, stop: Stop = NEVER
    ) -> pb.ResolveSemanticResponse:
        reader = self.reader(stop)
        ask = asks.semantic(reader, request)
        resolution = self.resolver.semantic(ask, stop)
        return answers.semantic(ResolutionWriter(reader.index), resolution, ask.full)

    def resolve_evidence(
        self, request: pb.ResolveEvidenceRequest, stop: Stop = NEVER
    ) -> pb.ResolveEvidenceResponse:
        reader = self.reader(stop)
        ask = asks.evidence(reader, request)
        answer = self.resolver.evidence(ask, stop)
        return answers.evidence(ResolutionWriter(reader.index), answer, ask.full, stop.check)

    def resolve_hypotheses(
        self, request: pb.ResolveHypothesesRequest, stop: Stop = NEVER
    ) -> pb.ResolveHypothesesResponse:
        reader = self.reader(stop)
        ask = asks.hypotheses(reader, request)
        answer = self.resolver.hypotheses(ask, stop)  # charged here; resolved as written
        budget = self.budgets.hypotheses(request, ask)
        return answers.hypotheses(ResolutionWriter(reader.index), answer, ask, budget)

    def reconcile(self, request: pb.ReconcileRequest, stop: Stop = NEVER) -> pb.ReconcileResponse:
        reader = self.reader(stop)
        ask = asks.reconcile(reader, request)
        outcomes = self.resolver.reconcile(ask, stop)  # charged here; judged as written
        budget = self.budgets.reconcile(request)
        return answers.reconcile(ResolutionWriter(reader.index), outcomes, budget)

    def policy_message(self) -> pb.GetResolverPolicyResponse:
        return answers.policy(self.resolver.policy)

    def resolve_columns(
        self, request: pb.ResolveColumnsRequest, stop: Stop = NEVER
    ) -> pb.ResolveColumnsResponse:
        """The response as a message, for in-process callers."""
        return pb.ResolveColumnsResponse.FromString(self.resolve_columns_wire(request, stop))

    def resolve_columns_wire(
        self,
        request: pb.ResolveColumnsRequest,
        stop: Stop = NEVER,
        *,
        data: bytes | memoryview | None = None,
        surveyed: Survey | None = None,
    ) -> bytes:
        """The response serialized (``columnar.output.response``): what the server sends. ``data``
        is the request's stream when the caller read it already: each read of a bytes field
        copies it; ``surveyed`` its survey
        (``columnar.input.bounds``), when the caller made it already."""
        ask = asks.columns(self.reader(stop), request)
        stream = request.claims_arrow if data is None else data
        return self.resolver.columns(stream, ask, stop, surveyed)
