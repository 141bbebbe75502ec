"""The adjudication domain's vocabulary: frozen values, free of gRPC and of the database.

Everything the service stores or computes is one of these. Enum values are the
contract's enum names without their prefix, so ``convert`` maps them by name.
Case state is deliberately absent from ``Case``: it is derived (``state.py``),
never stored, so no write path can overwrite a disagreement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from functools import cached_property
from typing import Any

# A JSON value as decoded from ``google.protobuf.Value`` (numbers are floats there).
JsonValue = Any


class ReviewerKind(Enum):
    HUMAN = "HUMAN"
    MECHANISM_TEST_FIXTURE = "MECHANISM_TEST_FIXTURE"


class Provenance(Enum):
    HUMAN_ADJUDICATED = "HUMAN_ADJUDICATED"
    SYNTHETIC_MECHANISM_TEST = "SYNTHETIC_MECHANISM_TEST"


class Basis(Enum):
    """How a round ended. There is no MAJORITY_VOTE member, on purpose."""

    UNANIMOUS_AGREEMENT = "UNANIMOUS_AGREEMENT"
    ADJUDICATOR_DECISION = "ADJUDICATOR_DECISION"
    UNRESOLVED = "UNRESOLVED"
    NOT_EVALUABLE = "NOT_EVALUABLE"

    @property
    def has_label(self) -> bool:
        return self in (Basis.UNANIMOUS_AGREEMENT, Basis.ADJUDICATOR_DECISION)


class Outcome(Enum):
    LABEL = "LABEL"
    UNRESOLVED = "UNRESOLVED"
    NOT_EVALUABLE = "NOT_EVALUABLE"
    # A record that withdraws the review it supersedes: it counts as no review.
    WITHDRAWN = "WITHDRAWN"


class CaseState(Enum):
    AWAITING_REVIEW = "AWAITING_REVIEW"
    AWAITING_SECOND_REVIEW = "AWAITING_SECOND_REVIEW"
    AGREED = "AGREED"
    DISAGREED = "DISAGREED"
    RESOLVED = "RESOLVED"
    UNRESOLVED = "UNRESOLVED"
    NOT_EVALUABLE = "NOT_EVALUABLE"
    FROZEN = "FROZEN"
    # Only as some callers see AGREED or DISAGREED (``permissions.state_seen_by``).
    AWAITING_RESOLUTION = "AWAITING_RESOLUTION"
    AWAITING_MORE_REVIEWS = "AWAITING_MORE_REVIEWS"


class AuditEventType(Enum):
    REVIEWER_REGISTERED = "REVIEWER_REGISTERED"
    CASE_ENQUEUED = "CASE_ENQUEUED"
    REVIEW_SUBMITTED = "REVIEW_SUBMITTED"
    CASE_RESOLVED = "CASE_RESOLVED"
    GOLD_LABEL_FROZEN = "GOLD_LABEL_FROZEN"
    TENANT_RECORDS_DELETED = "TENANT_RECORDS_DELETED"
    EXPIRED_RECORDS_SWEPT = "EXPIRED_RECORDS_SWEPT"
    APPROVAL_REQUESTED = "APPROVAL_REQUESTED"
    APPROVAL_DECIDED = "APPROVAL_DECIDED"
    APPROVAL_GRANTED = "APPROVAL_GRANTED"
    APPROVAL_DENIED = "APPROVAL_DENIED"
    APPROVAL_REVOKED = "APPROVAL_REVOKED"
    APPROVAL_CONSUMED = "APPROVAL_CONSUMED"
    APPROVAL_EXPIRED = "APPROVAL_EXPIRED"
    CASE_ASSIGNED = "CASE_ASSIGNED"
    CASE_UNASSIGNED = "CASE_UNASSIGNED"
    CASE_REASSIGNED = "CASE_REASSIGNED"


class AuditProblem(Enum):
    HASH_MISMATCH = "HASH_MISMATCH"
    BROKEN_LINK = "BROKEN_LINK"
    SEQUENCE_GAP = "SEQUENCE_GAP"
    GOLD_LABEL_MISMATCH = "GOLD_LABEL_MISMATCH"
    UNRECORDED_GOLD_LABEL = "UNRECORDED_GOLD_LABEL"
    UNREADABLE = "UNREADABLE"
    RECORD_MISMATCH = "RECORD_MISMATCH"
    UNRECORDED_RECORD = "UNRECORDED_RECORD"


class RecordKind(Enum):
    """The kind of stored record a verification names."""

    REVIEWER = "REVIEWER"
    CASE = "CASE"
    REVIEW = "REVIEW"
    RESOLUTION = "RESOLUTION"
    GOLD_LABEL = "GOLD_LABEL"
    APPROVAL = "APPROVAL"
    APPROVAL_STEP = "APPROVAL_STEP"
    CASE_ASSIGNMENT = "CASE_ASSIGNMENT"


@dataclass(frozen=True)
class Reviewer:
    reviewer_id: str
    kind: ReviewerKind
    attested_by: str
    register_time: datetime
    # The authenticated identity the reviewer is bound to ("" for a dev-mode registration):
    # only a caller with this issuer and subject may review or adjudicate as this reviewer.
    identity_issuer: str = ""
    identity_subject: str = ""


@dataclass(frozen=True)
class Lineage:
    origin: str
    origin_ref: str = ""


@dataclass(frozen=True)
class CaseClaim:
    """One claim a case was raised from (``Case.claims``): never shown to reviewers."""

    source_kind: str
    value: JsonValue
    confidence: float = 0.0
    correlation_group: str = ""
    claim_id: str = ""
    observe_time: datetime | None = None


@dataclass(frozen=True)
class CaseInput:
    """What a caller supplies to enqueue a case (validated by ``cases.validate_case``)."""

    tenant: str
    subject: str
    predicate: str
    candidate_values: tuple[JsonValue, ...]
    evidence_refs: tuple[str, ...]
    context: str
    local_verdict: JsonValue
    lineage: Lineage
    expire_time: datetime | None
    # Reviews each round needs; 0: the server's default for the predicate (see ``overlap``).
    required_reviews: int = 0
    claims: tuple[CaseClaim, ...] = ()
    # 0: raised from a conflict; in (0, 1]: a spot-check sampled at this rate.
    spot_check_rate: float = 0.0


@dataclass(frozen=True)
class Case:
    """The operator view: everything stored about a case, including the system's verdict."""

    case_id: str
    tenant: str
    subject: str
    predicate: str
    candidate_values: tuple[JsonValue, ...]
    evidence_refs: tuple[str, ...]
    context: str
    local_verdict: JsonValue
    lineage: Lineage
    create_time: datetime
    expire_time: datetime
    content_digest: str
    # Which canonical form ``content_digest`` is in ("assay.case.v1" / "assay.case.v2",
    # see ``cases.content_digest``): each case is checked in its own.
    content_digest_version: str
    # Independent reviews each round needs before it can be resolved (2 for older cases).
    required_reviews: int = 2
    # The claims it was raised from, and its spot-check rate (0: raised from a conflict).
    claims: tuple[CaseClaim, ...] = ()
    spot_check_rate: float = 0.0


