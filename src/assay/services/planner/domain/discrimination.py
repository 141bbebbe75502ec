"""Discrimination, computed rather than authored: could a plausible outcome change anything?

Each candidate has several plausible outcomes (``outcomes``), each with a likelihood,
and the resolver answers what base + each outcome's claim resolves to (one
``ResolveHypotheses`` call per plan, one hypothesis per distinct outcome). Comparing
each answer with the base resolution gives the candidate's discrimination:

- ``HIGH`` when an outcome of likelihood at least ``PLAUSIBLE`` changes the leader or
  the status: the probe could decide something;
- ``MEDIUM`` when such an outcome only moves a support band (of the leader or of the
  value it asserts) or clears a rationale flag;
- ``LOW`` when none does.

The candidate reports one outcome on the wire (``outcome_value_key``,
``outcome_assumption``): the most likely outcome that earned its discrimination, or,
for LOW, its most likely outcome. Nothing here fuses evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.services.planner.domain.model import (
    Discrimination,
    DiscriminationBasis,
    Outcome,
    Resolution,
    SupportBand,
)

# An outcome at least this likely counts as plausible.
PLAUSIBLE = 0.05

# Support band thresholds (lower bounds): WEAK below MODERATE_FROM, and so on.
MODERATE_FROM = 0.5
STRONG_FROM = 0.8


def support_band(support: float | None) -> SupportBand:
    """The band of a support figure; ``None`` (no such value) is NONE."""
    if support is None:
        return SupportBand.NONE
    if support >= STRONG_FROM:
        return SupportBand.STRONG
    if support >= MODERATE_FROM:
        return SupportBand.MODERATE
    return SupportBand.WEAK


def leader_band(resolution: Resolution) -> SupportBand:
    leader = resolution.leader
    return support_band(leader.support if leader is not None else None)


def value_band(resolution: Resolution, value_key: str) -> SupportBand:
    for view in resolution.values:
        if view.value_key == value_key:
            return support_band(view.support)
    return SupportBand.NONE


def _judge(
    base: Resolution, hypothetical: Resolution, outcome: Outcome
) -> tuple[Discrimination, DiscriminationBasis]:
    """Base against base + one outcome's claim."""
    if hypothetical.leader_key != base.leader_key:
        return Discrimination.HIGH, DiscriminationBasis.LEADER_CHANGED
    if hypothetical.status != base.status:
        return Discrimination.HIGH, DiscriminationBasis.STATUS_CHANGED
    if leader_band(hypothetical) != leader_band(base) or value_band(
        hypothetical, outcome.value_key
    ) != value_band(base, outcome.value_key):
        return Discrimination.MEDIUM, DiscriminationBasis.SUPPORT_BAND_CHANGED
    if base.flags - hypothetical.flags:
        return Discrimination.MEDIUM, DiscriminationBasis.RATIONALE_FLAG_CLEARED
    return Discrimination.LOW, DiscriminationBasis.NO_CHANGE


def discrimination_of(
    base: Resolution, outcomes: Sequence[Outcome], hypothetical: Sequence[Resolution]
) -> tuple[Discrimination, DiscriminationBasis, Outcome]:
    """The candidate's discrimination, its basis and the outcome it reports (module
    docstring). ``outcomes`` are most likely first; ``hypothetical`` in the same order."""
    best: tuple[Discrimination, DiscriminationBasis, Outcome] | None = None
    for outcome, after in zip(outcomes, hypothetical, strict=True):
        if outcome.likelihood < PLAUSIBLE:
            continue
        discrimination, basis = _judge(base, after, outcome)
        if best is None or discrimination < best[0]:
            best = (discrimination, basis, outcome)
    if best is None:
        return Discrimination.LOW, DiscriminationBasis.NO_CHANGE, outcomes[0]
    return best
