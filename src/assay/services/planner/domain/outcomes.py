"""Every plausible outcome of a probe, and how likely each is: the planner's likelihood model.

A probe may report the current leader, any competitor, or (a fresh observation) a value
nobody has claimed yet. Each outcome is a hypothetical claim the resolver weighs
(``ResolveHypotheses``); its likelihood comes from what the planner already has, nothing
authored per probe: the belief about the truth, from the support (each claimed value ``v``
weighs ``s_v``, "none of them" ``prod(1 - s_v)``, normalised; only the
``MAX_VALUE_OUTCOMES`` strongest are enumerated), and the probe's accuracy, its source's
reliability ``r`` (it reports the truth with probability ``r``, else another outcome
evenly). So ``P(report o) = sum_t P(true = t) * P(o | t)``.

The hypothetical claim comes from the probe's source at ``OUTCOME_CONFIDENCE``, in the
correlation group that source was already counted in (correlated evidence never compounds),
and a fresh observation supersedes the stale claims of that source and group (a re-run
replaces the old run). The full model is in docs/planner.md ("Outcomes and their likelihoods").
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from assay.services.planner.domain.independence import CountedIndex, shared_group
from assay.services.planner.domain.model import (
    Outcome,
    OutcomeAssumption,
    Probe,
    Recency,
    Resolution,
)
from assay.services.planner.domain.value import report_given_truth

# How confident the hypothetical claim of a successful probe is.
OUTCOME_CONFIDENCE = 0.9
# The value standing for "a value nobody has claimed yet": any unclaimed value would do,
# since the resolver treats every new value alike.
UNCLAIMED_VALUE = "assay:unclaimed-value"
UNCLAIMED_KEY = json.dumps(UNCLAIMED_VALUE, ensure_ascii=False)
# Prefix of the fresh declared correlation group of a hypothetical claim.
OUTCOME_GROUP_PREFIX = "planner-outcome/"
# Values enumerated as outcomes, strongest first (the leader is always one).
MAX_VALUE_OUTCOMES = 4
# Reliability assumed for a source the resolver's table lacks (the hypotheses call will
# fail with RESOLVER_POLICY_MISMATCH anyway; this only keeps the arithmetic total).
UNKNOWN_RELIABILITY = 0.5


def beliefs(resolution: Resolution) -> dict[str, float]:
    """``P(true = value key)`` for every claimed value, and for ``UNCLAIMED_KEY``."""
    weights = {view.value_key: view.support for view in resolution.values}
    weights[UNCLAIMED_KEY] = math.prod(1.0 - view.support for view in resolution.values)
    total = sum(weights.values())
    if total <= 0.0:
        return {UNCLAIMED_KEY: 1.0}
    return {key: weight / total for key, weight in weights.items()}


def report_probabilities(
    belief: Mapping[str, float], reportable: tuple[str, ...], reliability: float
) -> dict[str, float]:
    """``P(report o)`` for each ``o`` in ``reportable`` (module docstring)."""
    return {
        o: sum(p * report_given_truth(o, t, reportable, reliability) for t, p in belief.items())
        for o in reportable
    }


def enumerate_outcomes(
    probe: Probe,
    resolution: Resolution,
    counted: CountedIndex,
    reliability: float,
    stale_refs: frozenset[str] = frozenset(),
) -> tuple[Outcome, ...]:
    """Every plausible outcome of ``probe`` with its likelihood, most likely first.

    ``stale_refs``: the ids of the target's claims older than the staleness horizon."""
    fresh = probe.recency is Recency.FRESH_OBSERVATION
    ranked = sorted(resolution.values, key=lambda v: (-v.support, v.value_key))
    values = {v.value_key: v.value for v in ranked[:MAX_VALUE_OUTCOMES]}
    if resolution.leader is not None and resolution.leader_key not in values:
        values[resolution.leader_key] = resolution.leader.value
    if fresh or not values:
        values[UNCLAIMED_KEY] = UNCLAIMED_VALUE
    likelihood = report_probabilities(beliefs(resolution), tuple(values), reliability)
    joined = shared_group(probe.expected_source, counted)
    supersedes: tuple[str, ...] = ()
    if joined is not None:
        group, declared = joined.correlation_group, joined.declared
        if fresh:
            members = resolution.members.get((probe.expected_source, group), ())
            supersedes = tuple(sorted(ref for ref in members if ref in stale_refs))
    else:
        group, declared = OUTCOME_GROUP_PREFIX + probe.kind.name.lower(), True
    outcomes = [
        Outcome(
            assumption=assumption_of(key, resolution),
            source=probe.expected_source,
            value_key=key,
            value=value,
            correlation_group=group,
            declared=declared,
            likelihood=likelihood[key],
            supersedes=supersedes,
            confidence=OUTCOME_CONFIDENCE,
        )
        for key, value in values.items()
    ]
    return tuple(sorted(outcomes, key=lambda o: (-o.likelihood, o.value_key)))


def assumption_of(value_key: str, resolution: Resolution) -> OutcomeAssumption:
    """How the wire names an outcome: the leader, a competitor, or a first/unclaimed value."""
    if value_key == UNCLAIMED_KEY:
        return OutcomeAssumption.FIRST_OBSERVATION
    if value_key == resolution.leader_key:
        return OutcomeAssumption.CORROBORATE_LEADER
    return OutcomeAssumption.RUNNER_UP


def reliability_of(source: str, table: Mapping[str, float]) -> float:
    return table.get(source, UNKNOWN_RELIABILITY)
