"""The planner's vocabulary: the contract's enums as domain ``IntEnum``s.

They carry the contract's names and numbers (``assay.v1``), so converting is a
cast; a unit test pins that they match the generated enums. Kept apart from
``model`` so the values the planner computes with stay readable on one screen.
"""

from __future__ import annotations

from enum import IntEnum


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


class MeasurementBasis(IntEnum):
    UNSPECIFIED = 0
    DECLARED = 1
    OBSERVED = 2


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
