"""What the reference executor is told, what it does, and what it reports.

The executor is the only Assay component that acts, so everything it did must
be reconstructable from its report: which candidate it took and why that one,
which it skipped and why, which approval it acted under (a recorded one from the
approval service, named by its id, or a local ``--approve``, and for which
grants), and for each acquisition its observed latency and outcome next to the
planner's declared latency class, so the catalogue's authored classes can be
checked against reality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from assay.v1 import claim_pb2

# The probes this executor can perform. The others (QUERY_CI_STATUS,
# BOUNDED_REPLAY_EXPERIMENT) need network or replay machinery it does not have.
IMPLEMENTED_PROBES = frozenset(
    {"HUMAN_REVIEW", "VERIFY_ARTIFACT_HASH", "INSPECT_VCS_STATE", "RERUN_TEST"}
)

# Upper bounds of the planner's declared latency classes, in seconds, for the
# "was the declared class right?" check. HOURS is open-ended.
LATENCY_BAND_BOUNDS: dict[str, float] = {"SECONDS": 60.0, "MINUTES": 3600.0}


class Outcome(StrEnum):
    """What one acquisition came to."""

    OBSERVED = "OBSERVED"  # the probe ran and produced claims
    CASE_ENQUEUED = "CASE_ENQUEUED"  # a human-review case now waits for reviewers
    AWAITING_REVIEW = "AWAITING_REVIEW"  # a known case has no frozen gold label yet
    GOLD_LABEL_RETURNED = "GOLD_LABEL_RETURNED"  # a frozen gold label came back as a claim
    NO_LABEL = "NO_LABEL"  # the gold label is UNRESOLVED / NOT_EVALUABLE: no claim
    SOURCE_NOT_ACCEPTED = "SOURCE_NOT_ACCEPTED"  # the resolver's table lacks the claim's kind
    FAILED = "FAILED"  # the probe could not observe (no repo, timeout, missing file)


class StopReason(StrEnum):
    """Why a run ended."""

    RESOLVED = "RESOLVED"
    AWAITING_REVIEW = "AWAITING_REVIEW"
    NO_ACTIONABLE_CANDIDATE = "NO_ACTIONABLE_CANDIDATE"
    ITERATION_LIMIT = "ITERATION_LIMIT"
    # An approval was asked for and never became a consumed grant: nothing was done.
    APPROVAL_DENIED = "APPROVAL_DENIED"  # an approver denied it (their reason is shown)
    APPROVAL_EXPIRED = "APPROVAL_EXPIRED"  # not decided (or not used) before it expired
    APPROVAL_REVOKED = "APPROVAL_REVOKED"  # withdrawn by the requester or an operator
    APPROVAL_TIMEOUT = "APPROVAL_TIMEOUT"  # still pending when the run stopped waiting
    APPROVAL_REFUSED = "APPROVAL_REFUSED"  # the approval service refused the request or use


class ApprovalOutcome(StrEnum):
    """What asking the approval service for one candidate came to."""

    CONSUMED = "CONSUMED"  # granted, and used once by this run: the only one that acts
    DENIED = "DENIED"
    EXPIRED = "EXPIRED"
    REVOKED = "REVOKED"
    TIMEOUT = "TIMEOUT"
    REFUSED = "REFUSED"


# How a run that asked and may not act ends.
APPROVAL_STOPS = {
    ApprovalOutcome.DENIED: StopReason.APPROVAL_DENIED,
    ApprovalOutcome.EXPIRED: StopReason.APPROVAL_EXPIRED,
    ApprovalOutcome.REVOKED: StopReason.APPROVAL_REVOKED,
    ApprovalOutcome.TIMEOUT: StopReason.APPROVAL_TIMEOUT,
    ApprovalOutcome.REFUSED: StopReason.APPROVAL_REFUSED,
}


class SkipReason(StrEnum):
    """Why a ranked candidate was not taken."""

    NEEDS_APPROVAL = "NEEDS_APPROVAL"  # REQUIRES_APPROVAL, no approval service, no --approve
    NOT_GRANTED = "NOT_GRANTED"  # AVAILABLE per the plan but a side effect is not granted here
    NOT_IMPLEMENTED = "NOT_IMPLEMENTED"
    NOT_CONFIGURED = "NOT_CONFIGURED"  # e.g. VERIFY_ARTIFACT_HASH without an artifact path
    ALREADY_TRIED = "ALREADY_TRIED"


@dataclass(frozen=True)
class ProbeSetup:
    """Where the local probes look. A probe whose setting is missing is not configured."""

    artifact: Path | None = None  # VERIFY_ARTIFACT_HASH: the file to hash
    repo: Path | None = None  # INSPECT_VCS_STATE: the git work tree
    vcs_field: str = "head"  # which observation becomes the claim's value: head|clean|branch
    test_command: tuple[str, ...] = ()  # RERUN_TEST: argv, run in a copy of `worktree`
    worktree: Path | None = None  # RERUN_TEST: the tree to copy (default: the current dir)
    test_timeout: float = 120.0


@dataclass(frozen=True)
class Settings:
    """One executor run: the target, the operator's policy and approvals, and the bounds."""

    subject: str
    predicate: str
    granted: frozenset[str] = frozenset()  # SideEffectClass short names
    # ProbeKind short names approved locally (--approve): by whoever runs the executor, not
    # recorded in the ledger; a dev-mode convenience, never combined with the approval service.
    approvals: frozenset[str] = frozenset()
    approval_wait: float = 300.0  # seconds to wait for the approval service's decision
    cloud_sync_allowed: bool = False
    egress_allowed: bool = False
    tenant: str = "default"
    cases: tuple[str, ...] = ()  # human-review cases to collect gold labels from
    max_iterations: int = 5
    probes: ProbeSetup = field(default_factory=ProbeSetup)
    # Where each acquisition's latency, outcome and effect on the decision is appended
    # (``observations``); None records nothing.
    observations: Path | None = None
    # The share of semantics that resolve to send to review anyway, as spot-check cases
    # (unbiased gold labels for calibration); 0 sends none.
    spot_check_rate: float = 0.0