@dataclass(frozen=True)
class BlindedCase:
    """The reviewer view. No verdict, no lineage, no reviews: see ``blinding.py``."""

    case_id: str
    subject: str
    predicate: str
    candidate_values: tuple[JsonValue, ...]
    evidence_refs: tuple[str, ...]
    context: str
    round: int


@dataclass(frozen=True)
class Review:
    review_id: str
    case_id: str
    reviewer_id: str
    round: int
    outcome: Outcome
    label: JsonValue  # None unless outcome is LABEL
    label_key: str  # canonical JSON of the label, or ""
    reason: str
    submit_time: datetime
    # Hex of 16 random bytes: what makes the audit commitment to the answer unguessable
    # ("" for reviews stored before salting; see ``reviews.answer_commitment``).
    salt: str = ""
    # The reviewer's note for the adjudicator (untrusted text; "" when none).
    rationale: str = ""
    # The review record this one amends or withdraws ("" for a first submission).
    supersedes: str = ""


@dataclass(frozen=True)
class Resolution:
    case_id: str
    round: int
    basis: Basis
    label: JsonValue
    label_key: str
    adjudicator_reviewer_id: str
    review_ids: tuple[str, ...]
    resolve_time: datetime
    # Why the round was decided so (untrusted text; "" when none was given).
    rationale: str = ""


