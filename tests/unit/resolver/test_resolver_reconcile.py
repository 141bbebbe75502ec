"""Reconcile decisions and hypotheses: resolving "the evidence plus these claims"."""

from __future__ import annotations

from typing import ClassVar

import pytest

from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.resolver_factories import (
    SAFE,
    SUBJECT,
    UNSAFE,
    calls,
    claim,
    evidence,
    resolve,
    support_of,
)

AUTO = pb.RECONCILE_DECISION_AUTO_APPLY
REVIEW = pb.RECONCILE_DECISION_REQUIRES_REVIEW


def reconcile(base: list[claim_pb2.Claim], *proposals: claim_pb2.Claim) -> pb.ReconcileResponse:
    return calls().reconcile(pb.ReconcileRequest(evidence=evidence(base), proposals=proposals))


def decision(base: list[claim_pb2.Claim], proposal: claim_pb2.Claim) -> tuple[int, int]:
    (outcome,) = reconcile(base, proposal).outcomes
    return outcome.decision, outcome.reason


RESOLVED_KEY = [claim("key", predicate=UNSAFE, source_ref="a", confidence=0.9)]
CONFLICTED_KEY = [
    claim("key", predicate=UNSAFE, source_ref="a", confidence=0.6),
    claim("none", predicate=UNSAFE, source_ref="b", confidence=0.5),
]


class TestReconcile:
    @pytest.mark.parametrize(
        ("base", "proposal", "expected"),
        [
            (
                [claim("a", source_ref="x")],
                claim("b", source_ref="y", confidence=1.0),
                (AUTO, pb.RECONCILE_REASON_NOT_SAFETY_SENSITIVE),
            ),
            (
                RESOLVED_KEY,
                claim("key", predicate=UNSAFE, source_ref="c", confidence=0.5),
                (AUTO, pb.RECONCILE_REASON_SAFETY_RESOLVED_UNCHANGED),
            ),
            (
                CONFLICTED_KEY,
                claim("key", predicate=UNSAFE, source_ref="c", confidence=1.0),
                (REVIEW, pb.RECONCILE_REASON_SAFETY_CONFLICTED_BEFORE),
            ),
            (
                RESOLVED_KEY,
                claim("none", predicate=UNSAFE, source_ref="c", confidence=0.8),
                (REVIEW, pb.RECONCILE_REASON_SAFETY_CONFLICTED_AFTER),
            ),
            (
                [claim("key", predicate=UNSAFE, source_ref="a", confidence=0.3)],
                claim(
                    "none", predicate=UNSAFE, source="human_review", source_ref="c", confidence=1.0
                ),
                (REVIEW, pb.RECONCILE_REASON_SAFETY_LEADER_CHANGED),
            ),
            (
                [],
                claim("key", predicate=UNSAFE, confidence=1.0),
                (REVIEW, pb.RECONCILE_REASON_SAFETY_LEADER_CHANGED),
            ),
        ],
        ids=["not-safety", "unchanged", "conflicted-before", "conflicted-after", "leader", "first"],
    )
    def test_decisions(
        self, base: list[claim_pb2.Claim], proposal: claim_pb2.Claim, expected: tuple[int, int]
    ) -> None:
        """A safety predicate is never auto-loosened; everything else auto-applies."""
        assert decision(base, proposal) == expected

    def test_each_proposal_is_judged_alone(self) -> None:
        """Two proposals that would conflict together are each fine on their own."""
        response = reconcile(
            RESOLVED_KEY,
            claim("key", predicate=UNSAFE, source_ref="p1", confidence=0.4),
            claim("key", predicate=UNSAFE, source_ref="p2", confidence=0.4),
        )
        assert [o.decision for o in response.outcomes] == [AUTO, AUTO]

    def test_outcome_carries_before_after_and_ref(self) -> None:
        """Each outcome names the proposal and shows its semantic before and after."""
        proposal = claim("none", id="p", predicate=UNSAFE, source_ref="c", confidence=0.8)
        (outcome,) = reconcile(RESOLVED_KEY, proposal).outcomes
        assert outcome.claim_ref == "p"
        assert outcome.before.status == 1
        assert outcome.after.status == 2
        assert len(outcome.after.values) == 2
        assert len(outcome.before.values) == 1

    def test_cross_semantic_supersession_is_judged_too(self) -> None:
        """Superseding a safety claim from another predicate still requires review."""
        base = [claim("key", id="k", predicate=UNSAFE, confidence=0.9)]
        proposal = claim("x", id="p", predicate=SAFE, supersedes="k")
        assert decision(base, proposal) == (REVIEW, pb.RECONCILE_REASON_SAFETY_LEADER_CHANGED)

    def test_rejected_proposal_changes_nothing(self) -> None:
        """A reviewed-out proposal leaves the leader as it was."""
        proposal = claim(
            "none", predicate=UNSAFE, confidence=1.0, status=claim_pb2.REVIEW_STATUS_REJECTED
        )
        assert decision(RESOLVED_KEY, proposal) == (
            AUTO,
            pb.RECONCILE_REASON_SAFETY_RESOLVED_UNCHANGED,
        )