@dataclass(frozen=True)
class ProbeResult:
    """What a probe implementation returns: claims (possibly none), outcome and a detail line."""

    outcome: Outcome
    detail: str
    claims: tuple[claim_pb2.Claim, ...] = ()
    case_id: str = ""


@dataclass(frozen=True)
class Skip:
    """A ranked candidate the executor did not take, and why."""

    candidate_id: str
    reason: SkipReason


@dataclass(frozen=True)
class Acquisition:
    """One probe the executor performed (or one gold label it collected)."""

    probe: str
    candidate_id: str
    outcome: Outcome
    detail: str
    latency_seconds: float
    declared_latency: str  # the planner's class: SECONDS, MINUTES or HOURS
    declared_cost: str = ""  # the planner's class: LOW, MEDIUM or HIGH (no measure of it here)
    approved_grants: tuple[str, ...] = ()  # the grants an approval stood in for
    claim_ids: tuple[str, ...] = ()
    case_id: str = ""
    approval_id: str = ""  # the consumed approval it ran under ("": none, or a local --approve)

    @property
    def within_declared_latency(self) -> bool | None:
        """Whether the observed latency fits the declared class (None: class unknown)."""
        if self.declared_latency == "HOURS":
            return True  # open-ended: anything up to days fits
        bound = LATENCY_BAND_BOUNDS.get(self.declared_latency)
        return None if bound is None else self.latency_seconds < bound


@dataclass(frozen=True)
class ApprovalAsked:
    """An approval this run asked for and now waits on (printed as it happens)."""

    approval_id: str
    probe: str
    candidate_id: str
    tenant: str
    quorum: int  # distinct approvers needed, none of them the requester
    requester: str
    wait_seconds: float


@dataclass(frozen=True)
class ApprovalRecord:
    """How an asked-for approval ended for this run. ``reason`` is the denier's or
    revoker's text, or why the service refused: untrusted, shown as data."""

    approval_id: str  # "" when the service refused the request itself
    outcome: ApprovalOutcome
    decided_by: tuple[str, ...] = ()  # who approved (CONSUMED) or denied / revoked
    reason: str = ""


@dataclass(frozen=True)
class Step:
    """One iteration: the resolution seen, the plan's choice, and what was done."""

    iteration: int
    status: str  # RESOLVED, CONFLICTED or INSUFFICIENT
    leader: str  # canonical JSON of the leading value, or ""
    support: float  # the leader's support, for display only
    skipped: tuple[Skip, ...] = ()
    acquisition: Acquisition | None = None
    approval: ApprovalRecord | None = None  # the approval asked for this step, if any


@dataclass
class RunReport:
    """Everything a run did, in order, and how it ended."""

    subject: str
    predicate: str
    collected: list[Acquisition] = field(default_factory=list)  # gold labels, before step 1
    steps: list[Step] = field(default_factory=list)
    stop_reason: StopReason = StopReason.ITERATION_LIMIT
    final_status: str = ""
    final_leader: str = ""
    final_support: float = 0.0
    pending_cases: list[str] = field(default_factory=list)
    approvals_used: list[str] = field(default_factory=list)
    # A resolved semantic sampled for review (``Settings.spot_check_rate``): its case.
    spot_check_case: str = ""
    evidence: claim_pb2.Evidence = field(default_factory=claim_pb2.Evidence)
