"""Does the planner's ranking acquire better evidence than simple policies? A simulation.

Not a test: a script (``python bench/planner_policy.py [--scenarios N] [--seed S]``) that
runs a real resolver and a real planner in this process on loopback and plays generated
scenarios. Each has a hidden true value for one semantic and starting claims from sources
that report the truth with their reliability (the resolver's table) and otherwise a wrong
value: some conflicted (two sources disagree), some single-source, some stale (one old
test run, with ``as_of`` / ``stale_after``). A policy acquires one probe at a time; the
probe's source reports the truth with its reliability, that report is added as a claim
(its own declared correlation group, observed now), and the semantic is re-resolved,
until the resolver decides (RESOLVED with STRONG support, >= 0.8) or the budget runs out.

Policies: the planner's ranking (its first candidate not yet acquired, under a policy
granting everything), cheapest-first (cost band, then latency), a fixed order (the
seed's authored constants: one discrimination and independence for every probe, less the
authored penalties), and random. Costs: LOW 1, MEDIUM 3, HIGH 10 units. Printed side by
side: share resolved to the true value, wrong resolutions, mean acquisition cost, and
correct resolutions per unit of cost. No pass/fail: it reports.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from google.protobuf import json_format

from assay.services.planner.model import CostBand, ProbeKind
from assay.services.planner.probes import CATALOGUE, action_risk
from assay.services.planner.ranking import (
    COST_PENALTY,
    LATENCY_PENALTY,
    PRIVACY_PENALTY,
    RISK_PENALTY,
)
from assay.services.resolver.policy import DEFAULT_RELIABILITY
from assay.v1 import plan_pb2 as P
from assay.v1 import planner_service_pb2 as pb
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rgrpc
from tests.service.planner_harness import both

SUBJECT = "api:payments.create"
PREDICATES = ("http.method", "idempotency.mode")
VALUES = ("a", "b", "c")
COST_UNITS = {CostBand.LOW: 1, CostBand.MEDIUM: 3, CostBand.HIGH: 10}
BUDGET = 14
DECIDED_SUPPORT = 0.8
AS_OF = "2026-06-01T00:00:00Z"
OLD = "2026-01-01T00:00:00Z"
STARTING_SOURCES = ("api_spec", "static_analysis", "documentation", "llm_inference", "test_result")
GRANT_ALL = {
    "grantedSideEffects": [n for n in P.SideEffectClass.keys() if "UNSPEC" not in n],  # noqa: SIM118
    "egressAllowed": True,
    "cloudSyncAllowed": True,
}
# The seed's authored heuristic: every probe the same discrimination (30) and
# independence (100%), plus a recency bonus (10), less the authored penalties.
SEED_ORDER = sorted(
    CATALOGUE,
    key=lambda k: (
        -(
            40
            - COST_PENALTY[CATALOGUE[k].cost]
            - LATENCY_PENALTY[CATALOGUE[k].latency]
            - RISK_PENALTY[action_risk(CATALOGUE[k])]
            - PRIVACY_PENALTY[CATALOGUE[k].privacy]
        ),
        k,
    ),
)


@dataclass
class Scenario:
    predicate: str
    truth: str
    claims: list[dict[str, Any]]
    stale: bool
    rng: random.Random = field(repr=False, default_factory=random.Random)


def report(rng: random.Random, truth: str, source: str) -> str:
    if rng.random() < DEFAULT_RELIABILITY[source]:
        return truth
    return rng.choice([v for v in VALUES if v != truth])


def generate(rng: random.Random, index: int) -> Scenario:
    truth = rng.choice(VALUES)
    predicate = rng.choice(PREDICATES)
    shape = rng.choice(("conflicted", "single", "stale"))
    claims: list[dict[str, Any]] = []

    def add(source: str, value: str, **extra: Any) -> None:
        claims.append(
            {
                "id": f"s{index}-{len(claims)}",
                "subject": SUBJECT,
                "predicate": predicate,
                "value": value,
                "source": source,
                "sourceRef": f"{source}-{len(claims)}",
                "confidence": round(rng.uniform(0.6, 0.95), 2),
                "observeTime": extra.pop("observe", AS_OF),
                **extra,
            }
        )

    if shape == "conflicted":
        first, second = rng.sample(STARTING_SOURCES, 2)
        add(first, report(rng, truth, first))
        add(second, rng.choice([v for v in VALUES if v != claims[0]["value"]]))
    elif shape == "single":
        source = rng.choice(STARTING_SOURCES)
        add(source, report(rng, truth, source))
    else:
        add("test_result", report(rng, truth, "test_result"), observe=OLD, correlationGroup="suite")
    return Scenario(predicate, truth, claims, shape == "stale", random.Random(rng.random()))


def plan_request(s: Scenario) -> pb.PlanEvidenceRequest:
    body: dict[str, Any] = {
        "subject": SUBJECT,
        "predicate": s.predicate,
        "evidence": {"claims": s.claims},
        "policy": GRANT_ALL,
    }
    if s.stale:
        body |= {"asOf": AS_OF, "staleAfter": f"{86400 * 30}s"}
    return json_format.ParseDict(body, pb.PlanEvidenceRequest())


async def run_policy(name: str, s: Scenario, planner: Any, resolver: Any) -> tuple[str, int]:
    """(``right`` / ``wrong`` / ``undecided``, cost spent) for one policy on one scenario."""
    claims = [dict(c) for c in s.claims]
    state = Scenario(s.predicate, s.truth, claims, s.stale)
    rng = random.Random(f"{name}/{s.claims[0]['id']}/{s.rng.random()}")
    outcome_rng = random.Random(s.rng.random())
    used: set[ProbeKind] = set()
    spent = 0
    while True:
        req = plan_request(state)
        resolved = await resolver.ResolveSemantic(
            rpb.ResolveSemanticRequest(
                subject=SUBJECT, predicate=state.predicate, evidence=req.evidence
            ),
            timeout=10,
        )
        res = resolved.resolution
        decided = res.status == 1 and res.leader.support >= DECIDED_SUPPORT
        left = [
            k
            for k in CATALOGUE
            if k not in used and spent + COST_UNITS[CATALOGUE[k].cost] <= BUDGET
        ]
        if decided or not left:
            if res.status != 1:
                return "undecided", spent
            right = res.leader.value_key == f'"{state.truth}"'
            return ("right" if right else "wrong"), spent
        if name == "planner":
            reply = await planner.PlanEvidence(req, timeout=10)
            ranked = [ProbeKind(c.probe) for c in reply.plan.candidates]
            choice = next((k for k in ranked if k in left), None)
            if choice is None:
                choice = min(left, key=lambda k: (COST_UNITS[CATALOGUE[k].cost], k))
        elif name == "cheapest-first":
            choice = min(left, key=lambda k: (CATALOGUE[k].cost, CATALOGUE[k].latency, k))
        elif name == "fixed order":
            choice = next(k for k in SEED_ORDER if k in left)
        else:
            choice = rng.choice(sorted(left))
        probe = CATALOGUE[choice]
        used.add(choice)
        spent += COST_UNITS[probe.cost]
        claims.append(
            {
                "id": f"acq-{len(claims)}",
                "subject": SUBJECT,
                "predicate": state.predicate,
                "value": report(outcome_rng, state.truth, probe.expected_source),
                "source": probe.expected_source,
                "correlationGroup": f"acquired/{probe.expected_source}",
                "confidence": 0.9,
                "observeTime": AS_OF,
            }
        )


POLICIES = ("planner", "cheapest-first", "fixed order", "random")


async def main(scenarios: int, seed: int) -> None:
    import grpc

    rng = random.Random(seed)
    plays = [generate(rng, i) for i in range(scenarios)]
    totals = {p: {"right": 0, "wrong": 0, "undecided": 0, "cost": 0} for p in POLICIES}
    async with both() as (planner, running):
        channel = grpc.aio.insecure_channel(running.address)
        resolver = rgrpc.ResolverServiceStub(channel)
        for s in plays:
            for name in POLICIES:
                # Each policy sees the same outcome stream for the same scenario.
                s.rng.seed(f"{seed}/{s.claims[0]['id']}")
                result, cost = await run_policy(name, s, planner, resolver)
                totals[name][result] += 1
                totals[name]["cost"] += cost
        await channel.close()
    print(f"\n{scenarios} scenarios, seed {seed}, budget {BUDGET} units")
    header = ("right", 8), ("wrong", 8), ("undecided", 10), ("mean cost", 11), ("right/cost", 12)
    print(f"{'policy':<16}" + "".join(f"{h:>{w}}" for h, w in header))
    for name in POLICIES:
        t = totals[name]
        mean_cost = t["cost"] / scenarios
        per = t["right"] / t["cost"] if t["cost"] else float("nan")
        print(
            f"{name:<16}{t['right'] / scenarios:>8.1%}{t['wrong']:>8}{t['undecided']:>10}"
            f"{mean_cost:>11.2f}{per:>12.3f}"
        )


if __name__ == "__main__":
    import logging

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    asyncio.run(main(args.scenarios, args.seed))
