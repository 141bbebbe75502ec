"""Per-semantic fusion: weights, correlation groups, noisy-OR, value keys and status."""

from __future__ import annotations

import math

import pytest

from assay.v1 import claim_pb2, resolution_pb2
from tests.unit.resolver.resolver_factories import (
    CONFLICTED,
    INSUFFICIENT,
    RESOLVED,
    UNSAFE,
    claim,
    resolve,
    resolve_evidence,
)


class TestStatus:
    @pytest.mark.parametrize(
        ("leader", "runner_up", "status"),
        [
            (0.7, 0.5, CONFLICTED),  # gap exactly 0.2 (0.19999999999999996 in floats)
            (0.7 + 1e-6, 0.5, RESOLVED),  # gap 0.2 + 1e-6
            (0.7 + 5e-10, 0.5, CONFLICTED),  # inside the 1e-9 tolerance
            (0.9, 0.5, RESOLVED),
            (0.5, 0.5, CONFLICTED),
            (0.9, 0.0, RESOLVED),  # a zero-weight competitor is still beyond the margin
        ],
    )
    def test_margin_boundary(self, leader: float, runner_up: float, status: int) -> None:
        """A competitor within CONFLICT_MARGIN (inclusive, 1e-9 tolerance) conflicts."""
        result = resolve(
            [
                claim("a", source_ref="x", confidence=leader),
                claim("b", source_ref="y", confidence=runner_up),
            ]
        )
        assert result.status == status

    def test_single_value_resolves(self) -> None:
        """One value with support is RESOLVED, however weak."""
        result = resolve([claim("a", source="generated_mock", confidence=0.1)])
        assert result.status == RESOLVED
        assert result.leader.value_key == '"a"'
        assert result.confidence == pytest.approx(0.03)

    def test_no_claims_is_insufficient(self) -> None:
        """No active claims: INSUFFICIENT, no leader, confidence 0."""
        result = resolve([])
        assert result.status == INSUFFICIENT
        assert not result.HasField("leader")
        assert result.confidence == 0.0
        assert list(result.values) == []

    def test_only_rejected_claims_is_insufficient(self) -> None:
        """Reviewed-out claims do not count."""
        result = resolve([claim("a", id="c1", status=claim_pb2.REVIEW_STATUS_REJECTED)])
        assert result.status == INSUFFICIENT
        assert [e.claim_ref for e in result.excluded] == ["c1"]
        assert result.excluded[0].reason == resolution_pb2.EXCLUSION_REASON_REVIEWED_OUT

    @pytest.mark.parametrize(
        ("first", "second", "leader"),
        [("b", "a", '"a"'), ("a", "b", '"a"'), (10, 9, "10"), (True, False, "false")],
    )
    def test_ties_break_by_value_key(self, first: object, second: object, leader: str) -> None:
        """Equal support: the lowest canonical key leads (string order, not numeric)."""
        result = resolve(
            [
                claim(first, source_ref="x", confidence=0.5),
                claim(second, source_ref="y", confidence=0.5),
            ]
        )
        assert result.leader.value_key == leader
        assert next(v.value_key for v in result.values) == leader
        assert result.status == CONFLICTED


