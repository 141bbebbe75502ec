"""PlanEvidence, in order: read the request, ask the resolver, plan, and hand back the parts
of the answer.

Usually one resolver call per plan, within the caller's remaining deadline: a
ResolveHypotheses that returns the base resolution in full (``base_detail``) and, in
summary, every outcome a plan over these claims may weigh, foreseen from the claims
(``wire.foreseen_outcomes``); the plan reads its leader, gaps and candidates from that base
and ignores the hypotheses it does not need. The fallbacks are in ``PlanEvidence``. The
reliability table is asked for beside the first call when the cached copy is older than
``adapters.reliability.TABLE_TTL_SECONDS``; the planner's request id travels with every call
(``metadata``), so one grep finds a plan in both services' logs.

The resolver and the table are reached through the two ports below (``adapters``): this
module knows the planner's and the resolver's messages (``wire``), so evidence is serialized
once and the base resolution's bytes become the answer's, but never a gRPC channel or context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import NamedTuple, Protocol, TypeVar

from assay import errors
from assay.runtime.logging import get_logger
from assay.services.planner.domain.deadline import Deadline
from assay.services.planner.domain.measured import NONE, MeasuredCost, Measurements
from assay.services.planner.domain.model import (
    AcquisitionPolicy,
    EvidencePlan,
    MissingSignalNote,
    Outcome,
    PlanInput,
    ProbeKind,
    Resolution,
    SignalAvailability,
    SignalClass,
)
from assay.services.planner.domain.plan import Draft, draft_plan, finish_plan
from assay.services.planner.domain.probes import CATALOGUE, Catalogue
from assay.services.planner.wire import convert
from assay.services.planner.wire.field_paths import PathMap, no_paths
from assay.services.planner.wire.foreseen_outcomes import MatchKey, guess_outcomes, match_key
from assay.services.planner.wire.scope import all_about_target, summary_of, target_scope
from assay.v1 import planner_service_pb2 as pb
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as rpb

_log = get_logger("assay.planner")

T = TypeVar("T")
Metadata = tuple[tuple[str, str], ...]
Read = tuple[
    tuple[MissingSignalNote, ...], dict[SignalClass, SignalAvailability], AcquisitionPolicy
]
# What a plan knows before the resolver answers: the request read, its stale claims, and
# the observed figures of each probe kind.
Known = tuple[Read, frozenset[str], Mapping[ProbeKind, MeasuredCost]]


class Resolver(Protocol):
    """The resolver calls a plan makes (``adapters.resolver_client.ResolverClient``)."""

    async def resolve_semantic_bytes(
        self, request: bytes, deadline: Deadline, metadata: Sequence[tuple[str, str]] = ()
    ) -> bytes: ...

    async def resolve_hypotheses_bytes(
        self, request: bytes, deadline: Deadline, metadata: Sequence[tuple[str, str]] = ()
    ) -> rpb.ResolveHypothesesResponse: ...

    async def resolve_hypotheses_raw(
        self, request: bytes, deadline: Deadline, metadata: Sequence[tuple[str, str]] = ()
    ) -> bytes: ...

    async def resolve_hypotheses(
        self,
        request: rpb.ResolveHypothesesRequest,
        deadline: Deadline,
        metadata: Sequence[tuple[str, str]] = (),
        paths: PathMap = ...,
    ) -> rpb.ResolveHypothesesResponse: ...


class Reliabilities(Protocol):
    """The resolver's reliability table, cached (``adapters.reliability.ReliabilityTable``)."""

    def cached(self) -> Mapping[str, float] | None: ...

    async def get(
        self, deadline: Deadline, metadata: Sequence[tuple[str, str]] = ()
    ) -> Mapping[str, float]: ...


class Observed(Protocol):
    """What the executor measured, per probe kind (``adapters.observation_file``)."""

    async def current(self) -> Measurements: ...


class _Nothing:
    async def current(self) -> Measurements:
        return NONE


class Planned(NamedTuple):
    """A plan (a domain value: the servicer translates it, ``convert.plan``) and the
    resolution it echoes: ``raw`` is the resolver's serialized answer whose base is
    ``base``, so the response can re-tag its bytes (``convert.plan_response_bytes``)
    instead of serializing the resolution again."""

    plan: EvidencePlan
    raw: bytes
    base: resolution_pb2.SemanticResolution


