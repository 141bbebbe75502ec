"""The outcomes guessed before any resolution: a superset of the draft's when nothing is
excluded, and no guess where guessing would not pay."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from google.protobuf import json_format

from assay.services.planner.domain.model import PlanInput
from assay.services.planner.domain.plan import draft_plan
from assay.services.planner.domain.probes import CATALOGUE
from assay.services.planner.wire import convert
from assay.services.planner.wire.foreseen_outcomes import (
    MAX_GUESSED_VALUES,
    guess_outcomes,
    match_key,
)
from assay.services.resolver.adapters.rpcs import ResolverRpcs
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY, Policy
from assay.services.resolver.use_cases.resolve import Resolver
from assay.v1 import claim_pb2
from assay.v1 import planner_service_pb2 as pb

SOURCES = ("test_result", "vcs_state", "api_spec", "ci_status", "llm_inference")


def request_of(seed: int) -> pb.PlanEvidenceRequest:
    """Claims about the target, all active (no relation, nothing rejected)."""
    rng = random.Random(seed)
    request = pb.PlanEvidenceRequest(subject="s", predicate="p")
    for i in range(rng.randrange(0, 30)):
        claim = request.evidence.claims.add(
            id=f"c{i}" if rng.random() < 0.8 else "",
            subject="s",
            predicate="p",
            source=rng.choice(SOURCES),
            source_ref=rng.choice(("", "a", "b")),
            correlation_group=rng.choice(("", "", "g1", "g2")),
            confidence=round(rng.uniform(0.2, 1.0), 2),
        )
        choices: list[Any] = ["x", "y", 3.5, False, {"k": 1}]
        json_format.ParseDict(rng.choice(choices), claim.value)
        if rng.random() < 0.7:
            claim.observe_time.seconds = 1000 + rng.randrange(1000)
    if rng.random() < 0.5:
        request.as_of.seconds = 2000
        request.stale_after.seconds = rng.choice((100, 1500))
    return request


def draft_of(request: pb.PlanEvidenceRequest) -> tuple[PlanInput, list[object]]:
    """The draft over the real resolver's base (in process, no server)."""
    resolver = ResolverRpcs(Resolver(Policy()))
    answer = resolver.resolve_semantic(convert.semantic_request(request))
    stale = convert.stale_refs(request)
    plan_input = PlanInput(
        subject="s",
        predicate="p",
        resolution=convert.resolution(answer.resolution, with_members=bool(stale)),
        reliability=DEFAULT_RELIABILITY,
        stale_refs=stale,
    )
    return plan_input, list(draft_plan(plan_input).outcomes)


def test_the_guess_covers_every_outcome_a_plan_needs() -> None:
    """Over 200 generated requests with every claim active, each draft outcome (every
    candidate's, whatever the gaps) has its hypothesis among the guessed ones."""
    needed = 0
    for seed in range(200):
        request = request_of(seed)
        guessed = guess_outcomes(request, CATALOGUE, convert.stale_refs(request))
        assert guessed is not None
        keys = {match_key(o) for o in guessed}
        assert len(keys) == len(guessed)
        _, outcomes = draft_of(request)
        needed += len(outcomes)
        assert {match_key(o) for o in outcomes} <= keys  # type: ignore[arg-type]
        with_supersession = [o for o in guessed if o.supersedes]
        assert all(set(o.supersedes) <= convert.stale_refs(request) for o in with_supersession)
    assert needed


def test_no_guess_for_claims_about_other_semantics_or_many_values() -> None:
    request = request_of(3)
    request.evidence.claims.add(subject="other", predicate="p", source="api_spec")
    assert guess_outcomes(request, CATALOGUE, frozenset()) is None
    many = pb.PlanEvidenceRequest(subject="s", predicate="p")
    for i in range(MAX_GUESSED_VALUES + 1):
        claim = many.evidence.claims.add(subject="s", predicate="p", source="api_spec")
        claim.value.number_value = i
    assert guess_outcomes(many, CATALOGUE, frozenset()) is None
    del many.evidence.claims[-1]
    assert guess_outcomes(many, CATALOGUE, frozenset()) is not None


def test_rejected_claims_and_unknown_sources_are_left_out() -> None:
    """A rejected claim's value and group are not guessed; with the resolver's table known,
    a probe whose source it lacks is not either."""
    request = pb.PlanEvidenceRequest(subject="s", predicate="p")
    kept = request.evidence.claims.add(subject="s", predicate="p", source="test_result")
    kept.value.string_value = "x"
    gone = request.evidence.claims.add(
        subject="s", predicate="p", source="test_result", correlation_group="aaa"
    )
    gone.value.string_value = "y"
    gone.review_status = claim_pb2.REVIEW_STATUS_REJECTED
    guessed = guess_outcomes(request, CATALOGUE, frozenset())
    assert guessed is not None
    assert {o.value for o in guessed} == {"x", "assay:unclaimed-value"}
    assert {o.correlation_group for o in guessed if o.source == "test_result"} == {"test_result|"}
    table = {k: v for k, v in DEFAULT_RELIABILITY.items() if k != "human_review"}
    partial = guess_outcomes(request, CATALOGUE, frozenset(), table)
    assert partial is not None
    assert "human_review" not in {o.source for o in partial}


class TestGuessedValueKeys:
    """A guessed value is keyed by the resolver's own rule, never a spelling of the planner's."""

    @pytest.mark.parametrize(
        "value",
        [
            "x",
            "ü\u2028",
            3,
            3.0,
            -0.0,
            1e-07,
            1e21,
            True,
            {"b": 1, "a": [1.5, True, None]},
            [],
        ],
    )
    def test_the_guessed_key_is_the_resolvers(self, value: Any) -> None:
        """The guessed outcome for a claimed value carries the ``value_key`` the resolver
        reports for that value (``1`` and ``1.0`` one key, object keys sorted)."""
        request = pb.PlanEvidenceRequest(subject="s", predicate="p")
        claim = request.evidence.claims.add(
            id="c0", subject="s", predicate="p", source="test_result", confidence=0.9
        )
        json_format.ParseDict(value, claim.value)
        guessed = guess_outcomes(request, CATALOGUE, frozenset())
        assert guessed is not None
        resolver = ResolverRpcs(Resolver(Policy()))
        answer = resolver.resolve_semantic(convert.semantic_request(request))
        [reported] = [v.value_key for v in answer.resolution.values]
        keys = {o.value_key for o in guessed if o.value != "assay:unclaimed-value"}
        assert keys == {reported}

    @pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
    def test_a_number_json_cannot_carry_is_not_guessed(self, number: float) -> None:
        """A claim whose value has no key (NaN, an infinity) makes no guess, so the plan
        resolves first and the resolver refuses the claim by its field."""
        request = pb.PlanEvidenceRequest(subject="s", predicate="p")
        claim = request.evidence.claims.add(subject="s", predicate="p", source="test_result")
        claim.value.list_value.values.add().number_value = number
        assert guess_outcomes(request, CATALOGUE, frozenset()) is None
