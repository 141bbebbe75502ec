"""What each resolver RPC does, on domain values: an ask in, resolutions out.

An ask (``domain.asks``) is a request read and validated already (``wire.asks``), so
nothing here sees a message or a violation of one. Each use case keeps within what one
request may cost: ResolveHypotheses and Reconcile, which repeat a resolution per
hypothesis or proposal, charge their claim resolutions before resolving anything
(``budget.charge``), then resolve one hypothesis or proposal at a time as their answer is
read, so the writer that counts the response (``wire.answers``) stops the work as soon as
the response passes its budget.

ResolveColumns is the exception: its claims arrive as one Arrow stream and leave as Arrow
bytes, and the bulk path (``columnar``) reads, resolves and writes them without a row or
a message per claim, so its use case takes the stream and returns the response's bytes.

A use case checks its ``Stop`` between hypotheses, proposals and groups of semantics;
what sets it, and where the work runs, is the servicer's business.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from assay.services.resolver.domain import reconcile, resolve
from assay.services.resolver.domain.asks import (
    ColumnsAsk,
    EvidenceAnswer,
    EvidenceAsk,
    HypothesesAnswer,
    HypothesesAsk,
    ReconcileAsk,
    SemanticAsk,
)
from assay.services.resolver.domain.model import Intake, ProposalOutcome, Resolution, SemKey
from assay.services.resolver.domain.policy import Policy
from assay.services.resolver.domain.request_cost import ColumnsLimits, charge
from assay.services.resolver.use_cases.stop import NEVER, Stop

if TYPE_CHECKING:  # the columnar path needs pyarrow (the `columnar` extra): imported when used
    from assay.services.resolver.columnar.input.bounds import Survey


class Resolver:
    """The resolver's use cases over one policy."""

    def __init__(self, policy: Policy, columns_limits: ColumnsLimits | None = None) -> None:
        """``columns_limits``: what one ResolveColumns stream may hold (the defaults when None)."""
        self.policy = policy
        self.columns_limits = columns_limits or ColumnsLimits()

    def semantic(self, ask: SemanticAsk, stop: Stop = NEVER) -> Resolution:
        """ResolveSemantic: one semantic, resolved once (nothing to prepare for layering)."""
        stop.check()
        resolution = resolve.resolve_one((ask.base,), ask.sem, self.policy, ask.staleness)
        stop.check()
        return resolution

    def evidence(self, ask: EvidenceAsk, stop: Stop = NEVER) -> EvidenceAnswer:
        """ResolveEvidence: every semantic present, sorted."""
        stop.check()
        resolutions = resolve.resolve_evidence(ask.base, self.policy, ask.staleness, stop.check)
        return EvidenceAnswer(
            resolutions, resolve.conflicted_safety(resolutions), resolve.coverage(resolutions)
        )

    def hypotheses(self, ask: HypothesesAsk, stop: Stop = NEVER) -> HypothesesAnswer:
        """ResolveHypotheses: charged at once, the base resolved, each hypothesis as read."""
        stop.check()
        layered = resolve.Layered(ask.base, self.policy, ask.staleness)
        about = layered.claims_about(ask.sem)
        count = len(ask.hypotheses)
        extra_claims = sum(h.claims.count for h in ask.hypotheses)
        charge(
            (count + 1) * about + extra_claims,
            "hypotheses",
            f"({count} hypotheses + 1) x {about:,} claims about the target "
            f"+ {extra_claims:,} hypothesis claims",
        )

        def each() -> Iterator[tuple[str, Resolution]]:
            for hypothesis in ask.hypotheses:
                stop.check()
                yield hypothesis.label, layered.resolve_with(hypothesis.claims, ask.sem)

        return HypothesesAnswer(layered.resolve(ask.sem), each())

    def reconcile(self, ask: ReconcileAsk, stop: Stop = NEVER) -> Iterator[ProposalOutcome]:
        """Reconcile: charged at once, then each proposal judged as its outcome is read."""
        stop.check()
        layered = resolve.Layered(ask.base, self.policy)
        judged_on = [reconcile.affected(p.sem, p.claims, ask.base) for p in ask.proposals]
        charge(
            sum(1 + sum(map(layered.claims_about, sems)) for sems in judged_on),
            "proposals",
            f"{len(judged_on)} proposals x (1 + the claims about the semantics each is judged on)",
        )
        before: dict[SemKey, Resolution] = {}

        def resolve_before(sem: SemKey) -> Resolution:
            if sem not in before:
                before[sem] = layered.resolve(sem)
            return before[sem]

        def each() -> Iterator[ProposalOutcome]:
            for proposal, sems in zip(ask.proposals, judged_on, strict=True):
                stop.check()
                after = partial(_after, layered, proposal.claims)
                decision, reason, old, new = reconcile.judge(sems, resolve_before, after)
                yield ProposalOutcome(proposal.claim_ref, decision, reason, old, new)

        return each()

    def columns(
        self,
        stream: bytes | memoryview,
        ask: ColumnsAsk,
        stop: Stop = NEVER,
        surveyed: Survey | None = None,
    ) -> bytes:
        """ResolveColumns: the response's bytes (``columnar.output.response``) for the
        claims of ``stream``, held to ``columns_limits``; ``surveyed`` is the stream's
        survey (``columnar.input.bounds``) when the caller made it already."""
        from assay.services.resolver.columnar import resolve_stream
        from assay.services.resolver.columnar.output.response import response_bytes

        answer = resolve_stream(
            stream,
            self.policy,
            ask.horizon,
            full=ask.full,
            problems=ask.problems,
            check=stop.check,
            limits=self.columns_limits,
            surveyed=surveyed,
        )
        stop.check()
        return response_bytes(answer)


def _after(layered: resolve.Layered, claims: Intake, sem: SemKey) -> Resolution:
    return layered.resolve_with(claims, sem)
