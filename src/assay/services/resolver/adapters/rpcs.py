"""Each resolver RPC as the servicer runs it: read the request, call the use case, write.

``wire.asks`` reads a request into its ask (or refuses it, with every violation), a use
case of ``use_cases.resolve`` answers it, and ``wire.answers`` writes the response within
its budget. These are plain calls on messages, with no transport: the servicer decides
where each runs and what stops it (``adapters.servicer``), and in-process callers (tests
of a rule as served, benchmarks) call them directly.

Each call takes the policy in force once, at its start (``in_force``), and reads, resolves
and writes under it: a table file that changes meanwhile (``adapters.policy_file``) is
used from the next call on, and every resolution names the table it was computed with.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from assay.services.resolver.adapters.policy_file import FixedPolicy, Loaded, PolicySource
from assay.services.resolver.domain.request_cost import ColumnsLimits
from assay.services.resolver.use_cases.resolve import Resolver
from assay.services.resolver.use_cases.stop import NEVER, Stop
from assay.services.resolver.wire import answers, asks
from assay.services.resolver.wire.convert import ResolutionWriter
from assay.services.resolver.wire.intake import source_table
from assay.services.resolver.wire.reader import Reader
from assay.transport import DEFAULT_MAX_MESSAGE_BYTES
from assay.v1 import resolver_service_pb2 as pb

if TYPE_CHECKING:  # the columnar path needs pyarrow (the `columnar` extra)
    from assay.services.resolver.columnar.input.bounds import Survey


class InForce:
    """One table's use cases, built once per table: what a call takes at its start."""

    def __init__(self, loaded: Loaded, columns_limits: ColumnsLimits) -> None:
        self.loaded = loaded
        self.resolver = Resolver(loaded.policy, columns_limits)
        self._sources = source_table(loaded.policy.reliability)

    def reader(self, stop: Stop = NEVER) -> Reader:
        """A reader of this policy's claims, checking ``stop`` as it reads."""
        if stop is NEVER:  # nothing to check: the reader skips the checks altogether
            return Reader(self.loaded.policy, self._sources)
        return Reader(self.loaded.policy, self._sources, stop.check)

    def writer(self, reader: Reader) -> ResolutionWriter:
        """A writer of this call's resolutions, each naming this table."""
        return ResolutionWriter(reader.index, self.loaded.policy.digest)

    def policy_message(self) -> pb.GetResolverPolicyResponse:
        return answers.policy(self.loaded.policy, self.loaded.load_time)

    @cached_property
    def policy_bytes(self) -> bytes:
        """``policy_message`` serialized: it never changes for one table, so once."""
        data: bytes = self.policy_message().SerializeToString(deterministic=True)
        return data


class ResolverRpcs:
    """The resolver's RPCs, as calls on request messages, under the policy in force."""

    def __init__(
        self,
        resolver: Resolver,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        policies: PolicySource | None = None,
    ) -> None:
        """``max_message_bytes``: the server's message limit, which no response may pass
        (the runtime's by default). ``policies``: where each call takes its policy from
        (``resolver``'s, always, when None); ``resolver``'s columns limits hold either way."""
        self.columns_limits = resolver.columns_limits
        self.policies = policies or FixedPolicy(resolver.policy)
        self.budgets = answers.Budgets(max_message_bytes)
        self._in_force = InForce(self.policies.current(), self.columns_limits)

    def in_force(self) -> InForce:
        """The use cases of the policy in force now (built again only when it changed)."""
        loaded = self.policies.current()
        now = self._in_force
        if now.loaded is not loaded:
            # Two calls racing here build equal copies; either serves.
            now = self._in_force = InForce(loaded, self.columns_limits)
        return now

    def resolve_semantic(
        self, request: pb.ResolveSemanticRequest, stop: Stop = NEVER
    ) -> pb.ResolveSemanticResponse:
        now = self.in_force()
        reader = now.reader(stop)
        ask = asks.semantic(reader, request)
        resolution = now.resolver.semantic(ask, stop)
        return answers.semantic(now.writer(reader), resolution, ask.full)

    def resolve_evidence(
        self, request: pb.ResolveEvidenceRequest, stop: Stop = NEVER
    ) -> pb.ResolveEvidenceResponse:
        now = self.in_force()
        reader = now.reader(stop)
        ask = asks.evidence(reader, request)
        answer = now.resolver.evidence(ask, stop)
        return answers.evidence(now.writer(reader), answer, ask.full, stop.check)

    def resolve_hypotheses(
        self, request: pb.ResolveHypothesesRequest, stop: Stop = NEVER
    ) -> pb.ResolveHypothesesResponse:
        now = self.in_force()
        reader = now.reader(stop)
        ask = asks.hypotheses(reader, request)
        answer = now.resolver.hypotheses(ask, stop)  # charged here; resolved as written
        budget = self.budgets.hypotheses(request, ask)
        return answers.hypotheses(now.writer(reader), answer, ask, budget)

    def reconcile(self, request: pb.ReconcileRequest, stop: Stop = NEVER) -> pb.ReconcileResponse:
        now = self.in_force()
        reader = now.reader(stop)
        ask = asks.reconcile(reader, request)
        outcomes = now.resolver.reconcile(ask, stop)  # charged here; judged as written
        budget = self.budgets.reconcile(request)
        return answers.reconcile(now.writer(reader), outcomes, budget)

    def policy_message(self) -> pb.GetResolverPolicyResponse:
        return self.in_force().policy_message()

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
        now = self.in_force()
        ask = asks.columns(now.reader(stop), request)
        stream = request.claims_arrow if data is None else data
        return now.resolver.columns(stream, ask, stop, surveyed)