def hypotheses(
    base: list[claim_pb2.Claim], *extra: list[claim_pb2.Claim], predicate: str = SAFE
) -> pb.ResolveHypothesesResponse:
    request = pb.ResolveHypothesesRequest(
        evidence=evidence(base), subject=SUBJECT, predicate=predicate
    )
    for i, claims in enumerate(extra):
        request.hypotheses.add(label=f"h{i}", claims=claims)
    return calls().resolve_hypotheses(request)


class TestHypotheses:
    BASE: ClassVar[list[claim_pb2.Claim]] = [claim("a", id="a1", source_ref="x", confidence=0.6)]

    def test_base_equals_resolve_semantic(self) -> None:
        """The base resolution is exactly what ResolveSemantic returns."""
        response = hypotheses(self.BASE)
        assert response.base == resolve(self.BASE)
        assert list(response.hypotheses) == []

    def test_each_hypothesis_is_base_plus_its_claims(self) -> None:
        """Hypotheses are independent of each other and echoed in order with labels."""
        response = hypotheses(
            self.BASE,
            [claim("b", source_ref="y", confidence=1.0)],
            [],
            [claim("a", source_ref="z", confidence=0.5)],
        )
        assert [h.label for h in response.hypotheses] == ["h0", "h1", "h2"]
        flipped, same, stronger = (h.resolution for h in response.hypotheses)
        assert flipped.leader.value_key == '"b"'
        assert flipped.status == 1
        assert same == response.base
        assert support_of(stronger)['"a"'] == pytest.approx(1 - 0.4 * 0.5)
        assert len(stronger.values) == 1  # h0's claim did not leak into h2

    def test_hypothesis_may_supersede_base_claims(self) -> None:
        """A hypothesis claim's relation reaches into the base evidence."""
        response = hypotheses(self.BASE, [claim("b", id="h", supersedes="a1", confidence=0.2)])
        result = response.hypotheses[0].resolution
        assert [e.claim_ref for e in result.excluded] == ["a1"]
        assert result.leader.value_key == '"b"'

    def test_hypothesis_may_resolve_a_dangling_base_relation(self) -> None:
        """A base relation to an id only the hypothesis has is in force under it."""
        base = [claim("a", id="a1", supersedes="later")]
        response = hypotheses(base, [claim("b", id="later")])
        assert [w.code for w in response.base.warnings] == [1]  # dangling in the base
        result = response.hypotheses[0].resolution
        assert [e.claim_ref for e in result.excluded] == ["later"]
        assert list(result.warnings) == []

    def test_claims_about_other_semantics_do_not_count(self) -> None:
        """A hypothesis claim about another predicate leaves the target alone."""
        response = hypotheses(self.BASE, [claim("b", predicate="other", confidence=1.0)])
        assert response.hypotheses[0].resolution == response.base


class TestHypothesisStaleness:
    def test_fresh_hypothesis_claim_clears_stale_support(self) -> None:
        """Hypothesis claims are looked up by their own index when judging staleness."""
        request = pb.ResolveHypothesesRequest(
            evidence=evidence([claim("a", id="old", observed=10)]),
            subject=SUBJECT,
            predicate=SAFE,
        )
        request.as_of.seconds = 1000
        request.stale_after.seconds = 100
        request.hypotheses.add(claims=[claim("a", id="new", source_ref="n", observed=990)])
        request.hypotheses.add(claims=[claim("a", id="older", source_ref="o", observed=5)])
        response = calls().resolve_hypotheses(request)
        stale = 4  # RATIONALE_FLAG_STALE_SUPPORT
        assert stale in response.base.rationale
        assert stale not in response.hypotheses[0].resolution.rationale
        assert stale in response.hypotheses[1].resolution.rationale
