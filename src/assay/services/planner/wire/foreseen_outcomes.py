"""The outcomes a plan may weigh, foreseen from the request's claims before any resolution.

A probe's outcomes (``outcomes.enumerate_outcomes``) depend on the base resolution in three
ways only: which claimed values it may report (the strongest few, and the leader), the
counted group its source would join, and the stale claims of that group it would supersede.
All three are read off the target's active claims, so the planner sends the hypotheses in
the call that returns the base (``ResolveHypotheses``, ``base_detail`` FULL) instead of
resolving the target once to enumerate and again to weigh.

The set built here is a superset of what any plan needs when every claim is active: every
probe of the catalogue (the gaps are not known yet), every claimed value (nor is the ranking),
each source's group as counted with nothing excluded. A claim the resolver excludes
(superseded, reviewed out) can make it miss one, which the use case asks for in a second
call; unneeded hypotheses are ignored (each costs the resolver a re-resolution of the
target's claims). Outcomes are matched to the draft's by ``match_key``.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product

from assay.protovalues import value_to_json
from assay.services.planner.domain import model as m
from assay.services.planner.domain.outcomes import (
    OUTCOME_CONFIDENCE,
    OUTCOME_GROUP_PREFIX,
    UNCLAIMED_KEY,
    UNCLAIMED_VALUE,
)
from assay.services.planner.domain.probes import Catalogue
from assay.services.resolver.domain.value_keys import UnkeyableValue, canonical_key
from assay.v1 import claim_pb2, planner_service_pb2

# More distinct values than this, and guessing every one costs more than it saves (each
# value is a hypothesis per source): the plan resolves first, then weighs, as before.
MAX_GUESSED_VALUES = 8

MatchKey = tuple[str, str, bool, str, tuple[str, ...], float]


def match_key(outcome: m.Outcome) -> MatchKey:
    """What decides an outcome's hypothesis: the hypothetical claim's content, the value by
    its value key. A guessed value is keyed by the resolver's own rule
    (``resolver.domain.value_keys``), so its key is the one the resolver reports for that
    value, and the draft's outcomes (which carry the resolver's keys) match it byte for byte."""
    return (
        outcome.source,
        outcome.correlation_group,
        outcome.declared,
        outcome.value_key,
        outcome.supersedes,
        outcome.confidence,
    )


_REJECTED = claim_pb2.REVIEW_STATUS_REJECTED


def guess_outcomes(
    request: planner_service_pb2.PlanEvidenceRequest,
    catalogue: Catalogue,
    stale_refs: frozenset[str],
    reliability: Mapping[str, float] | None = None,
) -> tuple[m.Outcome, ...] | None:
    """Every outcome any plan over ``request`` may weigh (module docstring), in a fixed order.

    ``reliability``: the resolver's table when known; a probe whose source it lacks is left
    out (the resolver would refuse its claim, and a plan that needs it fails anyway).

    None when the guess is not worth making: some claim is about another semantic (the
    hypotheses then go over the target's scope, checked against a full base resolution
    that only a separate call gives), or there are more than ``MAX_GUESSED_VALUES`` values.
    """
    subject, predicate = request.subject, request.predicate
    probes = [
        catalogue[kind]
        for kind in sorted(catalogue)
        if reliability is None or catalogue[kind].expected_source in reliability
    ]
    sources = {probe.expected_source for probe in probes}
    # One claim per distinct value: a string value by its text, any other by its bytes.
    values: dict[str | bytes, claim_pb2.Claim] = {}
    # Per probe source: its declared groups, its first defaulted group's ``source_ref``, and
    # (stale claims only) its named claims by group.
    declared: dict[str, set[str]] = {}
    first_ref: dict[str, str] = {}
    named: dict[tuple[str, str], list[str]] = {}
    # Per declared group and value, every source with a claim there (any source).
    members: dict[str, dict[str | bytes, set[str]]] = {}
    # The loop reads each field once: at 1,000 claims every extra attribute read shows.
    for claim in request.evidence.claims:
        if claim.subject != subject or claim.predicate != predicate:
            return None
        if claim.review_status == _REJECTED:
            continue
        value = claim.value
        key: str | bytes = value.string_value or value.SerializeToString(deterministic=True)
        if key not in values:
            if len(values) == MAX_GUESSED_VALUES:
                return None
            values[key] = claim
        source = claim.source
        group = claim.correlation_group
        if group:
            members.setdefault(group, {}).setdefault(key, set()).add(source)
            if source not in sources:
                continue
            declared.setdefault(source, set()).add(group)
        elif source in sources:
            ref = claim.source_ref
            first = first_ref.get(source)
            if first is None or ref < first:
                first_ref[source] = ref
            if not stale_refs:
                continue
            group = f"{source}|{ref}"
        else:
            continue
        if stale_refs and claim.id in stale_refs:
            named.setdefault((source, group), []).append(claim.id)
    defaulted = {source: f"{source}|{ref}" for source, ref in first_ref.items()}
    claimed: list[m.JsonValue] = [value_to_json(c.value) for c in values.values()]
    try:
        claimed_keys = [canonical_key(value) for value in claimed]
    except UnkeyableValue:
        return None  # NaN or an infinity: resolving first refuses the claim, naming it
    outcomes: dict[MatchKey, m.Outcome] = {}
    for probe in probes:
        source, kind = probe.expected_source, probe.kind
        fresh = probe.recency is m.Recency.FRESH_OBSERVATION
        reported = list(zip(claimed_keys, claimed, strict=True))
        if fresh or not reported:
            reported.append((UNCLAIMED_KEY, UNCLAIMED_VALUE))
        own = OUTCOME_GROUP_PREFIX + kind.name.lower()
        joined = joinable(source, declared, defaulted, members, own)
        for (group, is_declared), (value_key, value) in product(joined, reported):
            supersedes: tuple[str, ...] = ()
            if fresh and group != own:
                supersedes = tuple(sorted(named.get((source, group), ())))
            outcome = m.Outcome(
                assumption=m.OutcomeAssumption.UNSPECIFIED,
                source=source,
                value_key=value_key,
                value=value,
                correlation_group=group,
                declared=is_declared,
                supersedes=supersedes,
                confidence=OUTCOME_CONFIDENCE,
            )
            outcomes.setdefault(match_key(outcome), outcome)
    return tuple(outcomes.values())


def joinable(
    source: str,
    declared: Mapping[str, set[str]],
    defaulted: Mapping[str, str],
    members: Mapping[str, Mapping[str | bytes, set[str]]],
    own: str,
) -> list[tuple[str, bool]]:
    """The groups a new claim from ``source`` may join: ``independence.shared_group``'s
    pick (its first counted declared group, else its first counted defaulted one), for
    every way the resolution may fall out.

    A group counts its strongest member, which depends on reliabilities and confidences
    the resolution weighs: a declared group other sources share may count another
    source's claim. So every declared group is a candidate, in name order, until one that
    certainly counts ``source`` (it alone has claims there for some value); failing that,
    the first defaulted group, which holds only ``source``'s claims, or when it has none,
    the probe's ``own`` declared group (nothing of ``source`` counted).
    """
    out: list[tuple[str, bool]] = []
    for group in sorted(declared.get(source, ())):
        out.append((group, True))
        if any(found == {source} for found in members[group].values()):
            return out
    if source in defaulted:
        out.append((defaulted[source], False))
    else:
        out.append((own, True))
    return out