@dataclass(frozen=True)
class GoldLabelRevision:
    """One insert-only, metadata-only revision. Build it with ``gold.new_revision`` or
    ``gold.checked_revision`` (which re-verifies the digest); never by hand."""

    case_id: str
    revision: int
    previous_revision: int
    round: int
    tenant: str
    basis: Basis
    label: JsonValue
    label_key: str
    contributing_review_ids: tuple[str, ...]
    contributing_reviewer_ids: tuple[str, ...]
    adjudicator_reviewer_id: str
    provenance: Provenance
    freeze_time: datetime
    digest: str
    # Which canonical form ``digest`` is in ("assay.gold.v1" / "assay.gold.v2", see ``gold``).
    digest_version: str


@dataclass(frozen=True)
class CaseSnapshot:
    """What the state rules need about one case, read in one transaction.

    ``round_rows`` are every review record of the current round in the order stored,
    amendments and withdrawals included; ``round_reviews`` are the ones that count."""

    case: Case
    revision_count: int
    round_rows: tuple[Review, ...]
    round_resolution: Resolution | None  # the current round's resolution, if any

    @property
    def round(self) -> int:
        # The round is derived from the number of frozen revisions (ADR 0014).
        return self.revision_count + 1

    @cached_property
    def round_reviews(self) -> tuple[Review, ...]:
        """The final reviews of the current round, in the order their records were stored
        (worked out once per snapshot: the state, permission and queue rules all ask)."""
        return final_reviews(self.round_rows)

    def latest_of(self, reviewer_id: str) -> Review | None:
        """The reviewer's latest record in the current round (a withdrawal included)."""
        return next(
            (r for r in current_records(self.round_rows) if r.reviewer_id == reviewer_id), None
        )


def superseded_ids(rows: Iterable[Review]) -> set[str]:
    """The ids of the records a later one among ``rows`` amends or withdraws."""
    return {r.supersedes for r in rows if r.supersedes}


def current_records(rows: tuple[Review, ...]) -> tuple[Review, ...]:
    """The records no later record supersedes: each reviewer's latest, withdrawals included."""
    superseded = superseded_ids(rows)
    return tuple(r for r in rows if r.review_id not in superseded)


def final_reviews(rows: tuple[Review, ...]) -> tuple[Review, ...]:
    """The reviews that count: each reviewer's latest record, unless it is a withdrawal."""
    return tuple(r for r in current_records(rows) if r.outcome is not Outcome.WITHDRAWN)


@dataclass(frozen=True)
class Actor:
    """The authenticated principal behind a change: token issuer (or "x509") and subject."""

    issuer: str
    subject: str


@dataclass(frozen=True)
class AuditEvent:
    sequence: int
    event_type: AuditEventType
    occur_time: datetime
    payload: Mapping[str, str]
    previous_hash: str
    hash: str
    # Who caused it; None for events written without authentication (dev mode).
    actor: Actor | None = None


@dataclass(frozen=True)
class ChainHead:
    sequence: int
    hash: str


