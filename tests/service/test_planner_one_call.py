"""The one-call plan through real servers: the same plan as resolving first, in fewer calls.

The planner guesses every outcome a plan may weigh before anything is resolved
(``superset``) and sends them with the base in one ResolveHypotheses. The oracle is the
plan that resolves first and then weighs exactly its outcomes (the guess switched off):
the two must answer byte for byte alike, whatever the guess missed or refused.
"""

from __future__ import annotations

import random
from typing import Any

import grpc
import pytest

from assay.runtime.status import decode_rpc_error
from assay.services.planner.use_cases import plan_evidence as planner_servicer
from assay.services.resolver import service as resolver_service
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY, Policy
from assay.v1 import claim_pb2, plan_pb2
from assay.v1 import planner_service_pb2 as pb
from tests.service.planner_harness import WatchingResolver, both, example

SUBJECT, PREDICATE = "api:payments.create", "idempotency.mode"
SOURCES = ("test_result", "vcs_state", "api_spec", "runtime_trace", "llm_inference")


def fusion_calls(calls: list[str]) -> list[str]:
    return [c for c in calls if c != "GetResolverPolicy"]


def generated(seed: int) -> pb.PlanEvidenceRequest:
    """Claims about the target only (the one-call case): declared and defaulted groups,
    stale claims, supersessions and rejections (which the guess cannot foresee), values of
    several kinds, and notes, capabilities and grants."""
    rng = random.Random(seed)
    request = pb.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
    size = rng.randrange(0, 25)
    for i in range(size):
        claim = request.evidence.claims.add(
            subject=SUBJECT,
            predicate=PREDICATE,
            source=rng.choice(SOURCES),
            source_ref=rng.choice(("", "r1", "r2")),
            confidence=round(rng.uniform(0.3, 1.0), 2),
        )
        if rng.random() < 0.8:
            claim.id = f"c{i}"
        value = rng.choice(("key", "none", 2.0, True))
        if isinstance(value, str):
            claim.value.string_value = value
        elif isinstance(value, bool):
            claim.value.bool_value = value
        else:
            claim.value.number_value = value
        if rng.random() < 0.4:
            claim.correlation_group = rng.choice(("g1", "g2"))
        if rng.random() < 0.7:
            claim.observe_time.seconds = 1_790_000_000 + rng.randrange(-5000, 100)
        if rng.random() < 0.1:
            claim.review_status = claim_pb2.REVIEW_STATUS_REJECTED
        elif claim.id and i and rng.random() < 0.15:
            claim.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
            claim.relation.target_claim_id = f"c{rng.randrange(i)}"
    if rng.random() < 0.6:
        request.as_of.seconds = 1_790_000_100
        request.stale_after.seconds = rng.choice((60, 3000))
    request.missing_signals.add(
        signal_class=plan_pb2.SignalClass.ValueType(rng.randrange(1, 8)),
        availability=plan_pb2.SignalAvailability.ValueType(rng.randrange(1, 7)),
    )
    effects = [plan_pb2.SideEffectClass.ValueType(n) for n in range(1, 7)]
    request.policy.granted_side_effects.extend(rng.sample(effects, rng.randrange(4)))
    request.policy.egress_allowed = rng.random() < 0.5
    return request


async def plans(
    requests: list[pb.PlanEvidenceRequest], servicer: Any = None
) -> tuple[list[bytes], list[str]]:
    """Each request's PlanEvidenceResponse (serialized deterministically, as the planner
    does), and the resolver calls made."""
    watcher = WatchingResolver(servicer or resolver_service.make_servicer())
    async with both(watcher) as (stub, _):
        answers = [
            (await stub.PlanEvidence(r, timeout=10)).SerializeToString(deterministic=True)
            for r in requests
        ]
    return answers, fusion_calls(watcher.calls)


