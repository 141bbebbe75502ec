"""Safety review, rationale flags and deterministic output of a resolution."""

from __future__ import annotations

import random

import pytest

from assay.v1 import claim_pb2
from tests.unit.resolver.resolver_factories import (
    CONFLICTED,
    DISCOUNTED,
    SAFE,
    SINGLE,
    STALE,
    SUBJECT,
    UNSAFE,
    UNVERIFIED,
    claim,
    resolve,
    resolve_evidence,
)


class TestSafety:
    def test_safety_conflict_requires_review(self) -> None:
        """A conflicted safety-sensitive predicate sets requires_review and is listed."""
        claims = [
            claim("key", predicate=UNSAFE, source_ref="x", confidence=0.8),
            claim("none", predicate=UNSAFE, source_ref="y", confidence=0.7),
        ]
        response = resolve_evidence(claims)
        (result,) = response.resolutions
        assert result.status == CONFLICTED
        assert result.safety_sensitive
        assert result.requires_review
        assert [(k.subject, k.predicate) for k in response.conflicted_safety_predicates] == [
            (SUBJECT, UNSAFE)
        ]

    def test_plain_conflict_does_not_require_review(self) -> None:
        """A conflict on a predicate that is not safety-sensitive needs no review flag."""
        claims = [claim("a", source_ref="x"), claim("b", source_ref="y")]
        result = resolve(claims, SAFE)
        assert result.status == CONFLICTED
        assert not result.safety_sensitive
        assert not result.requires_review

    def test_resolved_safety_predicate_needs_no_review(self) -> None:
        """Safety-sensitive but resolved: flagged sensitive, no review."""
        result = resolve([claim("key", predicate=UNSAFE)], UNSAFE)
        assert result.safety_sensitive
        assert not result.requires_review

    def test_coverage_is_weakest_confidence(self) -> None:
        """coverage_confidence is the minimum per-semantic confidence."""
        response = resolve_evidence(
            [
                claim("a", predicate="p1", confidence=0.9),
                claim("a", predicate="p2", confidence=0.4),
            ]
        )
        assert response.coverage_confidence == pytest.approx(0.4)
        assert resolve_evidence([]).coverage_confidence == 0.0


class TestRationale:
    def test_all_support_discounted_on(self) -> None:
        """Every counted leader claim below reliability 0.5."""
        claims = [
            claim("a", source="llm_inference", source_ref="x"),
            claim("a", source="generated_mock", source_ref="y"),
        ]
        assert DISCOUNTED in resolve(claims).rationale

    def test_all_support_discounted_off(self) -> None:
        """One trustworthy counted claim clears the flag."""
        claims = [
            claim("a", source="llm_inference", source_ref="x"),
            claim("a", source="test_result", source_ref="y"),
        ]
        assert DISCOUNTED not in resolve(claims).rationale

    def test_all_support_discounted_uses_the_claims_reliability(self) -> None:
        """A claim that lowers its own reliability below 0.5 is discounted too."""
        assert DISCOUNTED in resolve([claim("a", reliability=0.4)]).rationale

    def test_single_source_corroboration_on(self) -> None:
        """Several leader claims, one correlation group."""
        claims = [claim("a", id=f"c{i}", source_ref="same") for i in range(3)]
        assert list(resolve(claims).rationale) == [SINGLE]

    @pytest.mark.parametrize("refs", [["only"], ["x", "y"]])
    def test_single_source_corroboration_off(self, refs: list[str]) -> None:
        """One claim, or several groups: no single-source flag."""
        claims = [claim("a", source_ref=ref, group=ref) for ref in refs]
        assert SINGLE not in resolve(claims).rationale

    def test_independence_unverified_on(self) -> None:
        """Several groups, some defaulted."""
        claims = [claim("a", source_ref="x", group="declared"), claim("a", source_ref="y")]
        assert list(resolve(claims).rationale) == [UNVERIFIED]

    def test_independence_unverified_off_when_all_declared(self) -> None:
        """Every group declared: independence is the caller's explicit statement."""
        claims = [claim("a", group="g1"), claim("a", group="g2")]
        assert list(resolve(claims).rationale) == []

    def test_flags_only_describe_the_leader(self) -> None:
        """A weak runner-up's weaknesses are not the leader's."""
        claims = [
            claim("a", group="g1", confidence=1.0),
            claim("b", source="generated_mock", source_ref="m"),
            claim("b", source="generated_mock", source_ref="m", confidence=0.5),
        ]
        assert list(resolve(claims).rationale) == []

    def test_no_flags_without_a_leader(self) -> None:
        """INSUFFICIENT has no rationale."""
        assert list(resolve([]).rationale) == []

    @pytest.mark.parametrize(
        ("observed", "stale"),
        [
            ([100, 200], True),  # both before the horizon (1000 - 500 = 500)
            ([100, 600], False),  # one fresh counted claim
            ([None, 100], True),  # no observe_time: never fresh
            ([500, 500], False),  # exactly at the horizon is not older than it
        ],
    )
    def test_stale_support(self, observed: list[int | None], stale: bool) -> None:
        """STALE_SUPPORT when every counted leader claim is older than as_of - stale_after."""
        claims = [
            claim("a", id=f"c{i}", source_ref=f"r{i}", group=f"g{i}", observed=t)
            for i, t in enumerate(observed)
        ]
        result = resolve(claims, as_of={"seconds": 1000}, stale_after={"seconds": 500})
        assert (STALE in result.rationale) is stale

    def test_stale_support_needs_the_request_fields(self) -> None:
        """Without as_of and stale_after nothing is judged stale."""
        assert STALE not in resolve([claim("a", observed=1)]).rationale

    def test_stale_support_only_counts_counted_claims(self) -> None:
        """A fresh but weaker member of the same group does not make the leader fresh."""
        claims = [
            claim("a", id="old", source_ref="r", confidence=0.9, observed=1),
            claim("a", id="new", source_ref="r", confidence=0.5, observed=999),
        ]
        result = resolve(claims, as_of={"seconds": 1000}, stale_after={"seconds": 10})
        assert STALE in result.rationale


class TestDeterminism:
    def test_byte_identical_output(self) -> None:
        """Two calls with the same request serialize to the same bytes."""
        claims = [
            claim({"b": [1, 2], "a": "x"}, source_ref="1"),
            claim("a", id="c1", predicate=UNSAFE, source="ci_status", source_ref="2"),
            claim("b", id="c2", predicate=UNSAFE, supersedes="c1", confidence=0.3),
            claim("a", predicate="other", status=claim_pb2.REVIEW_STATUS_REJECTED),
        ]
        first = resolve_evidence(claims).SerializeToString(deterministic=True)
        second = resolve_evidence(claims).SerializeToString(deterministic=True)
        assert first == second

    def test_permutations_give_identical_bytes(self) -> None:
        """Claim order never shows in the result."""
        claims = [
            claim(value, id=f"c{i}" if i % 2 else "", source=source, source_ref=ref, confidence=c)
            for i, (value, source, ref, c) in enumerate(
                [
                    ("a", "test_result", "r1", 0.5),
                    ("a", "test_result", "r1", 0.5),
                    ("b", "ci_status", "r2", 0.7),
                    ("a", "vcs_state", "r3", 0.2),
                    ("b", "generated_mock", "r4", 0.9),
                ]
            )
        ]
        expected = resolve_evidence(claims).SerializeToString(deterministic=True)
        rng = random.Random(3)
        for _ in range(10):
            shuffled = claims[:]
            rng.shuffle(shuffled)
            assert resolve_evidence(shuffled).SerializeToString(deterministic=True) == expected