class PlanEvidence:
    """The PlanEvidence use case over one resolver and its reliability table.

    When the outcomes are not foreseen (a claim about another semantic: the hypotheses then
    go over the target's scope, checked against a full base; too many values), or the
    resolver refuses the foreseeing call, the plan resolves first (ResolveSemantic) and then
    weighs exactly its outcomes in one ResolveHypotheses. An outcome the guess missed is
    weighed in a second ResolveHypotheses."""

    def __init__(
        self,
        resolver: Resolver,
        reliability: Reliabilities,
        catalogue: Catalogue = CATALOGUE,
        observed: Observed | None = None,
    ) -> None:
        self.resolver = resolver
        self.reliability = reliability
        self.catalogue = catalogue
        self.observed = observed or _Nothing()

    async def __call__(
        self, request: pb.PlanEvidenceRequest, deadline: Deadline, metadata: Metadata
    ) -> Planned:
        """The plan for ``request``, every resolver call bounded by ``deadline``."""
        read = convert.read_request(request)
        measured = (await self.observed.current()).costs
        # The evidence is serialized once for every resolver call (convert: "as bytes"),
        # and the base resolution's bytes become the answer's without a re-serialization.
        evidence = convert.evidence_field(request.evidence)
        stale = convert.stale_refs(request)
        cached = self.reliability.cached()
        guessed = guess_outcomes(request, self.catalogue, stale, cached)
        planned = None
        if guessed is not None:
            try:
                planned = await self._one_call(
                    request, (read, stale, measured), guessed, evidence, deadline, metadata
                )
            except (errors.InvalidArgument, errors.FailedPrecondition):
                # Bad evidence, a cap, a probe source the resolver lacks: the plan that
                # resolves first reports each exactly as it always has (or plans, when
                # only a guessed outcome no plan needs was at fault).
                planned = None
        if planned is None:
            planned = await self._two_calls(
                request, (read, stale, measured), evidence, deadline, metadata
            )
        return planned

    async def _with_table(
        self, call: Awaitable[T], deadline: Deadline, metadata: Metadata
    ) -> tuple[T, Mapping[str, float]]:
        """``call``'s answer and the reliability table, fetched alongside when not cached."""
        cached = self.reliability.cached()
        if cached is None:
            answer, table = await asyncio.gather(call, self.reliability.get(deadline, metadata))
            return answer, table
        return await call, cached

    def _draft(
        self,
        request: pb.PlanEvidenceRequest,
        known: Known,
        base: resolution_pb2.SemanticResolution,
        table: Mapping[str, float],
    ) -> Draft:
        (notes, capabilities, policy), stale, measured = known
        return draft_plan(
            PlanInput(
                subject=request.subject,
                predicate=request.predicate,
                resolution=convert.resolution(base, with_members=bool(stale)),
                notes=notes,
                capabilities=capabilities,
                policy=policy,
                reliability=table,
                stale_refs=stale,
                measured=measured,
            ),
            self.catalogue,
        )

    async def _one_call(
        self,
        request: pb.PlanEvidenceRequest,
        known: Known,
        guessed: tuple[Outcome, ...],
        evidence: bytes,
        deadline: Deadline,
        metadata: Metadata,
    ) -> Planned:
        """The plan from one ResolveHypotheses over the guessed outcomes (module docstring);
        the serialized answer, whose ``base`` is the resolution the plan echoes."""
        call = self.resolver.resolve_hypotheses_raw(
            convert.hypotheses_request_bytes(
                request, guessed, evidence, rpb.RESOLUTION_DETAIL_FULL
            ),
            deadline,
            metadata,
        )
        raw, table = await self._with_table(call, deadline, metadata)
        answer = rpb.ResolveHypothesesResponse.FromString(raw)
        draft = self._draft(request, known, answer.base, table)
        weighed: dict[MatchKey, resolution_pb2.SemanticResolution] = {
            match_key(o): h.resolution for o, h in zip(guessed, answer.hypotheses, strict=True)
        }
        missing = [o for o in draft.outcomes if match_key(o) not in weighed]
        if missing:  # an exclusion the guess could not foresee (``superset``)
            more = await self.resolver.resolve_hypotheses_bytes(
                convert.hypotheses_request_bytes(request, missing, evidence), deadline, metadata
            )
            weighed.update(
                (match_key(o), h.resolution) for o, h in zip(missing, more.hypotheses, strict=True)
            )
        hypothetical = [
            convert.resolution(weighed[match_key(o)], with_counted=False) for o in draft.outcomes
        ]
        return Planned(finish_plan(draft, hypothetical), raw, answer.base)

    async def _two_calls(
        self,
        request: pb.PlanEvidenceRequest,
        known: Known,
        evidence: bytes,
        deadline: Deadline,
        metadata: Metadata,
    ) -> Planned:
        """Resolve, then weigh exactly the draft's outcomes (module docstring)."""
        semantic = convert.semantic_request_bytes(request, evidence)
        call = self.resolver.resolve_semantic_bytes(semantic, deadline, metadata)
        raw, table = await self._with_table(call, deadline, metadata)
        base = rpb.ResolveSemanticResponse.FromString(raw)
        draft = self._draft(request, known, base.resolution, table)
        hypothetical: list[Resolution] = []
        if draft.outcomes:
            answer = await self._hypotheses(
                request, draft, base.resolution, evidence, deadline, metadata
            )
            hypothetical = [
                convert.resolution(h.resolution, with_counted=False) for h in answer.hypotheses
            ]
        return Planned(finish_plan(draft, hypothetical), raw, base.resolution)

    async def _hypotheses(
        self,
        request: pb.PlanEvidenceRequest,
        draft: Draft,
        base: resolution_pb2.SemanticResolution,
        evidence: bytes,
        deadline: Deadline,
        metadata: Metadata,
    ) -> rpb.ResolveHypothesesResponse:
        """The two-call plan's ResolveHypotheses, over the claims that can affect the target.

        Large evidence mostly concerns other semantics; sending only the target's scope
        keeps the second call small. The resolver's own base resolution of the scope (a
        summary, as the call asks) must equal the summary of ``base``, the full one; if it
        ever does not, the scope is not trusted and the call is repeated over the full
        evidence (logged: it would mean the scoping rule is stale).
        """
        scoped = None if all_about_target(request, base) else target_scope(request)
        if scoped is None or len(scoped.claims) == len(request.evidence.claims):
            return await self.resolver.resolve_hypotheses_bytes(
                convert.hypotheses_request_bytes(request, draft.outcomes, evidence),
                deadline,
                metadata,
            )
        answer = await self.resolver.resolve_hypotheses(
            convert.hypotheses_request(request, draft.outcomes, scoped),
            deadline,
            metadata,
            no_paths,
        )
        if answer.base == summary_of(base):
            return answer
        _log.warning(
            "hypothesis_scope_mismatch",
            subject=request.subject,
            predicate=request.predicate,
            scoped_claims=len(scoped.claims),
        )
        return await self.resolver.resolve_hypotheses_bytes(
            convert.hypotheses_request_bytes(request, draft.outcomes, evidence), deadline, metadata
        )