def no_guess(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner as it was: resolve first, then weigh exactly the draft's outcomes."""
    monkeypatch.setattr(planner_servicer, "guess_outcomes", lambda *_: None)


class TestOneCall:
    async def test_the_one_call_plan_is_the_resolve_first_plan(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The examples and 80 generated requests: the same bytes either way; most plans in
        one call, the rest (an exclusion the guess missed) in two ResolveHypotheses."""
        requests = [
            example(name)
            for name in (
                "capability-gap.json",
                "corroborated.json",
                "empty-graph.json",
                "safety-conflict-read-only.json",
            )
        ]
        requests += [generated(seed) for seed in range(80)]
        one_call, calls = await plans(requests)
        assert "ResolveSemantic" not in calls
        assert len(requests) < len(calls) < 2 * len(requests)  # some guesses missed
        no_guess(monkeypatch)
        resolve_first, old_calls = await plans(requests)
        assert old_calls.count("ResolveSemantic") == len(requests)
        assert one_call == resolve_first
        assert any(
            pb.PlanEvidenceResponse.FromString(a).plan.candidates for a in one_call
        )  # not only empty plans

    async def test_a_missed_outcome_is_weighed_in_a_second_call(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A stale claim already superseded is not among those a fresh re-run replaces: the
        guess (which cannot see supersession) is wrong there, and the plan asks again."""
        request = pb.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
        for i, (value, seconds) in enumerate((("key", 100), ("none", 200), ("none", 300))):
            claim = request.evidence.claims.add(
                id=f"c{i}",
                subject=SUBJECT,
                predicate=PREDICATE,
                source="test_result",
                correlation_group="ci-run",
                confidence=0.7,
            )
            claim.value.string_value = value
            claim.observe_time.seconds = 1_790_000_000 + seconds
        request.evidence.claims[2].relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
        request.evidence.claims[2].relation.target_claim_id = "c1"
        request.as_of.seconds = 1_790_100_000
        request.stale_after.seconds = 60
        request.policy.granted_side_effects.extend(
            [plan_pb2.SIDE_EFFECT_CLASS_FILESYSTEM_READ, plan_pb2.SIDE_EFFECT_CLASS_PROCESS_SPAWN]
        )
        one_call, calls = await plans([request])
        assert calls == ["ResolveHypotheses", "ResolveHypotheses"]
        no_guess(monkeypatch)
        resolve_first, _ = await plans([request])
        assert one_call == resolve_first
        plan = pb.PlanEvidenceResponse.FromString(one_call[0]).plan
        assert any(c.expected_source_kind == "test_result" for c in plan.candidates)

    async def test_spread_evidence_still_resolves_first(self) -> None:
        """A claim about another semantic: the hypotheses go over the target's scope, so
        the full base comes from its own call, as before."""
        request = example("safety-conflict-read-only.json")
        request.evidence.claims.add(
            subject="api:other", predicate=PREDICATE, source="api_spec", confidence=0.5
        ).value.string_value = "key"
        _, calls = await plans([request])
        assert calls == ["ResolveSemantic", "ResolveHypotheses"]

    async def test_a_guessed_probe_the_resolver_lacks_falls_back(self) -> None:
        """A table without 'replay_experiment' refuses the guessed replay outcomes; a plan
        that needs none of them (nothing to do) still plans, resolving first. Once the
        planner holds the table, it guesses only what the resolver can weigh: one call."""
        table = {k: v for k, v in DEFAULT_RELIABILITY.items() if k != "replay_experiment"}
        servicer = resolver_service.make_servicer(Policy(reliability=table, origin="test"))
        answers, calls = await plans([example("corroborated.json")] * 2, servicer)
        assert calls == ["ResolveHypotheses", "ResolveSemantic", "ResolveHypotheses"]
        assert answers[0] == answers[1]
        plan = pb.PlanEvidenceResponse.FromString(answers[0]).plan
        assert plan.outcome == plan_pb2.PLAN_OUTCOME_NO_GAP_IDENTIFIED

    async def test_bad_evidence_names_the_callers_field(self) -> None:
        """The one call's refusal is reported as resolving first reports it: the caller's
        field path, not the planner's own hypotheses."""
        request = example("capability-gap.json")
        request.evidence.claims[0].confidence = 1.5
        async with both() as (stub, _):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(request, timeout=10)
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in decoded.violations] == ["evidence.claims[0].confidence"]

    async def test_a_value_without_a_key_names_the_callers_field(self) -> None:
        """A claim holding NaN is not guessed (it has no value key): resolving first refuses
        it as INVALID_ARGUMENT naming the caller's claim, never INTERNAL."""
        request = example("capability-gap.json")
        request.evidence.claims[0].value.list_value.values.add().number_value = float("nan")
        async with both() as (stub, _):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PlanEvidence(request, timeout=10)
        decoded = decode_rpc_error(caught.value)
        assert decoded.code == grpc.StatusCode.INVALID_ARGUMENT
        [field] = [v.field for v in decoded.violations]
        assert field.startswith("evidence.claims[0].value")
