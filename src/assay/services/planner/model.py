"""The planner's domain vocabulary: enums, its inputs, and the plan it builds.

The planner never fuses evidence: it reads a ``Resolution`` (the part of the
resolver's answer it needs, already converted from the wire) and reasons about
gaps, probes, policy and ranking. Everything here is a frozen value, so a plan
is a pure function of its inputs.

The enums carry the contract's numbers (``assay.v1``), so conversion is a
cast; a unit test pins that names and numbers match the generated enums.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple, TypeAlias

JsonValue: TypeAlias = Any
"""A decoded JSON value (what a ``google.protobuf.Value`` holds)."""


class SignalClass(IntEnum):
    UNSPECIFIED = 0
    PROCESS_RESULT = 1
    TOOL_TRACE = 2
    TOOL_RESULT_PAYLOAD = 3
    FINAL_RESPONSE = 4
    RAW_REASONING = 5
    USER_PROMPT = 6
    SYSTEM_PROMPT = 7
    SESSION_METADATA = 8
    HUMAN_JUDGEMENT = 9


class SignalAvailability(IntEnum):
    UNSPECIFIED = 0
    AVAILABLE = 1
    UNSUPPORTED = 2
    UNAVAILABLE = 3
    COLLECTION_FAILED = 4
    REDACTED = 5
    DISABLED = 6


class SideEffect(IntEnum):
    UNSPECIFIED = 0
    FILESYSTEM_READ = 1
    FILESYSTEM_WRITE_WORKTREE = 2
    FILESYSTEM_WRITE_OUTSIDE_WORKTREE = 3
    PROCESS_SPAWN = 4
    VCS_READ = 5
    NETWORK_CALL = 6


class ProbeKind(IntEnum):
    UNSPECIFIED = 0
    RERUN_TEST = 1
    INSPECT_VCS_STATE = 2
    QUERY_CI_STATUS = 3
    VERIFY_ARTIFACT_HASH = 4
    BOUNDED_REPLAY_EXPERIMENT = 5
    HUMAN_REVIEW = 6


class GapKind(IntEnum):
    UNSPECIFIED = 0
    UNRESOLVED_CONFLICT = 1
    ALL_SUPPORT_DISCOUNTED = 2
    SINGLE_SOURCE_CORROBORATION = 3
    INDEPENDENCE_UNVERIFIED = 4
    STALE_SUPPORT = 5
    MISSING_SIGNAL = 6
    UNOBSERVABLE_SIGNAL = 7
    NO_EVIDENCE_AT_ALL = 8
    NO_ACTIVE_CLAIMS = 9
    UNCORROBORATED = 10


class GapSource(IntEnum):
    UNSPECIFIED = 0
    RESOLUTION = 1
    MISSING_SIGNAL_NOTE = 2
    CAPABILITIES = 3
    EMPTY_EVIDENCE = 4


class Availability(IntEnum):
    UNSPECIFIED = 0
    AVAILABLE = 1
    REQUIRES_APPROVAL = 2
    UNAVAILABLE = 3
    FORBIDDEN = 4


class AvailabilityReason(IntEnum):
    UNSPECIFIED = 0
    ALL_REQUIREMENTS_MET = 1
    SIDE_EFFECT_FORBIDDEN = 2
    SIGNAL_NOT_OBSERVABLE = 3
    SIDE_EFFECT_NOT_GRANTED = 4
    EGRESS_NOT_ALLOWED = 5
    CLOUD_SYNC_NOT_ALLOWED = 6


class Independence(IntEnum):
    UNSPECIFIED = 0
    INDEPENDENT_OF_COUNTED = 1
    UNVERIFIED = 2
    SAME_SOURCE_AS_COUNTED = 3


class Discrimination(IntEnum):
    UNSPECIFIED = 0
    HIGH = 1
    MEDIUM = 2
    LOW = 3


class DiscriminationBasis(IntEnum):
    UNSPECIFIED = 0
    LEADER_CHANGED = 1
    STATUS_CHANGED = 2
    SUPPORT_BAND_CHANGED = 3
    RATIONALE_FLAG_CLEARED = 4
    NO_CHANGE = 5


class OutcomeAssumption(IntEnum):
    UNSPECIFIED = 0
    RUNNER_UP = 1
    CORROBORATE_LEADER = 2
    FIRST_OBSERVATION = 3


class Recency(IntEnum):
    UNSPECIFIED = 0
    FRESH_OBSERVATION = 1
    REVIEW_OF_RECORDED = 2


class CostBand(IntEnum):
    UNSPECIFIED = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3


class LatencyBand(IntEnum):
    UNSPECIFIED = 0
    SECONDS = 1
    MINUTES = 2
    HOURS = 3


class ActionRisk(IntEnum):
    UNSPECIFIED = 0
    NONE = 1
    READ_ONLY = 2
    LOCAL_EFFECTS = 3
    EXTERNAL_EFFECTS = 4


class PrivacyExposure(IntEnum):
    UNSPECIFIED = 0
    LOCAL_ONLY = 1
    HUMAN_REVIEWER = 2
    EXTERNAL_SERVICE = 3


class SupportBand(IntEnum):
    UNSPECIFIED = 0
    NONE = 1
    WEAK = 2
    MODERATE = 3
    STRONG = 4


class PlanOutcome(IntEnum):
    UNSPECIFIED = 0
    ACQUISITION_RECOMMENDED = 1
    NO_GAP_IDENTIFIED = 2


class ResolutionStatus(IntEnum):
    """The resolver's status (``assay.v1.ResolutionStatus``)."""

    UNSPECIFIED = 0
    RESOLVED = 1
    CONFLICTED = 2
    INSUFFICIENT = 3


class RationaleFlag(IntEnum):
    """The resolver's rationale flags (``assay.v1.RationaleFlag``)."""

    UNSPECIFIED = 0
    ALL_SUPPORT_DISCOUNTED = 1
    SINGLE_SOURCE_CORROBORATION = 2
    INDEPENDENCE_UNVERIFIED = 3
    STALE_SUPPORT = 4


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
    """One value with support: its canonical key, the value itself, and what counted for it."""

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


@dataclass(frozen=True)
class Outcome:
    """The hypothetical claim that stands for a plausible result of a probe."""

    assumption: OutcomeAssumption
    source: str
    value_key: str
    value: JsonValue
    correlation_group: str
    # False when the group is a defaulted one (``source|source_ref``) the claim joins.
    declared: bool = True

    @property
    def dedup_key(self) -> tuple[str, str, bool, str]:
        """Candidates whose outcomes share this key share one hypothesis."""
        return (self.source, self.correlation_group, self.declared, self.value_key)


@dataclass(frozen=True)
class Candidate:
    """One probe aimed at one signal class, with every ranking dimension."""

    probe: Probe
    target: SignalClass
    gap_ids: tuple[str, ...]
    verdict: AvailabilityVerdict
    independence: Independence
    outcome: Outcome
    discrimination: Discrimination = Discrimination.UNSPECIFIED
    basis: DiscriminationBasis = DiscriminationBasis.UNSPECIFIED

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
