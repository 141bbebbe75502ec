"""Does the planner's ranking acquire better evidence than simple policies? A simulation.

Not a test: a script (``python bench/planner_policy.py [--scenarios N] [--seed S ...]``)
that runs a real resolver and a real planner in this process on loopback and plays
generated scenarios. Each has a hidden true value for one semantic and starting claims
from sources that report the truth with their reliability (the resolver's table) and
otherwise a wrong value: some conflicted (two sources disagree), some single-source, some
stale (one old test run, with ``as_of`` / ``stale_after``). A policy acquires one probe
at a time; the probe's source reports the truth with its reliability, that report is
added as a claim (its own declared correlation group, observed now), and the semantic is
re-resolved, until the resolver decides (RESOLVED with STRONG support, >= 0.8) or the
budget runs out.

Policies: the planner's ranking (its first candidate not yet acquired, under a policy
granting everything), cheapest-first (cost band, then latency), a fixed order (the
seed's authored constants: one discrimination and independence for every probe, less the
authored penalties), random, and ``none`` (acquire nothing: what every policy gets for
free). What makes the comparison fair:

- every policy has the same budget, pays the same price per probe (the planner's own
  ``ranking.COST_UNITS``: LOW 1, MEDIUM 3, HIGH 10), sees the same outcome stream per
  scenario, and stops at the same resolver decision;
- the contract's rule that a person decides a conflicted safety predicate (the resolver's
  ``requires_review``: HUMAN_REVIEW first) binds every policy in the main table, since it
  is a constraint on any acquisition, not part of the ranking under test. A second table
  lets the baselines ignore it (the planner cannot), for comparison;
- "per unit cost" is reported twice: all right resolutions / cost (which rewards doing
  nothing: ``none`` gets its right answers for free), and the right resolutions a policy
  adds over ``none`` per unit it spends (what its acquisitions bought).

One more row is not a baseline: random choice given, scenario by scenario, only what the
planner spent there ("random, planner's spend"), to show how much of random's wrong
count owes to its spending.

Printed side by side: share resolved to the true value, wrong resolutions, undecided,
wrong among decided, mean acquisition cost, and both per-cost figures. No pass/fail: it
reports.
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

from assay.runtime.logging import configure_logging
from assay.services.planner.domain.model import ProbeKind
from assay.services.planner.domain.probes import CATALOGUE, action_risk
from assay.services.planner.domain.ranking import COST_UNITS
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from assay.v1 import plan_pb2 as P
from assay.v1 import planner_service_pb2 as pb
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rgrpc
from tests.service.planner_harness import both

# The seed's authored penalties (the first release's), for the fixed-order baseline.
SEED_COST = {1: 0, 2: 6, 3: 15}
SEED_LATENCY = {1: 0, 2: 4, 3: 10}
SEED_RISK = {1: 0, 2: 1, 3: 5, 4: 10}
SEED_PRIVACY = {1: 0, 2: 3, 3: 8}

SUBJECT = "api:payments.create"
PREDICATES = ("http.method", "idempotency.mode")
VALUES = ("a", "b", "c")
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
            - SEED_COST[CATALOGUE[k].cost]
            - SEED_LATENCY[CATALOGUE[k].latency]
            - SEED_RISK[action_risk(CATALOGUE[k])]
            - SEED_PRIVACY[CATALOGUE[k].privacy]
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


async def run_policy(
    name: str,
    s: Scenario,
    planner: Any,
    resolver: Any,
    review_rule: bool = True,
    budget: int = BUDGET,
) -> tuple[str, int]:
    """(``right`` / ``wrong`` / ``undecided``, cost spent) for one policy on one scenario.

    ``review_rule``: a baseline acquires HUMAN_REVIEW first while the resolver says a
    person must decide, as the planner's ranking does. ``budget``: units it may spend
    (``MATCHED`` gets what the planner spent on the same scenario)."""
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
            if k not in used and spent + COST_UNITS[CATALOGUE[k].cost] <= budget
        ]
        if decided or not left or name == "none":
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
        elif review_rule and res.requires_review and ProbeKind.HUMAN_REVIEW in left:
            choice = ProbeKind.HUMAN_REVIEW
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


POLICIES = ("planner", "cheapest-first", "fixed order", "random", "none")
BASELINES = ("cheapest-first", "fixed order", "random")
# Random choice on a budget matched scenario by scenario: it may spend what the planner
# spent there (so nothing where the planner acquired nothing). Not a baseline of the
# target: it shows what random's wrong count owes to spending more.
MATCHED = "random, planner's spend"
Totals = dict[str, dict[str, int]]


async def simulate(scenarios: int, seed: int) -> tuple[Totals, Totals]:
    """Totals per policy with the review rule binding every policy, and for the baselines
    without it."""
    import grpc

    rng = random.Random(seed)
    plays = [generate(rng, i) for i in range(scenarios)]
    zero = {"right": 0, "wrong": 0, "undecided": 0, "cost": 0}
    ruled: Totals = {p: dict(zero) for p in (*POLICIES, MATCHED)}
    free: Totals = {p: dict(zero) for p in BASELINES}
    async with both() as (planner, running):
        channel = grpc.aio.insecure_channel(running.address)
        resolver = rgrpc.ResolverServiceStub(channel)
        for s in plays:
            runs = [(ruled, name, True) for name in POLICIES]
            runs += [(free, name, False) for name in BASELINES]
            planner_spent = BUDGET
            for totals, name, rule in runs:
                # Each policy sees the same outcome stream for the same scenario.
                s.rng.seed(f"{seed}/{s.claims[0]['id']}")
                result, cost = await run_policy(name, s, planner, resolver, rule)
                totals[name][result] += 1
                totals[name]["cost"] += cost
                if name == "planner":
                    planner_spent = cost
            s.rng.seed(f"{seed}/{s.claims[0]['id']}")
            result, cost = await run_policy(MATCHED, s, planner, resolver, True, planner_spent)
            ruled[MATCHED][result] += 1
            ruled[MATCHED]["cost"] += cost
        await channel.close()
    return ruled, free


def table(title: str, totals: Totals, scenarios: int, free_right: int) -> None:
    print(f"\n{title}")
    header = (
        ("right", 8),
        ("wrong", 7),
        ("undecided", 10),
        ("wrong/decided", 14),
        ("mean cost", 10),
        ("right/cost", 11),
        ("added/cost", 11),
    )
    print(f"{'policy':<24}" + "".join(f"{h:>{w}}" for h, w in header))
    for name, t in totals.items():
        mean_cost = t["cost"] / scenarios
        per = f"{t['right'] / t['cost']:.3f}" if t["cost"] else "-"
        added = f"{(t['right'] - free_right) / t['cost']:.3f}" if t["cost"] else "-"
        print(
            f"{name:<24}{t['right'] / scenarios:>8.1%}{t['wrong']:>7}{t['undecided']:>10}"
            f"{t['wrong'] / max(1, t['right'] + t['wrong']):>14.2%}"
            f"{mean_cost:>10.2f}{per:>11}{added:>11}"
        )


async def main(scenarios: int, seeds: list[int]) -> None:
    for seed in seeds:
        ruled, free = await simulate(scenarios, seed)
        free_right = ruled["none"]["right"]
        print(f"\n== {scenarios} scenarios, seed {seed}, budget {BUDGET} units ==")
        table("review rule binds every policy", ruled, scenarios, free_right)
        table("baselines ignore the review rule", free, scenarios, free_right)


if __name__ == "__main__":
    import logging

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--seed", type=int, nargs="+", default=[1])
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    # The services' own log lines (one per call, tens of thousands per seed) are structlog's,
    # which logging.disable does not reach: they flooded stdout and slowed the run.
    configure_logging("warning")
    asyncio.run(main(args.scenarios, args.seed))
