"""PlanEvidence and ListProbes through real servers: resolver and planner, both on port 0."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from assay.runtime.status import decode_rpc_error
from assay.services.planner.domain.probes import CATALOGUE
from assay.services.resolver import service as resolver_service
from assay.v1 import claim_pb2, plan_pb2, planner_service_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as rpb
from tests.service.planner_harness import WatchingResolver, both, example

P = plan_pb2


def fusion_calls(calls: list[str]) -> list[str]:
    """The resolution calls, without the reliability table fetched once per TTL beside them."""
    return [c for c in calls if c != "GetResolverPolicy"]


@dataclass
class BaseDetailWatcher(WatchingResolver):
    """Also records each ResolveHypotheses call's ``base_detail``."""

    base_details: list[int] = field(default_factory=list)

    async def ResolveHypotheses(self, request: Any, context: Any) -> Any:
        self.base_details.append(request.base_detail)
        # The watching (calls, details, request ids) as for every other method.
        return await WatchingResolver.__getattr__(self, "ResolveHypotheses")(request, context)


async def plan_of(
    stub: object, request: planner_service_pb2.PlanEvidenceRequest
) -> planner_service_pb2.PlanEvidenceResponse:
    reply: planner_service_pb2.PlanEvidenceResponse = await stub.PlanEvidence(  # type: ignore[attr-defined]
        request, timeout=10
    )
    return reply