@dataclass(frozen=True)
class ChainVerdict:
    ok: bool
    events_checked: int
    head: ChainHead
    first_bad_sequence: int = 0
    problem: AuditProblem | None = None
    detail: str = ""
    bad_record_kind: RecordKind | None = None
    bad_record_id: str = ""


@dataclass(frozen=True)
class TenantScope:
    """The tenants a read or a sweep may touch: ``tenants`` None means every tenant."""

    tenants: frozenset[str] | None = None

    @property
    def everything(self) -> bool:
        return self.tenants is None

    def allows(self, tenant: str) -> bool:
        return self.tenants is None or tenant in self.tenants

    def fingerprint(self) -> str:
        """What a page token is bound to besides the query: "" for every tenant."""
        return "" if self.tenants is None else "|" + ",".join(sorted(self.tenants))


EVERY_TENANT = TenantScope(None)


@dataclass(frozen=True)
class Caller:
    """Who is calling, as far as the adjudication rules care: the identity (None on a server
    without authentication, where no identity rule applies), the tenants it may touch, and
    the roles that widen what it may see."""

    actor: Actor | None
    scope: TenantScope
    operator: bool
    adjudicator: bool
    auditor: bool
    # The reviewer id the auth policy binds the identity to ("": its subject is the id).
    reviewer_id: str = ""

    @property
    def subject(self) -> str:
        """The id the caller reviews and adjudicates as: its bound reviewer id, else its
        subject ("" in dev mode)."""
        if self.actor is None:
            return ""
        return self.reviewer_id or self.actor.subject


# A server without authentication: every tenant, every view, no identity to check.
DEV_CALLER = Caller(None, EVERY_TENANT, operator=True, adjudicator=True, auditor=True)


@dataclass(frozen=True)
class CaseDetail:
    """What GetCase shows one caller: the operator view, or an adjudicator's redacted one
    (no verdict, only the current round's reviews, no resolutions)."""

    snapshot: CaseSnapshot
    reviews: tuple[Review, ...]
    resolutions: tuple[Resolution, ...]
    verdict_shown: bool


@dataclass(frozen=True)
class DeletedCounts:
    cases: int = 0
    reviews: int = 0
    resolutions: int = 0


@dataclass(frozen=True)
class ExportRecord:
    case: BlindedCase
    revision: GoldLabelRevision
    # The GOLD_LABEL_FROZEN event that recorded ``revision`` (set once checked against it).
    event: AuditEvent | None = None
    # Every review of the case, by round then submit order (an export with reviews only).
    reviews: tuple[Review, ...] = ()
    # The case's CASE_ENQUEUED event, and each review's REVIEW_SUBMITTED event in the order
    # of ``reviews`` (set once the case and reviews were checked against them).
    case_event: AuditEvent | None = None
    review_events: tuple[AuditEvent, ...] = ()
    # The resolution the revision froze, and its CASE_RESOLVED event (its rationale is
    # exported; None once the case is gone).
    resolution: Resolution | None = None
    resolution_event: AuditEvent | None = None
    # The case's claims and spot-check rate (hidden from reviewers; exported for auditors).
    claims: tuple[CaseClaim, ...] = ()
    spot_check_rate: float = 0.0


@dataclass(frozen=True)
class ExportExclusion:
    case_id: str
    revision: int
    reason: str = "CASE_DELETED"


@dataclass
class ExportTally:
    """Counts accumulated while streaming an export; becomes the manifest."""

    record_count: int = 0
    human_adjudicated_count: int = 0
    synthetic_count: int = 0
    exclusions: list[ExportExclusion] = field(default_factory=list)

    def add(self, revision: GoldLabelRevision) -> None:
        self.record_count += 1
        if revision.provenance is Provenance.HUMAN_ADJUDICATED:
            self.human_adjudicated_count += 1
        else:
            self.synthetic_count += 1

    @property
    def contains_synthetic_labels(self) -> bool:
        return self.synthetic_count > 0
