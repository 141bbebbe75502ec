"""The planner's domain values: its inputs, the resolver's answer as it reads it, and the plan.

The planner never fuses evidence: it reads a ``Resolution`` (the part of the
resolver's answer it needs, already converted from the wire) and reasons about
gaps, probes, policy and ranking. Everything here is a frozen value, so a plan
is a pure function of its inputs.

The enums live in ``vocabulary`` and are re-exported here, so domain code
imports everything it reasons with from one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

from assay.services.planner.domain.measured import MeasuredCost
from assay.services.planner.domain.vocabulary import (
    ActionRisk,
    Availability,
    AvailabilityReason,
    CostBand,
    Discrimination,
    DiscriminationBasis,
    GapKind,
    GapSource,
    Independence,
    LatencyBand,
    MeasurementBasis,
    OutcomeAssumption,
    PlanOutcome,
    PrivacyExposure,
    ProbeKind,
    RationaleFlag,
    Recency,
    ResolutionStatus,
    SideEffect,
    SignalAvailability,
    SignalClass,
    SupportBand,
)

JsonValue: TypeAlias = Any
"""A decoded JSON value (what a ``google.protobuf.Value`` holds)."""


# --- The resolver's answer, as far as the planner reads it ---------------------------


class CountedClaim(NamedTuple):
    """A claim the resolver counted (its group's strongest member).

    A named tuple rather than a dataclass: a large evidence has one per correlation
    group, and building them is on the planning hot path.
    """

    source: str
    correlation_group: str
    declared: bool


@dataclass(frozen=True)
class ValueView:
    """One value with support: its canonical key, the value itself, and what counted for it
    (every declared (source, group) pair, and each source's first defaulted one)."""

    value_key: str
    value: JsonValue
    support: float
    counted: tuple[CountedClaim, ...]


@dataclass(frozen=True)
class Resolution:
    """What the planner needs of a ``SemanticResolution``."""

    status: ResolutionStatus
    leader_key: str
    values: tuple[ValueView, ...]
    flags: frozenset[RationaleFlag]
    excluded_count: int = 0
    requires_review: bool = False
    # The ids of the active claims of each (source, correlation group), every value
    # together: what a fresh observation of that source and group may supersede.
    members: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @property
    def leader(self) -> ValueView | None:
        for view in self.values:
            if view.value_key == self.leader_key:
                return view
        return None

    def support_of(self, value_key: str) -> float:
        for view in self.values:
            if view.value_key == value_key:
                return view.support
        return 0.0


# --- The request, as the planner reads it ---------------------------------------------


@dataclass(frozen=True)
class MissingSignalNote:
    """A verifier looked for ``signal_class`` and found it absent, for ``availability``."""

    signal_class: SignalClass
    availability: SignalAvailability
    note: str = ""


@dataclass(frozen=True)
class AcquisitionPolicy:
    """What the executor may do. Deny by default: the empty policy grants nothing."""

    granted: frozenset[SideEffect] = frozenset()
    cloud_sync_allowed: bool = False
    egress_allowed: bool = False


@dataclass(frozen=True)
class PlanInput:
    """Everything a plan depends on besides the resolver's hypothetical answers."""

    subject: str
    predicate: str
    resolution: Resolution
    notes: tuple[MissingSignalNote, ...] = ()
    capabilities: Mapping[SignalClass, SignalAvailability] = field(default_factory=dict)
    policy: AcquisitionPolicy = AcquisitionPolicy()
    # The resolver's reliability table (source kind -> reliability): each probe's accuracy.
    reliability: Mapping[str, float] = field(default_factory=dict)
    # Ids of the target's claims older than the request's staleness horizon.
    stale_refs: frozenset[str] = frozenset()
    # What the executor's recorded acquisitions measured, per probe kind (``measured``);
    # empty without an observations file.
    measured: Mapping[ProbeKind, MeasuredCost] = field(default_factory=dict)


# --- Probes, gaps, candidates, the plan -----------------------------------------------


@dataclass(frozen=True)
class Probe:
    """One catalogue entry: what a probe observes, needs, yields and costs."""

    kind: ProbeKind
    targets: tuple[SignalClass, ...]
    side_effects: tuple[SideEffect, ...]
    expected_source: str
    cost: CostBand
    latency: LatencyBand
    privacy: PrivacyExposure
    recency: Recency
    needs_egress: bool
    needs_cloud_sync: bool
    observes_via_runtime: bool
    description: str
    # The resolution gaps it can close (signal gaps follow ``targets``): the operator's
    # declaration for a probe from ``--probes``, authored for the built-in ones.
    gaps: frozenset[GapKind] = frozenset()
    # Where the definition came from: "builtin" or the probe file's path.
    origin: str = "builtin"


@dataclass(frozen=True)
class Gap:
    """One reason more evidence would help."""

    kind: GapKind
    source: GapSource
    signal_class: SignalClass = SignalClass.UNSPECIFIED
    signal_availability: SignalAvailability = SignalAvailability.UNSPECIFIED
    notes: tuple[str, ...] = ()

    @property
    def gap_id(self) -> str:
        base = self.kind.name.lower()
        if self.signal_class is SignalClass.UNSPECIFIED:
            return base
        return f"{base}/{self.signal_class.name.lower()}"


@dataclass(frozen=True)
class AvailabilityVerdict:
    """The outcome of the four availability checks for one probe and class."""

    availability: Availability
    reason: AvailabilityReason
    missing_grants: tuple[SideEffect, ...] = ()
    forbidden: tuple[SideEffect, ...] = ()
    signal_availability: SignalAvailability = SignalAvailability.UNSPECIFIED
    # The checks after the deciding one that also fail, in the fixed order: for
    # REQUIRES_APPROVAL the policy switches still off (EGRESS_NOT_ALLOWED,
    # CLOUD_SYNC_NOT_ALLOWED), so one approval can ask for everything.
    also_blocking: tuple[AvailabilityReason, ...] = ()

    @property
    def blocking_reasons(self) -> tuple[AvailabilityReason, ...]:
        """Every check the candidate fails, in the fixed order (``reason`` first); empty
        when AVAILABLE (the wire's ``blocking_reasons``)."""
        if self.availability is Availability.AVAILABLE:
            return ()
        return (self.reason, *self.also_blocking)

    @property
    def outstanding(self) -> int:
        """How many separate approvals stand between the candidate and AVAILABLE."""
        return len(self.missing_grants) + len(self.also_blocking)


@dataclass(frozen=True)
class Outcome:
    """One plausible result of a probe: the hypothetical claim that stands for it, and how
    likely it is (``outcomes.likelihoods``; never on the wire)."""

    assumption: OutcomeAssumption
    source: str
    value_key: str
    value: JsonValue
    correlation_group: str
    # False when the group is a defaulted one (``source|source_ref``) the claim joins.
    declared: bool = True
    likelihood: float = 1.0
    # Ids of the claims of the same source and group this fresh observation replaces.
    supersedes: tuple[str, ...] = ()
    # Confidence of the hypothetical claim.
    confidence: float = 0.9

    @property
    def dedup_key(self) -> tuple[str, str, bool, str, tuple[str, ...], float]:
        """Outcomes sharing this key share one hypothesis (their likelihoods may differ)."""
        return (
            self.source,
            self.correlation_group,
            self.declared,
            self.value_key,
            self.supersedes,
            self.confidence,
        )


@dataclass(frozen=True)
class Candidate:
    """One probe aimed at one signal class, with every ranking dimension."""

    probe: Probe
    target: SignalClass
    gap_ids: tuple[str, ...]
    verdict: AvailabilityVerdict
    independence: Independence
    # Every plausible outcome, with its likelihood; ``outcome`` is the one reported (the
    # most likely decisive one, see ``discrimination``).
    outcomes: tuple[Outcome, ...]
    outcome: Outcome
    discrimination: Discrimination = Discrimination.UNSPECIFIED
    basis: DiscriminationBasis = DiscriminationBasis.UNSPECIFIED
    # The expected value of sample information (``value``): ranks, never serialized.
    evsi: float = 0.0
    # The probe kind's observed figures (None without an observations file).
    measured: MeasuredCost | None = None

    @property
    def candidate_id(self) -> str:
        return f"{self.probe.kind.name.lower()}/{self.target.name.lower()}"

    @property
    def ranked(self) -> bool:
        """AVAILABLE and REQUIRES_APPROVAL are ranked; the rest go to ``unavailable``."""
        return self.verdict.availability in (
            Availability.AVAILABLE,
            Availability.REQUIRES_APPROVAL,
        )


@dataclass(frozen=True)
class EvidencePlan:
    """The planner's answer. Nothing in it is executable, and it carries no score."""

    subject: str
    predicate: str
    outcome: PlanOutcome
    resolution_status: ResolutionStatus
    leader_key: str
    leader_band: SupportBand
    requires_review: bool
    gaps: tuple[Gap, ...]
    candidates: tuple[Candidate, ...]
    unavailable: tuple[Candidate, ...]


__all__ = [
    "AcquisitionPolicy",
    "ActionRisk",
    "Availability",
    "AvailabilityReason",
    "AvailabilityVerdict",
    "Candidate",
    "CostBand",
    "CountedClaim",
    "Discrimination",
    "DiscriminationBasis",
    "EvidencePlan",
    "Gap",
    "GapKind",
    "GapSource",
    "Independence",
    "JsonValue",
    "LatencyBand",
    "MeasurementBasis",
    "MissingSignalNote",
    "Outcome",
    "OutcomeAssumption",
    "PlanInput",
    "PlanOutcome",
    "PrivacyExposure",
    "Probe",
    "ProbeKind",
    "RationaleFlag",
    "Recency",
    "Resolution",
    "ResolutionStatus",
    "SideEffect",
    "SignalAvailability",
    "SignalClass",
    "SupportBand",
    "ValueView",
]
