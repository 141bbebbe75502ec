"""Properties that must hold for any evidence: order independence, bounds, monotonicity."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.services.resolver.domain import resolve as per_claim
from assay.services.resolver.domain.model import Staleness
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.wire.convert import violations
from assay.services.resolver.wire.intake import intake, source_table
from assay.v1 import claim_pb2
from tests.unit.resolver.resolver_factories import claim, resolve, resolve_evidence

SOURCES = sorted(DEFAULT_POLICY.reliability)
TABLE = source_table(DEFAULT_POLICY.reliability)
VALUES: list[Any] = ["a", "b", 1, 2.5, True, {"k": 1, "j": [1, 2]}, {"j": [1, 2], "k": 1.0}]
PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def claims(draw: st.DrawFn, max_size: int = 12, relations: bool = True) -> list[claim_pb2.Claim]:
    """Valid claims over two subjects x two predicates (one safety-sensitive)."""
    size = draw(st.integers(0, max_size))
    out = []
    for i in range(size):
        has_id = draw(st.booleans())
        target = None
        if relations and has_id and size > 1 and draw(st.integers(0, 4)) == 0:
            target = draw(st.sampled_from([f"c{j}" for j in range(size)] + ["ghost"]))
        out.append(
            claim(
                draw(st.sampled_from(VALUES)),
                id=f"c{i}" if has_id else "",
                subject=draw(st.sampled_from(["s1", "s2"])),
                predicate=draw(st.sampled_from(["p", "idempotency.mode"])),
                source=draw(st.sampled_from(SOURCES)),
                source_ref=draw(st.sampled_from(["", "r1", "r2"])),
                confidence=draw(st.floats(0.0, 1.0)),
                reliability=draw(st.none() | st.floats(0.0, 1.0)),
                group=draw(st.none() | st.sampled_from(["g1", "g2"])),
                supersedes=target,
                status=draw(st.sampled_from([0, 1, 2, 3])) if relations else 0,
                observed=draw(st.none() | st.integers(0, 2000)),
            )
        )
    return out


class TestProperties:
    @PROFILE
    @given(claims(), st.randoms(use_true_random=False))
    def test_permutation_never_changes_the_result(self, found: list[Any], rng: Any) -> None:
        """The serialized response is identical for every order of the claims."""
        shuffled = found[:]
        rng.shuffle(shuffled)
        request: dict[str, Any] = {"as_of": {"seconds": 1500}, "stale_after": {"seconds": 600}}
        first = resolve_evidence(found, **request).SerializeToString(deterministic=True)
        second = resolve_evidence(shuffled, **request).SerializeToString(deterministic=True)
        assert first == second

    @PROFILE
    @given(claims())
    def test_support_stays_in_unit_interval(self, found: list[claim_pb2.Claim]) -> None:
        """Every support, weight and confidence is a number in [0, 1]."""
        response = resolve_evidence(found)
        for resolution in response.resolutions:
            assert 0.0 <= resolution.confidence <= 1.0
            for value in resolution.values:
                assert 0.0 <= value.support <= 1.0
                assert all(0.0 <= c.effective_weight <= 1.0 for c in value.claims)
        assert 0.0 <= response.coverage_confidence <= 1.0

    @PROFILE
    @given(claims(relations=False), st.sampled_from(VALUES), st.floats(0.0, 1.0), st.data())
    def test_adding_an_active_claim_never_lowers_its_values_support(
        self, found: list[claim_pb2.Claim], data: Any, confidence: float, draw: st.DataObject
    ) -> None:
        """Noisy-OR over strongest-per-group is monotone in the claims added."""
        extra = claim(
            data,
            id="extra",
            subject="s1",
            predicate="p",
            source=draw.draw(st.sampled_from(SOURCES)),
            source_ref=draw.draw(st.sampled_from(["", "r1", "r9"])),
            group=draw.draw(st.none() | st.sampled_from(["g1", "g9"])),
            confidence=confidence,
        )
        before = resolve(found, "p", "s1")
        after = resolve([*found, extra], "p", "s1")
        (key,) = {v.value_key for v in resolve([extra], "p", "s1").values}
        old = {v.value_key: v.support for v in before.values}.get(key, 0.0)
        new = {v.value_key: v.support for v in after.values}[key]
        assert new >= old or math.isclose(new, old, abs_tol=1e-15)


@st.composite
def maybe_invalid(draw: st.DrawFn) -> list[claim_pb2.Claim]:
    """Claims with every field drawn from valid and invalid choices."""
    out = []
    for i in range(draw(st.integers(1, 4))):
        made = claim(
            draw(st.sampled_from(["a", None, float("nan"), {"x": float("inf")}, 3])),
            id=draw(st.sampled_from(["", f"c{i}", "dup"])),
            subject=draw(st.sampled_from(["s", ""])),
            predicate=draw(st.sampled_from(["p", ""])),
            source=draw(st.sampled_from(["test_result", "", "oracle"])),
            confidence=draw(st.sampled_from([0.0, 0.5, 1.0, -0.1, 1.5, float("nan")])),
            reliability=draw(st.sampled_from([None, 0.0, 0.5, 2.0, float("nan")])),
            status=draw(st.sampled_from([0, 3, 7])),
        )
        kind = draw(st.sampled_from([None, 0, 1, 3, 9]))
        if kind is not None:
            made.relation.kind = claim_pb2.RelationKind.ValueType(kind)
            made.relation.target_claim_id = draw(st.sampled_from(["", "c0"]))
        observed = draw(st.sampled_from([None, (0, 0), (10, -1), (10, 10**9), (10**12, 0)]))
        if observed is not None:
            made.observe_time.seconds, made.observe_time.nanos = observed
        out.append(made)
    return out


class TestValidationParity:
    @settings(max_examples=300, deadline=None)
    @given(maybe_invalid())
    def test_intake_rejects_exactly_what_validation_explains(
        self, found: list[claim_pb2.Claim]
    ) -> None:
        """The fast intake and the slow validator never disagree."""
        explained = violations(found, "evidence.claims", DEFAULT_POLICY.reliability, {})
        assert (intake(found, TABLE) is None) == bool(explained)


class TestLayering:
    @PROFILE
    @given(
        claims(),
        st.lists(claims(max_size=4), min_size=1, max_size=3),
        st.sampled_from(["p", "idempotency.mode"]),
        st.booleans(),
        st.booleans(),
    )
    def test_layered_equals_full_recompute(
        self,
        base_claims: list[claim_pb2.Claim],
        extra_lists: list[list[claim_pb2.Claim]],
        predicate: str,
        base_first: bool,
        stale: bool,
    ) -> None:
        """Reusing the base's relations and supports for several extra lists in a row
        gives the same answer as redoing everything for each, whichever is asked first."""
        base = intake(base_claims, TABLE)
        assert base is not None
        staleness = (
            Staleness(horizon=1000.0, observed=_observed(base_claims, extra_lists))
            if stale
            else None
        )
        sem = ("s1", predicate)
        layered = per_claim.Layered(base, DEFAULT_POLICY, staleness)
        expected_base = per_claim.resolve_one((base,), sem, DEFAULT_POLICY, staleness)
        if base_first:
            assert layered.resolve(sem) == expected_base
        start = len(base_claims)
        for n, extra_claims in enumerate(extra_lists):
            for extra_claim in extra_claims:  # extra ids must not collide with the base's
                if extra_claim.id:
                    extra_claim.id = f"x{n}" + extra_claim.id
            extra = intake(extra_claims, TABLE, start, base.ids)
            assert extra is not None
            start += len(extra_claims)
            assert layered.resolve_with(extra, sem) == per_claim.resolve_one(
                (base, extra), sem, DEFAULT_POLICY, staleness
            )
        assert layered.resolve(sem) == expected_base


def _observed(
    base: list[claim_pb2.Claim], extras: list[list[claim_pb2.Claim]]
) -> Callable[[int], float | None]:
    """Observe times by request-wide index, as the servicer's claim index reads them."""
    every = [*base, *(c for extra in extras for c in extra)]

    def observed(index: int) -> float | None:
        found = every[index]
        return float(found.observe_time.seconds) if found.HasField("observe_time") else None

    return observed
