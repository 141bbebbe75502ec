"""The resolver's domain vocabulary: enums, the compact claim row, and resolution results.

Claims arrive by the hundred thousand, so the per-claim representation is a
plain tuple (``Row``), built once by the intake pass and read by unpacking:
no per-claim object beyond it, no per-claim dataclass. Everything per value,
per semantic or per request is a frozen dataclass, since there are few.

The enums carry the contract's numbers (``assay.v1``), so conversion is a cast;
a unit test pins that they match the generated enums.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from operator import itemgetter
from typing import Final, TypeAlias

SemKey: TypeAlias = tuple[str, str]
"""(subject, predicate): the unit of resolution."""

# (-effective_weight, claim_ref, source, reliability, correlation_group,
#  group_declared, index, semantic, value_key).
# The weight is negated so that sorting plain rows (no key function) gives
# "strongest first, ties by claim_ref ascending", the order every list in a
# resolution uses. ``index`` is the claim's position in the request
# (hypothesis and proposal claims continue after the base), used to echo an
# excluded claim back and to find its observe time (``Staleness.observed``).
Row: TypeAlias = tuple[float, str, str, float, str, bool, int, SemKey, str]

NEG_W: Final = 0
REF: Final = 1
SOURCE: Final = 2
RELIABILITY: Final = 3
GROUP: Final = 4
DECLARED: Final = 5
INDEX: Final = 6
SEM: Final = 7
VALUE_KEY: Final = 8


class RelationKind(IntEnum):
    UNSPECIFIED = 0
    SUPPORTS = 1
    CONTRADICTS = 2
    SUPERSEDES = 3


class ReviewStatus(IntEnum):
    UNSPECIFIED = 0
    UNREVIEWED = 1
    ACCEPTED = 2
    REJECTED = 3


class Status(IntEnum):
    UNSPECIFIED = 0
    RESOLVED = 1
    CONFLICTED = 2
    INSUFFICIENT = 3


class Flag(IntEnum):
    UNSPECIFIED = 0
    ALL_SUPPORT_DISCOUNTED = 1
    SINGLE_SOURCE_CORROBORATION = 2
    INDEPENDENCE_UNVERIFIED = 3
    STALE_SUPPORT = 4


class Exclusion(IntEnum):
    UNSPECIFIED = 0
    REVIEWED_OUT = 1
    SUPERSEDED = 2


class WarningCode(IntEnum):
    UNSPECIFIED = 0
    DANGLING_RELATION = 1
    RELIABILITY_CAPPED = 2
    SUPERSESSION_CYCLE = 3
    LEGACY_BUNDLE = 4


class Decision(IntEnum):
    UNSPECIFIED = 0
    AUTO_APPLY = 1
    REQUIRES_REVIEW = 2


class DecisionReason(IntEnum):
    UNSPECIFIED = 0
    NOT_SAFETY_SENSITIVE = 1
    SAFETY_RESOLVED_UNCHANGED = 2
    SAFETY_CONFLICTED_BEFORE = 3
    SAFETY_CONFLICTED_AFTER = 4
    SAFETY_LEADER_CHANGED = 5


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation of a claim that is not reviewed out (a rejected claim's relations are void)."""

    row: Row
    kind: RelationKind
    target_id: str


@dataclass(slots=True)
class Intake:
    """One validated list of claims, grouped for fusion.

    ``values`` holds every claim that is not reviewed out, by semantic then
    value key; supersession is applied later, because it depends on which ids
    exist (a hypothesis can add the target of a base relation).
    """

    values: dict[SemKey, dict[str, list[Row]]] = field(default_factory=dict)
    # Rows of the claims that have an id, in request order (unique: the intake checks).
    id_rows: list[Row] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    rejected: list[Row] = field(default_factory=list)
    # (row, the reliability the claim stated) for each claim the table capped.
    capped: list[tuple[Row, float]] = field(default_factory=list)
    count: int = 0
    _ids: dict[str, Row] | None = None

    @property
    def ids(self) -> dict[str, Row]:
        """Rows by claim id. Built on first use: most requests never look an id up."""
        if self._ids is None:
            self._ids = dict(zip(map(itemgetter(REF), self.id_rows), self.id_rows, strict=True))
        return self._ids


@dataclass(frozen=True, slots=True)
class Warning:
    """A non-fatal finding about one claim."""

    code: WarningCode
    claim_ref: str
    message: str


@dataclass(frozen=True, slots=True)
class Excluded:
    """A claim that did not take part in fusion, with why."""

    row: Row
    reason: Exclusion
    superseded_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ValueSupport:
    """The support for one value.

    ``claims`` holds every active claim asserting it, strongest first; ``counted`` the
    strongest claim of each correlation group, strongest first. A group is fully described
    by its counted row (name, declared, weight), so no per-group object is built.
    """

    value_key: str
    support: float
    claims: tuple[Row, ...]
    counted: tuple[Row, ...]


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the evidence supports for one semantic; ``values[0]`` leads unless INSUFFICIENT."""

    sem: SemKey
    status: Status
    values: tuple[ValueSupport, ...]
    safety_sensitive: bool
    requires_review: bool
    rationale: tuple[Flag, ...]
    excluded: tuple[Excluded, ...]
    warnings: tuple[Warning, ...]

    @property
    def leader(self) -> ValueSupport | None:
        return self.values[0] if self.values else None

    @property
    def confidence(self) -> float:
        """Display only: the leader's support, 0 without a leader."""
        return self.values[0].support if self.values else 0.0


@dataclass(frozen=True, slots=True)
class Staleness:
    """``as_of - stale_after`` as seconds since the epoch, and each claim's observe time."""

    horizon: float
    # Observe time (seconds since the epoch) of the claim at an index, None if absent: a
    # lookup in the times read at intake, never a read of the request.
    observed: Callable[[int], float | None]


@dataclass(frozen=True, slots=True)
class Active:
    """What supersession leaves: dropped claims by index, and per-semantic warnings."""

    superseded: Mapping[int, tuple[Row, tuple[str, ...]]]
    warnings: Mapping[SemKey, Sequence[Warning]]


@dataclass(frozen=True, slots=True)
class ProposalOutcome:
    """Reconcile's answer for one proposal."""

    claim_ref: str
    decision: Decision
    reason: DecisionReason
    before: Resolution
    after: Resolution
