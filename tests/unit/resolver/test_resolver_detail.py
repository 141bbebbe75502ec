"""ResolveHypotheses at SUMMARY detail: exactly the documented fields left out, nothing else."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from assay.errors import Reason
from assay.services.planner.adapters.resolver_client import summary_of
from assay.v1 import claim_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.resolver_factories import (
    SUBJECT,
    UNSAFE,
    calls,
    claim,
    evidence,
    fields,
    invalid,
)
from tests.unit.resolver.test_resolver_properties import PROFILE, claims

FULL = pb.RESOLUTION_DETAIL_FULL
SUMMARY = pb.RESOLUTION_DETAIL_SUMMARY
# The oracle is the planner's own ``summary_of`` (full with the documented fields cleared):
# the planner relies on it equalling what SUMMARY returns, and this pins that too.


def hypotheses(
    base: list[claim_pb2.Claim],
    extras: list[list[claim_pb2.Claim]],
    detail: int,
    subject: str = "s1",
    predicate: str = "p",
    **request: Any,
) -> pb.ResolveHypothesesResponse:
    message = pb.ResolveHypothesesRequest(
        evidence=evidence(base),
        subject=subject,
        predicate=predicate,
        detail=pb.ResolutionDetail.ValueType(detail),
        **request,
    )
    for n, extra in enumerate(extras):
        message.hypotheses.add(label=f"h{n}", claims=extra)
    return calls().resolve_hypotheses(message)


def judged(resolution: resolution_pb2.SemanticResolution) -> tuple[Any, ...]:
    """What a caller judges a resolution by."""
    return (
        resolution.status,
        resolution.leader.SerializeToString(deterministic=True),
        [(v.value_key, v.support) for v in resolution.values],
        list(resolution.rationale),
        resolution.requires_review,
        resolution.confidence,
    )


def _renamed(extras: list[list[claim_pb2.Claim]]) -> list[list[claim_pb2.Claim]]:
    """Hypothesis ids that cannot collide with the base's (``c0``...) or each other's."""
    for n, extra in enumerate(extras):
        for item in extra:
            if item.id:
                item.id = f"h{n}{item.id}"
            target = item.relation.target_claim_id
            # Keep some relations pointing into the base, some inside the hypothesis.
            if item.HasField("relation") and target.startswith("c") and len(target) % 2:
                item.relation.target_claim_id = f"h{n}{target}"
    return extras


class TestSummaryProperty:
    @PROFILE
    @given(
        claims(),
        st.lists(claims(max_size=4), max_size=3),
        st.sampled_from(["p", "idempotency.mode"]),
        st.booleans(),
    )
    def test_summary_is_full_minus_the_documented_fields(
        self,
        base: list[claim_pb2.Claim],
        extras: list[list[claim_pb2.Claim]],
        predicate: str,
        stale: bool,
    ) -> None:
        """SUMMARY equals FULL with exactly the documented per-claim fields cleared, and
        status, leader, supports and flags are identical, for the base and every hypothesis."""
        extras = _renamed(extras)
        request: dict[str, Any] = (
            {"as_of": {"seconds": 1500}, "stale_after": {"seconds": 600}} if stale else {}
        )
        full = hypotheses(base, extras, FULL, predicate=predicate, **request)
        summary = hypotheses(base, extras, SUMMARY, predicate=predicate, **request)
        unspecified = hypotheses(
            base, extras, pb.RESOLUTION_DETAIL_UNSPECIFIED, predicate=predicate, **request
        )
        assert unspecified.SerializeToString(deterministic=True) == full.SerializeToString(
            deterministic=True
        )
        pairs = [(full.base, summary.base)] + [
            (f.resolution, s.resolution)
            for f, s in zip(full.hypotheses, summary.hypotheses, strict=True)
        ]
        assert [h.label for h in summary.hypotheses] == [h.label for h in full.hypotheses]
        for whole, short in pairs:
            assert short.SerializeToString(deterministic=True) == summary_of(
                whole
            ).SerializeToString(deterministic=True)
            assert judged(short) == judged(whole)


class TestSummaryFields:
    def evidence(self) -> tuple[list[claim_pb2.Claim], list[list[claim_pb2.Claim]]]:
        """A conflicted safety predicate with a reviewed-out claim, a superseded one, a
        capped reliability and a dangling relation: every per-claim field has content."""
        base = [
            claim("key", id="c1", predicate=UNSAFE, source="test_result", reliability=1.0),
            claim("key", id="c2", predicate=UNSAFE, source="api_spec", group="g"),
            claim("none", id="c3", predicate=UNSAFE, source="api_spec", source_ref="s"),
            claim("old", id="c4", predicate=UNSAFE, source="documentation"),
            claim("new", id="c5", predicate=UNSAFE, source="vcs_state", supersedes="c4"),
            claim("gone", id="c6", predicate=UNSAFE, source="test_result", status=3),
            claim("key", id="c7", predicate=UNSAFE, source="ci_status", supersedes="ghost"),
        ]
        extras = [[claim("none", predicate=UNSAFE, source="human_review", confidence=1.0)]]
        return base, extras

    def test_full_has_every_per_claim_field(self) -> None:
        """The fixture is not vacuous: FULL fills every field SUMMARY leaves out."""
        base, extras = self.evidence()
        response = hypotheses(base, extras, FULL, SUBJECT, UNSAFE)
        for resolution in (response.base, response.hypotheses[0].resolution):
            assert all(v.claims and v.groups and v.counted_claim_refs for v in resolution.values)
            assert [e.claim_ref for e in resolution.excluded] == ["c4", "c6"]
            assert all(e.HasField("claim") for e in resolution.excluded)
            assert {w.claim_ref for w in resolution.warnings} == {"c1", "c7"}

    def test_summary_leaves_out_exactly_the_documented_fields(self) -> None:
        """No claim weights, groups, counted refs, excluded bodies or warnings; everything
        else, including each exclusion's reference, reason and superseders, is kept."""
        base, extras = self.evidence()
        response = hypotheses(base, extras, SUMMARY, SUBJECT, UNSAFE)
        for resolution in (response.base, response.hypotheses[0].resolution):
            assert resolution.values
            for value in resolution.values:
                assert value.value_key
                assert value.HasField("value")
                assert value.support > 0
                assert not value.claims
                assert not value.groups
                assert not value.counted_claim_refs
            assert [
                (e.claim_ref, e.reason, list(e.superseded_by)) for e in resolution.excluded
            ] == [
                ("c4", resolution_pb2.EXCLUSION_REASON_SUPERSEDED, ["c5"]),
                ("c6", resolution_pb2.EXCLUSION_REASON_REVIEWED_OUT, []),
            ]
            assert not any(e.HasField("claim") for e in resolution.excluded)
            assert not resolution.warnings
            assert resolution.HasField("leader")
            assert resolution.safety_sensitive
        assert response.base.status == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        assert response.base.requires_review
        assert response.hypotheses[0].resolution.leader.value_key == '"none"'

    def test_summary_is_smaller(self) -> None:
        """The point of it: the response shrinks when a semantic has many claims."""
        base = [
            claim("key" if i % 2 else "none", id=f"c{i}", source_ref=f"r{i}") for i in range(200)
        ]
        extras = [[claim("key", source="test_result")], [claim("none", source="test_result")]]
        full = hypotheses(base, extras, FULL, SUBJECT, "http.method")
        summary = hypotheses(base, extras, SUMMARY, SUBJECT, "http.method")
        assert summary.ByteSize() * 20 < full.ByteSize()


class TestDetailValidation:
    def test_unknown_detail_is_invalid_field(self) -> None:
        """An unknown ResolutionDetail number names `detail`."""
        error = invalid(hypotheses, [claim()], [], 9, SUBJECT, "http.method")
        assert error.reason == Reason.INVALID_FIELD
        assert fields(error) == ["detail"]

    def test_reported_with_other_problems(self) -> None:
        """A bad detail is collected with the request's other violations, not alone."""
        error = invalid(hypotheses, [claim(source="oracle")], [], 9, "", "http.method")
        assert set(fields(error)) == {"subject", "detail", "evidence.claims[0].source"}