class TestWeights:
    def test_effective_weight_is_confidence_times_reliability(self) -> None:
        """Rule 2: confidence × the source's reliability."""
        result = resolve([claim("a", id="c1", source="test_result", confidence=0.8)])
        weight = result.values[0].claims[0]
        assert weight.reliability == 0.85
        assert weight.effective_weight == pytest.approx(0.68)
        assert result.values[0].support == pytest.approx(0.68)

    def test_reliability_above_the_source_is_capped(self) -> None:
        """A claim cannot raise its source's reliability: the table caps it, with a warning."""
        result = resolve(
            [claim("a", id="c1", source="generated_mock", reliability=0.99, confidence=1.0)]
        )
        assert result.values[0].claims[0].reliability == 0.3
        assert result.values[0].support == pytest.approx(0.3)
        assert [(w.code, w.claim_ref) for w in result.warnings] == [
            (resolution_pb2.WARNING_CODE_RELIABILITY_CAPPED, "c1")
        ]

    def test_reliability_below_the_source_is_kept(self) -> None:
        """A claim may lower its reliability; no warning then."""
        result = resolve([claim("a", source="human_review", reliability=0.1, confidence=1.0)])
        assert result.values[0].claims[0].reliability == 0.1
        assert result.values[0].support == pytest.approx(0.1)
        assert list(result.warnings) == []

    def test_explicit_zero_reliability_counts_as_zero(self) -> None:
        """An explicitly stated 0 is not 'unset': the claim weighs nothing."""
        result = resolve([claim("a", reliability=0.0, confidence=1.0)])
        assert result.values[0].support == 0.0

    def test_ten_claims_from_one_mock_count_once(self) -> None:
        """Same source and source_ref: one correlation group, only the strongest counts."""
        claims = [
            claim("a", id=f"c{i}", source="generated_mock", source_ref="mock.json", confidence=0.9)
            for i in range(10)
        ]
        value = resolve(claims).values[0]
        assert value.support == pytest.approx(0.27)
        assert len(value.groups) == 1
        assert sum(c.counted for c in value.claims) == 1
        assert list(value.counted_claim_refs) == ["c0"]  # ties: lowest claim_ref

    def test_ten_mock_claims_from_different_refs_compound(self) -> None:
        """Different source_refs are different groups: noisy-OR compounds them."""
        claims = [
            claim("a", source="generated_mock", source_ref=f"mock{i}.json", confidence=0.9)
            for i in range(10)
        ]
        value = resolve(claims).values[0]
        assert value.support == pytest.approx(1 - (1 - 0.27) ** 10)
        assert len(value.groups) == 10

    def test_identical_claims_without_ids_count_once(self) -> None:
        """Byte-identical claims share a claim_ref and a group: still one vote."""
        twin = claim("a", source="test_result", source_ref="r")
        value = resolve([twin, twin]).values[0]
        assert value.support == pytest.approx(0.9 * 0.85)
        assert [c.counted for c in value.claims] == [True, False]
        assert value.claims[0].claim_ref == value.claims[1].claim_ref

    def test_declared_group_overrides_source_ref(self) -> None:
        """A declared correlation_group joins claims from different artifacts."""
        claims = [
            claim("a", source_ref="r1", group="run-7", confidence=0.6),
            claim("a", source_ref="r2", group="run-7", confidence=0.8),
        ]
        value = resolve(claims).values[0]
        assert value.support == pytest.approx(0.8)
        assert [(g.correlation_group, g.declared) for g in value.groups] == [("run-7", True)]

    def test_default_group_is_source_bar_ref(self) -> None:
        """Without a declared group, the group is source + "|" + source_ref, not declared."""
        value = resolve([claim("a", source="vcs_state", source_ref="git:abc")]).values[0]
        assert value.groups[0].correlation_group == "vcs_state|git:abc"
        assert value.groups[0].declared is False

    def test_two_predicates_never_corroborate(self) -> None:
        """A strong claim about one predicate leaves another predicate's support alone."""
        claims = [
            claim("a", predicate="exists", confidence=1.0, source_ref="x"),
            claim("a", predicate=UNSAFE, confidence=0.2, source_ref="y"),
        ]
        assert resolve(claims, UNSAFE).values[0].support == pytest.approx(0.2)
        response = resolve_evidence(claims)
        assert [(r.predicate, r.confidence) for r in response.resolutions] == [
            ("exists", 1.0),
            (UNSAFE, pytest.approx(0.2)),
        ]

    def test_two_subjects_never_corroborate(self) -> None:
        """The same predicate of another subject is another semantic."""
        claims = [
            claim("a", subject="s1", confidence=0.9, source_ref="x"),
            claim("a", subject="s2", confidence=0.3, source_ref="y"),
        ]
        assert resolve(claims, subject="s2").values[0].support == pytest.approx(0.3)

    def test_order_of_values_and_claims(self) -> None:
        """Values by support desc; claims and groups strongest first."""
        claims = [
            claim("b", id="b1", source_ref="1", confidence=0.3),
            claim("a", id="a1", source_ref="2", confidence=0.4),
            claim("a", id="a2", source_ref="3", confidence=0.6),
        ]
        result = resolve(claims)
        assert [v.value_key for v in result.values] == ['"a"', '"b"']
        assert [c.claim_ref for c in result.values[0].claims] == ["a2", "a1"]
        assert list(result.values[0].counted_claim_refs) == ["a2", "a1"]
        assert result.values[0].support == pytest.approx(1 - 0.4 * 0.6)

    def test_support_stays_within_unit_interval(self) -> None:
        """Many full-confidence groups saturate at 1, never above."""
        claims = [claim("a", source_ref=str(i), confidence=1.0) for i in range(50)]
        assert resolve(claims).values[0].support == 1.0


class TestValues:
    @pytest.mark.parametrize(
        ("first", "second"),
        [
            ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
            (1, 1.0),
            (0.0, -0.0),
            ([1, {"y": 2, "x": 1}], [1.0, {"x": 1, "y": 2}]),
        ],
    )
    def test_equal_values_group_together(self, first: object, second: object) -> None:
        """Canonical JSON decides sameness, not how the value was written."""
        result = resolve([claim(first, source_ref="x"), claim(second, source_ref="y")])
        assert len(result.values) == 1
        assert len(result.values[0].groups) == 2

    def test_value_is_emitted_from_its_key(self) -> None:
        """The value shown is the canonical one, whichever claim came first."""
        result = resolve([claim(-0.0, source_ref="x"), claim(0.0, source_ref="y")])
        assert result.values[0].value_key == "0"
        assert result.leader.value.number_value == 0.0
        assert math.copysign(1.0, result.leader.value.number_value) == 1.0

    @pytest.mark.parametrize(("data", "kind"), [([], "list_value"), ({}, "struct_value")])
    def test_empty_containers_are_values(self, data: object, kind: str) -> None:
        """An empty list or object is a value, and is emitted as one."""
        result = resolve([claim(data)])
        assert result.status == RESOLVED
        assert result.leader.value.WhichOneof("kind") == kind
        assert result.values[0].value.WhichOneof("kind") == kind
