"""The ranking heuristic: a named, deterministic formula, not a probability.

    score = max(0, (discrimination + recency + review + extra gaps) × independence% − penalty)
    penalty = min(PENALTY_CAP, cost + latency + action risk + privacy + approval)

Discrimination dominates (a probe that could flip the outcome is worth most);
a person's review earns a bonus when the resolver says a person must decide;
independence multiplies, so correlated evidence can never buy its way up with
a high discrimination; the penalties are subtracted with a floor at zero and a
cap, so no single dimension can make a score negative or unbounded. Integer
arithmetic keeps it exact and platform-independent.

The score orders candidates and is then discarded: it never crosses the wire.
Ties break, in order, by independence, discrimination, availability (AVAILABLE
first), cost, latency, then probe kind and signal class numbers, which makes
the order total and reproducible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from assay.services.planner.model import (
    ActionRisk,
    Availability,
    Candidate,
    CostBand,
    Discrimination,
    GapKind,
    Independence,
    LatencyBand,
    PrivacyExposure,
    ProbeKind,
    Recency,
)
from assay.services.planner.probes import action_risk

DISCRIMINATION_POINTS: Mapping[Discrimination, int] = {
    Discrimination.HIGH: 60,
    Discrimination.MEDIUM: 30,
    Discrimination.LOW: 10,
}
# Percent of the points kept: unverified independence is not rewarded as
# independence, and a same-source probe keeps almost nothing.
INDEPENDENCE_PERCENT: Mapping[Independence, int] = {
    Independence.INDEPENDENT_OF_COUNTED: 100,
    Independence.UNVERIFIED: 40,
    Independence.SAME_SOURCE_AS_COUNTED: 10,
}
RECENCY_POINTS: Mapping[Recency, int] = {
    Recency.FRESH_OBSERVATION: 10,
    Recency.REVIEW_OF_RECORDED: 0,
}
# Extra, for a fresh observation that answers a STALE_SUPPORT gap.
STALE_FRESHNESS_POINTS = 10
# For HUMAN_REVIEW when a conflicted safety predicate requires a person's decision:
# whatever else is acquired, a human will have to look, so asking one early is worth more.
REQUIRED_REVIEW_POINTS = 30
# Per gap addressed beyond the first, up to the cap.
EXTRA_GAP_POINTS = 5
EXTRA_GAP_POINTS_CAP = 15

COST_PENALTY: Mapping[CostBand, int] = {CostBand.LOW: 0, CostBand.MEDIUM: 6, CostBand.HIGH: 15}
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
# Someone must sign off before a REQUIRES_APPROVAL candidate can help.
APPROVAL_PENALTY = 5
PENALTY_CAP = 45


def penalty(candidate: Candidate) -> int:
    probe = candidate.probe
    total = (
        COST_PENALTY[probe.cost]
        + LATENCY_PENALTY[probe.latency]
        + RISK_PENALTY[action_risk(probe)]
        + PRIVACY_PENALTY[probe.privacy]
        + (
            APPROVAL_PENALTY
            if candidate.verdict.availability is Availability.REQUIRES_APPROVAL
            else 0
        )
    )
    return min(PENALTY_CAP, total)


@dataclass(frozen=True)
class RankContext:
    """What the plan knows that changes a candidate's worth: the ids of STALE_SUPPORT gaps,
    and whether the resolver says a person must decide (a conflicted safety predicate)."""

    stale_gap_ids: frozenset[str] = frozenset()
    requires_review: bool = False


NO_CONTEXT = RankContext()


def score(candidate: Candidate, context: RankContext = NO_CONTEXT) -> int:
    """The internal ranking score (never serialized). See the module docstring."""
    points = DISCRIMINATION_POINTS.get(candidate.discrimination, 0)
    points += RECENCY_POINTS[candidate.probe.recency]
    if candidate.probe.recency is Recency.FRESH_OBSERVATION and context.stale_gap_ids & set(
        candidate.gap_ids
    ):
        points += STALE_FRESHNESS_POINTS
    if context.requires_review and candidate.probe.kind is ProbeKind.HUMAN_REVIEW:
        points += REQUIRED_REVIEW_POINTS
    points += min(EXTRA_GAP_POINTS_CAP, EXTRA_GAP_POINTS * max(0, len(candidate.gap_ids) - 1))
    kept = points * INDEPENDENCE_PERCENT[candidate.independence] // 100
    return max(0, kept - penalty(candidate))


def sort_key(candidate: Candidate, context: RankContext = NO_CONTEXT) -> tuple[int, ...]:
    """Best first: score descending, then the documented tie-breaks (all lower-is-better)."""
    return (
        -score(candidate, context),
        candidate.independence,
        candidate.discrimination,
        candidate.verdict.availability,
        candidate.probe.cost,
        candidate.probe.latency,
        candidate.probe.kind,
        candidate.target,
    )


def rank(candidates: Iterable[Candidate], context: RankContext = NO_CONTEXT) -> list[Candidate]:
    """The candidates, best first."""
    return sorted(candidates, key=lambda c: sort_key(c, context))


def stale_ids(gap_ids_and_kinds: Iterable[tuple[str, GapKind]]) -> frozenset[str]:
    """The ids of the STALE_SUPPORT gaps among (gap_id, kind) pairs."""
    return frozenset(i for i, kind in gap_ids_and_kinds if kind is GapKind.STALE_SUPPORT)
