"""The ranking: expected value of sample information per unit of expected cost.

Each candidate has a value and a cost in points: ``value = round(EVSI_POINTS × EVSI)`` (the
expected change in the decision over every plausible outcome, ``value``), and ``cost`` from
its cost, latency, risk and privacy bands plus ``APPROVAL_PENALTY`` per approval still needed.
Once a probe kind is ``measured`` (enough recorded acquisitions), its observed latency band
replaces the declared one and the value is scaled by its success rate. Independence is
already in the value (a repeat of a counted group adds nothing): a tie-break, not a multiplier.

Candidates whose value exceeds their cost come first, by value per unit of cost (the greedy
rule for buying information on a budget); the rest follow by a score that separates what
EVSI cannot (``value + discrimination + recency + extra gaps − min(PENALTY_CAP, cost)``).
When the resolver says a person must decide, HUMAN_REVIEW is first whatever the policy
grants. Nothing here crosses the wire; ties break by independence, discrimination,
availability, cost, latency, then probe kind and signal class, so the order is total and
reproducible. The formulas are in docs/planner.md ("Ranking").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from assay.services.planner.domain.model import (
    ActionRisk,
    Candidate,
    CostBand,
    Discrimination,
    GapKind,
    LatencyBand,
    PrivacyExposure,
    ProbeKind,
    Recency,
)
from assay.services.planner.domain.probes import action_risk

# Points per unit of EVSI (a decision worth RIGHT_RESOLUTION = 1 gained for sure: 100).
EVSI_POINTS = 100
DISCRIMINATION_POINTS: Mapping[Discrimination, int] = {
    Discrimination.HIGH: 6,
    Discrimination.MEDIUM: 3,
    Discrimination.LOW: 0,
}
RECENCY_POINTS: Mapping[Recency, int] = {
    Recency.FRESH_OBSERVATION: 2,
    Recency.REVIEW_OF_RECORDED: 0,
}
# Extra, for a fresh observation that answers a STALE_SUPPORT gap.
STALE_FRESHNESS_POINTS = 3
# Per gap addressed beyond the first, up to the cap.
EXTRA_GAP_POINTS = 1
EXTRA_GAP_POINTS_CAP = 3

# What acquiring a probe of each cost band costs, in units (roughly a factor of three
# per band), and what one unit is worth in points: 50 units of acquisition are worth
# one right resolution. The simulation (bench/planner_policy.py) charges the same units.
COST_UNITS: Mapping[CostBand, int] = {CostBand.LOW: 1, CostBand.MEDIUM: 3, CostBand.HIGH: 10}
UNIT_POINTS = 2
LATENCY_PENALTY: Mapping[LatencyBand, int] = {
    LatencyBand.SECONDS: 0,
    LatencyBand.MINUTES: 4,
    LatencyBand.HOURS: 10,
}
RISK_PENALTY: Mapping[ActionRisk, int] = {
    ActionRisk.NONE: 0,
    ActionRisk.READ_ONLY: 1,
    ActionRisk.LOCAL_EFFECTS: 5,
    ActionRisk.EXTERNAL_EFFECTS: 10,
}
PRIVACY_PENALTY: Mapping[PrivacyExposure, int] = {
    PrivacyExposure.LOCAL_ONLY: 0,
    PrivacyExposure.HUMAN_REVIEWER: 3,
    PrivacyExposure.EXTERNAL_SERVICE: 8,
}
# Per approval someone must give before the candidate can help.
APPROVAL_PENALTY = 2
PENALTY_CAP = 45


def latency_of(candidate: Candidate) -> LatencyBand:
    """The band charged: the observed one once measured, else the declared one."""
    measured = candidate.measured
    return candidate.probe.latency if measured is None else measured.latency


def cost_points(candidate: Candidate) -> int:
    """The candidate's expected cost in points (module docstring); never below 1."""
    probe = candidate.probe
    return max(
        1,
        UNIT_POINTS * COST_UNITS[probe.cost]
        + LATENCY_PENALTY[latency_of(candidate)]
        + RISK_PENALTY[action_risk(probe)]
        + PRIVACY_PENALTY[probe.privacy]
        + APPROVAL_PENALTY * candidate.verdict.outstanding,
    )


def penalty(candidate: Candidate) -> int:
    """The cost as the score of a candidate not worth acquiring subtracts it: capped."""
    return min(PENALTY_CAP, cost_points(candidate))


def value_points(candidate: Candidate) -> int:
    """The EVSI in points, times the observed success rate once measured (else 1)."""
    measured = candidate.measured
    share = 1.0 if measured is None else measured.success_share
    return round(EVSI_POINTS * candidate.evsi * share)


def worth_acquiring(candidate: Candidate) -> bool:
    """Its expected gain pays for it: value above cost."""
    return value_points(candidate) > cost_points(candidate)


@dataclass(frozen=True)
class RankContext:
    """What the plan knows that changes a candidate's worth: the ids of STALE_SUPPORT gaps,
    and whether the resolver says a person must decide (a conflicted safety predicate)."""

    stale_gap_ids: frozenset[str] = frozenset()
    requires_review: bool = False


NO_CONTEXT = RankContext()


def score(candidate: Candidate, context: RankContext = NO_CONTEXT) -> int:
    """The internal ranking score (never serialized). See the module docstring."""
    points = value_points(candidate)
    points += DISCRIMINATION_POINTS.get(candidate.discrimination, 0)
    points += RECENCY_POINTS[candidate.probe.recency]
    if candidate.probe.recency is Recency.FRESH_OBSERVATION and context.stale_gap_ids & set(
        candidate.gap_ids
    ):
        points += STALE_FRESHNESS_POINTS
    points += min(EXTRA_GAP_POINTS_CAP, EXTRA_GAP_POINTS * max(0, len(candidate.gap_ids) - 1))
    return points - penalty(candidate)


def person_first(candidate: Candidate, context: RankContext) -> int:
    """0 for HUMAN_REVIEW when a person must decide, else 1 (the module's override)."""
    return 0 if context.requires_review and candidate.probe.kind is ProbeKind.HUMAN_REVIEW else 1


def sort_key(candidate: Candidate, context: RankContext = NO_CONTEXT) -> tuple[int | float, ...]:
    """Best first: the review override, those worth acquiring by value per unit of cost,
    then the rest by score, then the documented tie-breaks."""
    worth = worth_acquiring(candidate)
    per_cost = round(value_points(candidate) / cost_points(candidate), 9) if worth else 0.0
    return (
        person_first(candidate, context),
        0 if worth else 1,
        -per_cost,
        -score(candidate, context),
        candidate.independence,
        candidate.discrimination,
        candidate.verdict.availability,
        candidate.probe.cost,
        latency_of(candidate),
        candidate.probe.kind,
        candidate.target,
    )


def rank(candidates: Iterable[Candidate], context: RankContext = NO_CONTEXT) -> list[Candidate]:
    """The candidates, best first."""
    return sorted(candidates, key=lambda c: sort_key(c, context))


def stale_ids(gap_ids_and_kinds: Iterable[tuple[str, GapKind]]) -> frozenset[str]:
    """The ids of the STALE_SUPPORT gaps among (gap_id, kind) pairs."""
    return frozenset(i for i, kind in gap_ids_and_kinds if kind is GapKind.STALE_SUPPORT)