class TestPlanEvidence:
    async def test_conflicted_safety_predicate_under_a_read_only_policy(self) -> None:
        """A conflicted safety predicate: a conflict gap, review flagged, a reachable review."""
        async with both() as (stub, _):
            reply = await plan_of(stub, example("safety-conflict-read-only.json"))
        plan = reply.plan
        assert plan.outcome == P.PLAN_OUTCOME_ACQUISITION_RECOMMENDED
        assert plan.resolution_status == reply.resolution.status
        assert plan.requires_review
        assert [g.kind for g in plan.gaps] == [P.GAP_KIND_UNRESOLVED_CONFLICT]
        assert any(
            c.probe == P.PROBE_KIND_HUMAN_REVIEW and c.availability == P.AVAILABILITY_AVAILABLE
            for c in plan.candidates
        )
        order = [c.probe for c in plan.candidates]
        assert order.index(P.PROBE_KIND_HUMAN_REVIEW) < order.index(P.PROBE_KIND_RERUN_TEST)
        rerun = next(c for c in plan.candidates if c.probe == P.PROBE_KIND_RERUN_TEST)
        assert rerun.availability == P.AVAILABILITY_REQUIRES_APPROVAL
        assert list(rerun.missing_grants) == [
            P.SIDE_EFFECT_CLASS_FILESYSTEM_WRITE_WORKTREE,
            P.SIDE_EFFECT_CLASS_PROCESS_SPAWN,
        ]
        assert all(c.discrimination != P.DISCRIMINATION_UNSPECIFIED for c in plan.candidates)
        assert all(
            c.outcome_assumption != P.OUTCOME_ASSUMPTION_UNSPECIFIED for c in plan.candidates
        )

    async def test_a_person_could_flip_a_conflict(self) -> None:
        """The resolver says a plausible human review outcome changes the leader: HIGH, and
        the candidate names that outcome's value."""
        async with both() as (stub, _):
            reply = await plan_of(stub, example("safety-conflict-read-only.json"))
        plan = reply.plan
        review = next(c for c in plan.candidates if c.probe == P.PROBE_KIND_HUMAN_REVIEW)
        assert review.discrimination == P.DISCRIMINATION_HIGH
        assert review.discrimination_basis in (
            P.DISCRIMINATION_BASIS_LEADER_CHANGED,
            P.DISCRIMINATION_BASIS_STATUS_CHANGED,
        )
        assert review.outcome_value_key in {v.value_key for v in reply.resolution.values}

    async def test_capability_gap_without_a_note(self) -> None:
        """An unsupported process result surfaces as a gap and blocks the runtime probes."""
        async with both() as (stub, _):
            plan = (await plan_of(stub, example("capability-gap.json"))).plan
        gap_ids = [g.gap_id for g in plan.gaps]
        assert "unobservable_signal/process_result" in gap_ids
        assert "all_support_discounted" in gap_ids
        blocked = {c.candidate_id: c for c in plan.unavailable}
        assert blocked["rerun_test/process_result"].target_signal_availability == (
            P.SIGNAL_AVAILABILITY_UNSUPPORTED
        )
        assert blocked["query_ci_status/process_result"].availability_reason == (
            P.AVAILABILITY_REASON_SIGNAL_NOT_OBSERVABLE
        )

    async def test_empty_graph_is_no_evidence_at_all(self) -> None:
        """No claims, no notes: NO_EVIDENCE_AT_ALL, and a first observation flips the status."""
        async with both() as (stub, _):
            plan = (await plan_of(stub, example("empty-graph.json"))).plan
        assert [g.kind for g in plan.gaps] == [P.GAP_KIND_NO_EVIDENCE_AT_ALL]
        assert plan.leader_support_band == P.SUPPORT_BAND_NONE
        assert {c.discrimination for c in [*plan.candidates, *plan.unavailable]} == {
            P.DISCRIMINATION_HIGH
        }

    async def test_corroborated_predicate_has_no_gap(self) -> None:
        """Two declared groups, no flags, nothing missing: NO_GAP_IDENTIFIED, no candidates."""
        async with both() as (stub, _):
            plan = (await plan_of(stub, example("corroborated.json"))).plan
        assert plan.outcome == P.PLAN_OUTCOME_NO_GAP_IDENTIFIED
        assert list(plan.gaps) == []
        assert list(plan.candidates) == []

    async def test_any_claim_order_gives_a_byte_identical_plan(self) -> None:
        """Shuffled claims (and notes) give the same bytes, plan and resolution alike."""
        base = example("capability-gap.json")
        extra = example("safety-conflict-read-only.json").evidence.claims
        base.evidence.claims.extend(extra)
        outputs = set()
        rng = random.Random(7)
        async with both() as (stub, _):
            for _ in range(5):
                request = planner_service_pb2.PlanEvidenceRequest()
                request.CopyFrom(base)
                claims = list(request.evidence.claims)
                rng.shuffle(claims)
                del request.evidence.claims[:]
                request.evidence.claims.extend(claims)
                reply = await plan_of(stub, request)
                outputs.add(reply.SerializeToString(deterministic=True))
        assert len(outputs) == 1

    async def test_one_hypotheses_call_per_plan(self) -> None:
        """Fusion is one resolver call: the base in full, and in summary one hypothesis per
        distinct outcome any plan over these claims may weigh: per probe source of the
        catalogue, each claimed value, plus an unclaimed one for a fresh observation."""
        watcher = BaseDetailWatcher(resolver_service.make_servicer())
        request = example("capability-gap.json")
        async with both(watcher) as (stub, _):
            reply = await stub.PlanEvidence(
                request, timeout=10, metadata=(("x-request-id", "r-1"),)
            )
        assert fusion_calls(watcher.calls) == ["ResolveHypotheses"]
        values = len({c.value.SerializeToString() for c in request.evidence.claims})
        assert values == len(reply.resolution.values)
        sources = {p.expected_source for p in CATALOGUE.values()}
        per_source = {s: values + (s != "human_review" or not values) for s in sources}
        assert watcher.hypotheses_per_call == [sum(per_source.values())]
        everything = [*reply.plan.candidates, *reply.plan.unavailable]
        assert len({c.expected_source_kind for c in everything}) < len(everything)
        assert set(watcher.request_ids) == {"r-1"}
        assert watcher.details == [rpb.RESOLUTION_DETAIL_SUMMARY]
        assert watcher.base_details == [rpb.RESOLUTION_DETAIL_FULL]

    async def test_the_caller_still_gets_the_full_resolution(self) -> None:
        """Hypotheses are asked for in summary; the base the caller receives is complete."""
        request = example("safety-conflict-read-only.json")
        async with both(WatchingResolver(resolver_service.make_servicer())) as (stub, _):
            reply = await plan_of(stub, request)
        assert reply.resolution.values
        assert all(v.claims and v.groups for v in reply.resolution.values)

    async def test_passes_the_remaining_deadline_to_the_resolver(self) -> None:
        """The resolver sees a deadline no later than the planner's caller set."""
        watcher = WatchingResolver(resolver_service.make_servicer())
        async with both(watcher) as (stub, _):
            await stub.PlanEvidence(example("empty-graph.json"), timeout=3)
        assert all(t is not None and 0 < t < 3 for t in watcher.time_remaining)


