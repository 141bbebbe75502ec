"""The resolver's use cases called on domain values: asks in, resolutions out, no messages.

The asks are built from plain claims (``domain.plain_claims``), so these tests need no
protobuf; the served path's reading of a request into an ask is tested through
``ResolverRpcs`` elsewhere.
"""

from __future__ import annotations

import pytest

from assay.errors import InvalidArgument, Reason
from assay.services.resolver.domain import plain_claims as plain
from assay.services.resolver.domain.asks import (
    EvidenceAsk,
    HypothesesAsk,
    Hypothesis,
    Proposal,
    ReconcileAsk,
    SemanticAsk,
)
from assay.services.resolver.domain.model import Decision, Intake
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.domain.request_cost import MAX_CLAIM_RESOLUTIONS
from assay.services.resolver.use_cases.resolve import Resolver
from assay.services.resolver.use_cases.stop import Abandoned, Stop

SEM = ("api:payments.create", "http.method")


def claims(*values: str, start: int = 0) -> list[plain.PlainClaim]:
    return [
        plain.PlainClaim(*SEM, value, "human_review", 0.9, id=f"c{start + i}")
        for i, value in enumerate(values)
    ]


def intake(found: list[plain.PlainClaim]) -> Intake:
    return plain.intake_of(found, DEFAULT_POLICY.reliability)


class TestResolverUseCases:
    def test_semantic_is_the_domain_resolution(self) -> None:
        """ResolveSemantic's use case answers what the plain rules answer."""
        found = claims("GET", "GET", "POST")
        ask = SemanticAsk(SEM, intake(found), None, full=True)
        assert Resolver(DEFAULT_POLICY).semantic(ask) == plain.resolve_one(found, SEM)

    def test_evidence_adds_up_its_resolutions(self) -> None:
        """Every semantic, sorted, with coverage and the conflicted safety semantics."""
        found = claims("GET")
        answer = Resolver(DEFAULT_POLICY).evidence(EvidenceAsk(intake(found), None, full=False))
        assert answer.resolutions == plain.resolve_all(found)
        assert answer.coverage == answer.resolutions[0].confidence
        assert answer.conflicted_safety == []

    def test_hypotheses_are_resolved_only_as_read(self) -> None:
        """The base comes at once; each hypothesis is resolved when its answer is read, so a
        writer that stops reading (a response over budget) stops the work there."""
        stop = Stop()
        ask = HypothesesAsk(
            SEM,
            intake(claims("GET")),
            (Hypothesis("h0", intake(claims("POST", start=9))),),
            None,
            full=True,
            base_full=True,
        )
        answer = Resolver(DEFAULT_POLICY).hypotheses(ask, stop)
        assert answer.base.leader is not None
        stop.cancel()
        with pytest.raises(Abandoned):
            next(answer.hypotheses)

    def test_reconcile_judges_each_proposal_as_read(self) -> None:
        """Outcomes carry the proposal's ref and are judged lazily, like hypotheses."""
        base = intake(claims("GET"))
        proposal = Proposal("c9", SEM, intake(claims("GET", start=9)))
        [outcome] = Resolver(DEFAULT_POLICY).reconcile(ReconcileAsk(base, (proposal,)))
        assert (outcome.claim_ref, outcome.decision) == ("c9", Decision.AUTO_APPLY)
        stop = Stop()
        outcomes = Resolver(DEFAULT_POLICY).reconcile(ReconcileAsk(base, (proposal,)), stop)
        stop.cancel()
        with pytest.raises(Abandoned):
            next(outcomes)

    def test_hypotheses_are_charged_before_any_is_resolved(self) -> None:
        """Too many claim resolutions are refused by the call itself, nothing resolved."""
        many = intake(claims(*["GET"] * 1000))
        count = MAX_CLAIM_RESOLUTIONS // 1000
        ask = HypothesesAsk(
            SEM,
            many,
            tuple(Hypothesis(f"h{i}", Intake()) for i in range(count)),
            None,
            full=False,
            base_full=False,
        )
        with pytest.raises(InvalidArgument) as caught:
            Resolver(DEFAULT_POLICY).hypotheses(ask)
        assert caught.value.reason is Reason.REQUEST_TOO_EXPENSIVE
