"""Discrimination, computed rather than authored: would a plausible outcome change anything?

For each candidate the planner builds one hypothetical claim standing for a
plausible result of its probe, and the resolver (ResolveHypotheses, one call
per plan) resolves base + that claim. Comparing the two resolutions gives the
candidate's discrimination. Nothing here fuses evidence.

The outcome rule, deterministic and the same for every probe:

- the value asserted is the strongest competitor of the leader (the
  runner-up: the first non-leader value in the resolver's order, support
  descending then value key) when there is one, since a probe that can only
  repeat the leader cannot show the leader is wrong; otherwise the leader
  itself (corroboration); with no value at all, a placeholder string standing
  for "whatever the probe first observes";
- the claim comes from the probe's expected source kind with confidence
  ``OUTCOME_CONFIDENCE`` (a successful probe is confident, not certain);
- its correlation group is the one the resolver already counted for that
  source kind, if any (so correlated evidence does not compound in the
  hypothesis either), else a fresh declared group for the probe.

Reading the comparison: a different leader or status is HIGH (the probe
could flip the outcome); a moved support band (of the leader or of the
asserted value) or a cleared rationale flag is MEDIUM; nothing is LOW.
"""

from __future__ import annotations

import json

from assay.services.planner.independence import CountedIndex, counted_by_source, shared_group
from assay.services.planner.model import (
    Discrimination,
    DiscriminationBasis,
    Outcome,
    OutcomeAssumption,
    Probe,
    Resolution,
    SupportBand,
)

# How confident the hypothetical claim of a successful probe is.
OUTCOME_CONFIDENCE = 0.9
# The value asserted when nothing is known yet; any value would do, since
# with no active claim the first observation changes the status whatever it is.
FIRST_OBSERVATION_VALUE = "assay:first-observation"
# Prefix of the fresh declared correlation group of a hypothetical claim.
OUTCOME_GROUP_PREFIX = "planner-outcome/"

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


def outcome_for(
    probe: Probe, resolution: Resolution, counted: CountedIndex | None = None
) -> Outcome:
    """The hypothetical claim standing for a plausible result of ``probe`` (module docstring).

    ``counted`` is ``counted_by_source(resolution)``, passed in when already built."""
    leader = resolution.leader
    competitors = [v for v in resolution.values if v.value_key != resolution.leader_key]
    if competitors:
        assumption = OutcomeAssumption.RUNNER_UP
        key, value = competitors[0].value_key, competitors[0].value
    elif leader is not None:
        assumption = OutcomeAssumption.CORROBORATE_LEADER
        key, value = leader.value_key, leader.value
    else:
        assumption = OutcomeAssumption.FIRST_OBSERVATION
        key = json.dumps(FIRST_OBSERVATION_VALUE, ensure_ascii=False)
        value = FIRST_OBSERVATION_VALUE
    if counted is None:
        counted = counted_by_source(resolution)
    joined = shared_group(probe.expected_source, counted)
    if joined is not None:
        group, declared = joined.correlation_group, joined.declared
    else:
        group, declared = OUTCOME_GROUP_PREFIX + probe.kind.name.lower(), True
    return Outcome(
        assumption=assumption,
        source=probe.expected_source,
        value_key=key,
        value=value,
        correlation_group=group,
        declared=declared,
    )


def discrimination_of(
    base: Resolution, hypothetical: Resolution, outcome: Outcome
) -> tuple[Discrimination, DiscriminationBasis]:
    """Compare base with base + the outcome claim, as the module docstring says."""
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