class TestPlanEvidenceBadInput:
    @pytest.mark.parametrize(
        ("mutate", "reason", "field"),
        [
            (lambda r: setattr(r, "subject", ""), "ERROR_REASON_INVALID_FIELD", "subject"),
            (
                lambda r: r.missing_signals.add(availability=2),
                "ERROR_REASON_INVALID_FIELD",
                "missing_signals[0].signal_class",
            ),
            (
                lambda r: r.policy.granted_side_effects.append(0),
                "ERROR_REASON_INVALID_FIELD",
                "policy.granted_side_effects[2]",
            ),
            (
                lambda r: setattr(r.evidence.claims[1], "confidence", 1.5),
                "ERROR_REASON_INVALID_CLAIM",
                "evidence.claims[1].confidence",
            ),
            (
                lambda r: setattr(r.evidence.claims[0], "source", "crystal_ball"),
                "ERROR_REASON_UNKNOWN_SOURCE",
                "evidence.claims[0].source",
            ),
            (
                lambda r: r.stale_after.FromSeconds(60),
                "ERROR_REASON_INVALID_FIELD",
                "as_of",
            ),
        ],
        ids=["subject", "note-class", "grant", "confidence", "source", "stale-without-as-of"],
    )
    async def test_invalid_argument_names_the_field(
        self, mutate: object, reason: str, field: str
    ) -> None:
        """Planner and resolver violations alike: INVALID_ARGUMENT, reason, planner field path."""
        request = example("safety-conflict-read-only.json")
        mutate(request)  # type: ignore[operator]
        async with both() as (stub, _):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(request, timeout=10)
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.INVALID_ARGUMENT
        assert decoded.reason == reason
        assert field in [v.field for v in decoded.violations]


