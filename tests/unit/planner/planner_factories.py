"""Hand-built resolutions and plan inputs for the planner's unit tests.

The planner never fuses, so its unit tests do not either: they describe the
resolver's answer directly (status, values, counted claims, flags) and, for
``finish_plan``, the hypothetical answers too.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping

from assay.services.planner.domain.model import (
    AcquisitionPolicy,
    Availability,
    AvailabilityReason,
    AvailabilityVerdict,
    Candidate,
    CostBand,
    CountedClaim,
    Discrimination,
    EvidencePlan,
    Independence,
    LatencyBand,
    MissingSignalNote,
    Outcome,
    OutcomeAssumption,
    PlanInput,
    PrivacyExposure,
    Probe,
    ProbeKind,
    RationaleFlag,
    Recency,
    Resolution,
    ResolutionStatus,
    SideEffect,
    SignalAvailability,
    SignalClass,
    ValueView,
)
from assay.services.planner.domain.plan import Draft, draft_plan, finish_plan
from assay.services.planner.domain.probes import CATALOGUE
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY


def key(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def counted(source: str, group: str | None = None) -> CountedClaim:
    """A counted claim; ``group=None`` means a defaulted (undeclared) group."""
    if group is None:
        return CountedClaim(source, f"{source}|ref", declared=False)
    return CountedClaim(source, group, declared=True)


def view(value: object, support: float, *claims: CountedClaim) -> ValueView:
    return ValueView(key(value), value, support, tuple(claims))


def resolved(
    value: object = "key",
    support: float = 0.9,
    claims: Iterable[CountedClaim] = (counted("api_spec", "g1"), counted("test_result", "g2")),
    flags: Iterable[RationaleFlag] = (),
) -> Resolution:
    return Resolution(
        status=ResolutionStatus.RESOLVED,
        leader_key=key(value),
        values=(view(value, support, *claims),),
        flags=frozenset(flags),
    )


def conflicted(
    leader: tuple[object, float, tuple[CountedClaim, ...]] = ("key", 0.72, (counted("api_spec"),)),
    runner_up: tuple[object, float, tuple[CountedClaim, ...]] = (
        "none",
        0.7,
        (counted("runtime_trace"),),
    ),
    requires_review: bool = True,
) -> Resolution:
    return Resolution(
        status=ResolutionStatus.CONFLICTED,
        leader_key=key(leader[0]),
        values=(
            view(leader[0], leader[1], *leader[2]),
            view(runner_up[0], runner_up[1], *runner_up[2]),
        ),
        flags=frozenset(),
        requires_review=requires_review,
    )


def insufficient(excluded: int = 0) -> Resolution:
    return Resolution(
        status=ResolutionStatus.INSUFFICIENT,
        leader_key="",
        values=(),
        flags=frozenset(),
        excluded_count=excluded,
    )


def plan_input(
    resolution: Resolution,
    notes: Iterable[MissingSignalNote] = (),
    capabilities: Mapping[SignalClass, SignalAvailability] | None = None,
    policy: AcquisitionPolicy | None = None,
) -> PlanInput:
    return PlanInput(
        subject="api:payments.create",
        predicate="idempotency.mode",
        resolution=resolution,
        notes=tuple(notes),
        capabilities=dict(capabilities or {}),
        policy=policy or EMPTY_POLICY,
        reliability=DEFAULT_RELIABILITY,
    )


EMPTY_POLICY = AcquisitionPolicy()
GRANT_ALL = AcquisitionPolicy(
    granted=frozenset(SideEffect) - {SideEffect.UNSPECIFIED},
    cloud_sync_allowed=True,
    egress_allowed=True,
)
READ_ONLY = AcquisitionPolicy(granted=frozenset({SideEffect.FILESYSTEM_READ, SideEffect.VCS_READ}))

Oracle = Callable[[Outcome, Resolution], Resolution]


def unchanged(outcome: Outcome, base: Resolution) -> Resolution:
    """A hypothetical answer in which nothing changes."""
    return base


def flips_for(*sources: str) -> Oracle:
    """Outcomes from these sources make the asserted value lead; others change nothing."""

    def oracle(outcome: Outcome, base: Resolution) -> Resolution:
        if outcome.source not in sources:
            return base
        return dataclasses.replace(
            base, leader_key=outcome.value_key, status=ResolutionStatus.RESOLVED
        )

    return oracle


def make_plan(plan_in: PlanInput, oracle: Oracle = unchanged) -> EvidencePlan:
    draft: Draft = draft_plan(plan_in)
    return finish_plan(draft, [oracle(o, plan_in.resolution) for o in draft.outcomes])


def probe(
    kind: ProbeKind = ProbeKind.RERUN_TEST,
    side_effects: tuple[SideEffect, ...] = (),
    needs_egress: bool = False,
    needs_cloud_sync: bool = False,
    observes_via_runtime: bool = True,
    cost: CostBand = CostBand.LOW,
    latency: LatencyBand = LatencyBand.SECONDS,
    privacy: PrivacyExposure = PrivacyExposure.LOCAL_ONLY,
    recency: Recency = Recency.FRESH_OBSERVATION,
    source: str = "test_result",
) -> Probe:
    """A hand-built probe (the catalogue's are used where the real ones matter)."""
    return Probe(
        kind=kind,
        targets=(SignalClass.PROCESS_RESULT,),
        side_effects=side_effects,
        expected_source=source,
        cost=cost,
        latency=latency,
        privacy=privacy,
        recency=recency,
        needs_egress=needs_egress,
        needs_cloud_sync=needs_cloud_sync,
        observes_via_runtime=observes_via_runtime,
        description="test probe",
    )


def candidate(
    the_probe: Probe | None = None,
    independence: Independence = Independence.INDEPENDENT_OF_COUNTED,
    discrimination: Discrimination = Discrimination.HIGH,
    availability: Availability = Availability.AVAILABLE,
    gap_ids: tuple[str, ...] = ("unresolved_conflict",),
    target: SignalClass = SignalClass.PROCESS_RESULT,
    evsi: float = 0.0,
) -> Candidate:
    """A judged candidate with chosen dimensions, for ranking tests."""
    the_probe = the_probe or probe()
    reason = (
        AvailabilityReason.ALL_REQUIREMENTS_MET
        if availability is Availability.AVAILABLE
        else AvailabilityReason.SIDE_EFFECT_NOT_GRANTED
    )
    outcome = Outcome(OutcomeAssumption.RUNNER_UP, the_probe.expected_source, '"x"', "x", "g")
    missing = (SideEffect.PROCESS_SPAWN,) if availability is Availability.REQUIRES_APPROVAL else ()
    return Candidate(
        probe=the_probe,
        target=target,
        gap_ids=gap_ids,
        verdict=AvailabilityVerdict(availability, reason, missing_grants=missing),
        independence=independence,
        outcomes=(outcome,),
        outcome=outcome,
        discrimination=discrimination,
        evsi=evsi,
    )


def catalogue_probe(kind: ProbeKind) -> Probe:
    return CATALOGUE[kind]
