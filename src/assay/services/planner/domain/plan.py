"""Putting a plan together, in the two halves around the one resolver call.

``draft_plan`` does everything that needs only the base resolution: gaps,
candidates (one per probe and target class, listing every gap it addresses),
availability, independence, and every plausible outcome of each with its
likelihood (``outcomes``). Identical outcomes share one hypothesis, so the resolver
resolves each distinct outcome once, all in one call. ``finish_plan`` takes the
resolver's answers, in the order of ``Draft.outcomes``, and computes discrimination
and the expected value of each candidate's information, ranks, and splits ranked
from unavailable. Both are pure: same input, same plan, whatever order
the claims arrived in (the resolution is order-free, and everything here is
sorted by enum numbers and ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from assay.services.planner.domain.availability import classify_availability, runtime_state
from assay.services.planner.domain.discrimination import discrimination_of, leader_band
from assay.services.planner.domain.gaps import derive_gaps
from assay.services.planner.domain.independence import counted_by_source, independence_of
from assay.services.planner.domain.model import (
    Candidate,
    Discrimination,
    DiscriminationBasis,
    EvidencePlan,
    Gap,
    Outcome,
    PlanInput,
    PlanOutcome,
    Probe,
    ProbeKind,
    Resolution,
    SignalClass,
)
from assay.services.planner.domain.outcomes import beliefs, enumerate_outcomes, reliability_of
from assay.services.planner.domain.probes import CATALOGUE, Catalogue, probes_for_gap
from assay.services.planner.domain.ranking import RankContext, rank, stale_ids
from assay.services.planner.domain.value import evsi


@dataclass(frozen=True)
class Draft:
    """A plan before discrimination: what to ask the resolver, and what to finish with."""

    plan_input: PlanInput
    gaps: tuple[Gap, ...]
    candidates: tuple[Candidate, ...]
    # Distinct outcomes, sorted by their dedup key; one hypothesis each.
    outcomes: tuple[Outcome, ...]


def build_candidates(
    plan_input: PlanInput, gaps: Sequence[Gap], catalogue: Catalogue = CATALOGUE
) -> tuple[Candidate, ...]:
    """One candidate per (probe, target class), with every gap it addresses, in gap order."""
    addressed: dict[tuple[ProbeKind, SignalClass], tuple[Probe, list[str]]] = {}
    for gap in gaps:
        for probe, target in probes_for_gap(gap.kind, gap.signal_class, catalogue):
            entry = addressed.setdefault((probe.kind, target), (probe, []))
            if gap.gap_id not in entry[1]:
                entry[1].append(gap.gap_id)
    resolution = plan_input.resolution
    counted = counted_by_source(resolution)
    # A probe's outcomes do not depend on the class it targets: enumerated once per probe.
    by_probe: dict[ProbeKind, tuple[Outcome, ...]] = {}
    candidates = []
    for (_, target), (probe, gap_ids) in sorted(addressed.items()):
        state = runtime_state(target, plan_input.capabilities, plan_input.notes)
        outcomes = by_probe.get(probe.kind)
        if outcomes is None:
            reliability = reliability_of(probe.expected_source, plan_input.reliability)
            outcomes = enumerate_outcomes(
                probe, resolution, counted, reliability, plan_input.stale_refs
            )
            by_probe[probe.kind] = outcomes
        candidates.append(
            Candidate(
                probe=probe,
                target=target,
                gap_ids=tuple(gap_ids),
                verdict=classify_availability(probe, target, plan_input.policy, state),
                independence=independence_of(probe.expected_source, counted),
                outcomes=outcomes,
                outcome=outcomes[0],
                measured=plan_input.measured.get(probe.kind),
            )
        )
    return tuple(candidates)


def draft_plan(plan_input: PlanInput, catalogue: Catalogue = CATALOGUE) -> Draft:
    """Gaps, candidates and the outcomes the resolver must weigh (one hypothesis each)."""
    gaps = derive_gaps(plan_input)
    candidates = build_candidates(plan_input, gaps, catalogue)
    distinct = {o.dedup_key: o for c in candidates for o in c.outcomes}
    outcomes = tuple(distinct[k] for k in sorted(distinct))
    return Draft(plan_input, gaps, candidates, outcomes)


def finish_plan(draft: Draft, hypothetical: Sequence[Resolution]) -> EvidencePlan:
    """Discriminate, rank and split, given one resolution per ``draft.outcomes`` entry."""
    if len(hypothetical) != len(draft.outcomes):
        raise ValueError(
            f"expected {len(draft.outcomes)} hypothetical resolutions, got {len(hypothetical)}"
        )
    base = draft.plan_input.resolution
    belief = beliefs(base)
    by_key = {o.dedup_key: h for o, h in zip(draft.outcomes, hypothetical, strict=True)}
    judged = []
    # Candidates of one probe (one per target class) share their outcomes, hence their
    # judgement: computed once per probe.
    by_probe: dict[ProbeKind, tuple[Discrimination, DiscriminationBasis, Outcome, float]] = {}
    for candidate in draft.candidates:
        judgement = by_probe.get(candidate.probe.kind)
        if judgement is None:
            answers = [by_key[o.dedup_key] for o in candidate.outcomes]
            discrimination, basis, reported = discrimination_of(base, candidate.outcomes, answers)
            reliability = reliability_of(
                candidate.probe.expected_source, draft.plan_input.reliability
            )
            value = evsi(base, belief, candidate.outcomes, answers, reliability)
            judgement = (discrimination, basis, reported, value)
            by_probe[candidate.probe.kind] = judgement
        discrimination, basis, reported, value = judgement
        judged.append(
            replace(
                candidate,
                discrimination=discrimination,
                basis=basis,
                outcome=reported,
                evsi=value,
            )
        )
    context = RankContext(
        stale_gap_ids=stale_ids((g.gap_id, g.kind) for g in draft.gaps),
        requires_review=base.requires_review,
    )
    ordered = rank(judged, context)
    plan_input = draft.plan_input
    return EvidencePlan(
        subject=plan_input.subject,
        predicate=plan_input.predicate,
        outcome=(
            PlanOutcome.ACQUISITION_RECOMMENDED if draft.gaps else PlanOutcome.NO_GAP_IDENTIFIED
        ),
        resolution_status=base.status,
        leader_key=base.leader_key,
        leader_band=leader_band(base),
        requires_review=base.requires_review,
        gaps=draft.gaps,
        candidates=tuple(c for c in ordered if c.ranked),
        unavailable=tuple(c for c in ordered if not c.ranked),
    )
