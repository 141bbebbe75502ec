"""The hypothesis scope against the real resolver: scoping never changes the target's resolution.

The planner sends ResolveHypotheses only the claims that can affect the target
semantic. This drives the resolver's own servicer (in process, no network: it
does not use the call context) with random evidence full of cross-semantic
supersessions, rejected superseders, dangling targets and cycles, and checks
the target's resolution over the scope equals the one over everything.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.services.planner.adapters.resolver_client import summary_of
from assay.services.planner.wire import convert, scope
from assay.services.resolver.service import make_servicer
from assay.v1 import claim_pb2, planner_service_pb2
from assay.v1 import resolver_service_pb2 as rpb

RESOLVER = make_servicer()
SUBJECTS = ("s", "x")
PREDICATES = ("p", "q")
SOURCES = ("api_spec", "runtime_trace", "test_result", "generated_mock")


@st.composite
def evidences(draw: st.DrawFn) -> planner_service_pb2.PlanEvidenceRequest:
    count = draw(st.integers(min_value=0, max_value=12))
    request = planner_service_pb2.PlanEvidenceRequest(subject="s", predicate="p")
    for i in range(count):
        claim = request.evidence.claims.add(
            id=f"c{i}",
            subject=draw(st.sampled_from(SUBJECTS)),
            predicate=draw(st.sampled_from(PREDICATES)),
            source=draw(st.sampled_from(SOURCES)),
            source_ref=draw(st.sampled_from(("r1", "r2"))),
            confidence=draw(st.sampled_from((0.3, 0.6, 0.9))),
            review_status=draw(st.sampled_from((0, 1, 3))),
        )
        claim.value.string_value = draw(st.sampled_from(("a", "b")))
        if draw(st.booleans()):
            claim.correlation_group = draw(st.sampled_from(("g1", "g2")))
        if draw(st.integers(0, 2)) == 0:
            claim.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
            claim.relation.target_claim_id = f"c{draw(st.integers(0, count + 1))}"
        elif draw(st.integers(0, 3)) == 0:
            claim.id = ""  # content-addressed, and so never a relation target
    return request


def run(coro: object) -> object:
    return asyncio.new_event_loop().run_until_complete(coro)  # type: ignore[arg-type]


class TestTargetScope:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(evidences())
    def test_scope_resolves_the_target_exactly_as_the_full_evidence(
        self, request: planner_service_pb2.PlanEvidenceRequest
    ) -> None:
        """Over the scope, the resolver's base resolution of the target is the full one."""
        full = run(RESOLVER.ResolveSemantic(convert.semantic_request(request), None))
        scoped = run(
            RESOLVER.ResolveHypotheses(
                rpb.ResolveHypothesesRequest(
                    evidence=scope.target_scope(request), subject="s", predicate="p"
                ),
                None,
            )
        )
        assert isinstance(full, rpb.ResolveSemanticResponse)
        assert isinstance(scoped, rpb.ResolveHypothesesResponse)
        assert convert.resolution(scoped.base) == convert.resolution(full.resolution)
        assert [e.claim_ref for e in scoped.base.excluded] == [
            e.claim_ref for e in full.resolution.excluded
        ]

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(evidences())
    def test_the_planners_summary_check_accepts_every_correct_scope(
        self, request: planner_service_pb2.PlanEvidenceRequest
    ) -> None:
        """The check the planner makes (scoped SUMMARY base = summary of the full base)
        holds whenever scoping is right, so it never forces a needless second call."""
        full = run(RESOLVER.ResolveSemantic(convert.semantic_request(request), None))
        scoped = run(
            RESOLVER.ResolveHypotheses(
                convert.hypotheses_request(request, (), scope.target_scope(request)), None
            )
        )
        assert isinstance(full, rpb.ResolveSemanticResponse)
        assert isinstance(scoped, rpb.ResolveHypothesesResponse)
        assert scoped.base == summary_of(full.resolution)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(evidences(), st.booleans())
    def test_all_about_target_says_whether_any_claim_is_elsewhere(
        self, request: planner_service_pb2.PlanEvidenceRequest, only_target: bool
    ) -> None:
        """The count taken from the full resolution is True exactly when every claim,
        reviewed out and superseded ones included, is about the target."""
        if only_target:
            for claim in request.evidence.claims:
                claim.subject, claim.predicate = "s", "p"
        full = run(RESOLVER.ResolveSemantic(convert.semantic_request(request), None))
        assert isinstance(full, rpb.ResolveSemanticResponse)
        everything = all((c.subject, c.predicate) == ("s", "p") for c in request.evidence.claims)
        assert scope.all_about_target(request, full.resolution) is everything