class TestListProbes:
    async def test_lists_the_catalogue_in_probe_kind_order(self) -> None:
        """All six probes, with sources, side effects and bands."""
        async with both() as (stub, _):
            reply = await stub.ListProbes(planner_service_pb2.ListProbesRequest(), timeout=5)
        assert [p.kind for p in reply.probes] == list(range(1, 7))
        human = reply.probes[-1]
        assert (human.expected_source_kind, list(human.required_side_effects)) == (
            "human_review",
            [],
        )
        assert reply.next_page_token == ""

    async def test_pages(self) -> None:
        """page_size 4 gives four probes and a token that yields the other two."""
        async with both() as (stub, _):
            first = await stub.ListProbes(
                planner_service_pb2.ListProbesRequest(page_size=4), timeout=5
            )
            second = await stub.ListProbes(
                planner_service_pb2.ListProbesRequest(
                    page_size=4, page_token=first.next_page_token
                ),
                timeout=5,
            )
        assert [len(first.probes), len(second.probes)] == [4, 2]
        assert second.next_page_token == ""

    @pytest.mark.parametrize(
        ("request_fields", "reason", "field"),
        [
            ({"page_size": -1}, "ERROR_REASON_INVALID_FIELD", "page_size"),
            ({"page_token": "garbage"}, "ERROR_REASON_INVALID_PAGE_TOKEN", "page_token"),
        ],
    )
    async def test_bad_input_is_invalid_argument(
        self, request_fields: dict[str, object], reason: str, field: str
    ) -> None:
        """Bad page size or token: INVALID_ARGUMENT with the reason and field."""
        async with both() as (stub, _):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ListProbes(
                    planner_service_pb2.ListProbesRequest(**request_fields),  # type: ignore[arg-type]
                    timeout=5,
                )
        decoded = decode_rpc_error(caught.value)
        assert (decoded.code, decoded.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
        assert [v.field for v in decoded.violations] == [field]


def _wrong_status(base: resolution_pb2.SemanticResolution) -> None:
    base.status = resolution_pb2.RESOLUTION_STATUS_INSUFFICIENT


def _exclusion_lost(base: resolution_pb2.SemanticResolution) -> None:
    """What a scope missing a superseder gives: the superseded claim is not excluded."""
    del base.excluded[:]


def _support_nudged(base: resolution_pb2.SemanticResolution) -> None:
    """A counted claim missing from the scope: the same leader, a slightly other support."""
    base.values[0].support = math.nextafter(base.values[0].support, 0.0)


class TamperingResolver(WatchingResolver):
    """Answers the first ResolveHypotheses with a wrong base, as a stale scoping rule would."""

    def __init__(
        self, inner: Any, tamper: Callable[[resolution_pb2.SemanticResolution], None]
    ) -> None:
        super().__init__(inner)
        self.tamper = tamper

    async def ResolveHypotheses(self, request: Any, context: Any) -> Any:
        self.calls.append("ResolveHypotheses")
        reply = await self.inner.ResolveHypotheses(request, context)
        if isinstance(reply, bytes):  # the servicer sends what it serialized as it is
            reply = rpb.ResolveHypothesesResponse.FromString(reply)
        if self.calls.count("ResolveHypotheses") == 1:
            self.tamper(reply.base)
        return reply


def spread_request() -> planner_service_pb2.PlanEvidenceRequest:
    """The conflict example plus claims about other semantics, one of which supersedes."""
    request = example("safety-conflict-read-only.json")
    for i in range(30):
        request.evidence.claims.add(
            id=f"other-{i}",
            subject=f"api:other-{i}",
            predicate="idempotency.mode",
            source="api_spec",
            confidence=0.8,
        ).value.string_value = "key"
    superseder = request.evidence.claims.add(
        id="fix-trace",
        subject="api:payments.create",
        predicate="idempotency.notes",
        source="documentation",
        confidence=0.5,
    )
    superseder.value.string_value = "trace was from a misconfigured staging"
    superseder.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
    superseder.relation.target_claim_id = "trace-idem"
    return request


class TestHypothesisScope:
    async def test_scoped_hypotheses_give_the_full_evidence_plan(self) -> None:
        """Scoping the hypotheses to the target changes nothing: a cross-semantic
        supersession still applies, and the plan equals the one over full evidence."""
        request = spread_request()
        watcher = WatchingResolver(resolver_service.make_servicer())
        async with both(watcher) as (stub, _):
            reply = await plan_of(stub, request)
        assert fusion_calls(watcher.calls) == ["ResolveSemantic", "ResolveHypotheses"]
        assert reply.resolution.status == resolution_pb2.RESOLUTION_STATUS_RESOLVED
        assert [e.claim_ref for e in reply.resolution.excluded] == ["trace-idem"]
        assert [g.kind for g in reply.plan.gaps] == [P.GAP_KIND_UNCORROBORATED]

    @pytest.mark.parametrize("tamper", [_wrong_status, _exclusion_lost, _support_nudged])
    async def test_a_mismatched_scope_falls_back_to_the_full_evidence(
        self, tamper: Callable[[resolution_pb2.SemanticResolution], None]
    ) -> None:
        """If the scoped base ever differs, even only in an exclusion or in the last bit of
        a support, the call is repeated over everything."""
        request = spread_request()
        async with both(WatchingResolver(resolver_service.make_servicer())) as (stub, _):
            expected = await plan_of(stub, request)
        tampering = TamperingResolver(resolver_service.make_servicer(), tamper)
        async with both(tampering) as (stub, _):
            reply = await plan_of(stub, request)
        assert fusion_calls(tampering.calls) == [
            "ResolveSemantic",
            "ResolveHypotheses",
            "ResolveHypotheses",
        ]
        assert reply.SerializeToString(deterministic=True) == expected.SerializeToString(
            deterministic=True
        )
