"""Every rule a single claim must satisfy, stated once: field, reason, message and check.

Each path that reads claims takes its rules from ``CLAIM_RULES``: the reference
validation (``validation.check_claim``) walks the table over a claim's ``ClaimFacts``,
the columnar path explains a flagged row by walking the same table over the row's facts
(``columnar.input.checks``) and names its vectorized mask after the rule it computes
(``columnar.input.decode``), and the fast intake, which only detects, is held to every
row by a test that sends one claim breaking each rule through each path. A rule added
here is therefore explained everywhere at once; a path that cannot see it (a proto
``double`` has no presence, so a missing confidence reads as 0.0) is named in that
test's list of exclusions.

A rule's ``field`` is its path below a ``Claim`` message, ``column`` its column in the
Arrow table of ``ResolveColumns``; ``message`` and ``suffix`` are ``str.format``
templates filled from ``values(facts)``. ``broken`` is None for the rule checked across
claims (a repeated id), which each path finds in bulk.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from assay.errors import Reason, excerpt
from assay.prototime import timestamp_problem
from assay.services.resolver.domain.model import RelationKind, ReviewStatus

# ErrorInfo metadata key of the known source kinds (comma-separated), sent once per error.
KNOWN_SOURCES_KEY = "known_sources"


@dataclass(frozen=True, slots=True)
class ClaimFacts:
    """What validation needs to know about one claim, extracted from the wire form."""

    id: str
    subject: str
    predicate: str
    source: str
    confidence: float
    reliability: float | None
    # (sub-path below ``value``, description) when the value cannot be keyed, else None.
    value_problem: tuple[str, str] | None
    review_status: int
    relation: tuple[int, str] | None  # (kind number, target id) when present
    observed: tuple[int, int] | None = None  # observe_time as (seconds, nanos) when present
    value_absent: bool = False  # no value at all (then ``value_problem`` is None)
    confidence_absent: bool = False  # a null confidence (only a column can hold one)


@dataclass(frozen=True, slots=True)
class Violation:
    """One problem: the reason it maps to and the field it concerns."""

    reason: Reason
    field: str
    description: str


Known = Mapping[str, object]
Check = Callable[[ClaimFacts, Known], bool]
Values = Callable[[ClaimFacts], Mapping[str, object]]


def _none(facts: ClaimFacts) -> Mapping[str, object]:
    return {}


@dataclass(frozen=True, slots=True)
class ClaimRule:
    """One rule: where it points, the reason and words it reports, and when it is broken."""

    name: str
    field: str
    column: str
    reason: Reason
    message: str
    broken: Check | None
    values: Values = _none
    suffix: str = ""

    def violation(self, at: str, **values: object) -> Violation:
        """The violation at ``at`` (the rule's field or column path), its templates filled."""
        suffix = self.suffix.format(**values) if self.suffix else ""
        return Violation(self.reason, at + suffix, self.message.format(**values))


def _unit_interval(x: float) -> bool:
    return math.isfinite(x) and 0.0 <= x <= 1.0


def _has_relation(facts: ClaimFacts) -> bool:
    return facts.relation is not None


def _bad_kind(kind: int) -> bool:
    return kind not in RelationKind._value2member_map_ or kind == RelationKind.UNSPECIFIED


def _observe_problem(facts: ClaimFacts) -> str | None:
    return None if facts.observed is None else timestamp_problem(*facts.observed)


_BAD = Reason.INVALID_CLAIM

SUBJECT_REQUIRED = ClaimRule(
    "subject_required", "subject", "subject", _BAD,
    "required: the subject must not be empty",
    lambda f, _: not f.subject,
)  # fmt: skip
PREDICATE_REQUIRED = ClaimRule(
    "predicate_required", "predicate", "predicate", _BAD,
    "required: the predicate must not be empty",
    lambda f, _: not f.predicate,
)  # fmt: skip
VALUE_REQUIRED = ClaimRule(
    "value_required", "value", "value", _BAD,
    "required: the claim must assert a value",
    lambda f, _: f.value_absent,
)  # fmt: skip
VALUE_KEYABLE = ClaimRule(
    "value_keyable", "value", "value", _BAD,
    "{description}",
    lambda f, _: f.value_problem is not None,
    lambda f: {
        "sub": f".{f.value_problem[0]}" if f.value_problem and f.value_problem[0] else "",
        "description": f.value_problem[1] if f.value_problem else "",
    },
    suffix="{sub}",
)  # fmt: skip
SOURCE_REQUIRED = ClaimRule(
    "source_required", "source", "source", _BAD,
    "required: the source kind must not be empty",
    lambda f, _: not f.source,
)  # fmt: skip
SOURCE_KNOWN = ClaimRule(
    "source_known", "source", "source", Reason.UNKNOWN_SOURCE,
    "unknown source kind {source} (the known kinds are in the error's metadata, "
    + KNOWN_SOURCES_KEY + ")",
    lambda f, known: bool(f.source) and f.source not in known,
    lambda f: {"source": excerpt(f.source)},
)  # fmt: skip
CONFIDENCE_REQUIRED = ClaimRule(
    "confidence_required", "confidence", "confidence", _BAD,
    "required: a number in [0, 1]",
    lambda f, _: f.confidence_absent,
)  # fmt: skip
CONFIDENCE_UNIT = ClaimRule(
    "confidence_unit", "confidence", "confidence", _BAD,
    "{confidence!r} is not a number in [0, 1]",
    lambda f, _: not f.confidence_absent and not _unit_interval(f.confidence),
    lambda f: {"confidence": f.confidence},
)  # fmt: skip
RELIABILITY_UNIT = ClaimRule(
    "reliability_unit", "reliability", "reliability", _BAD,
    "{reliability!r} is not a number in [0, 1]",
    lambda f, _: f.reliability is not None and not _unit_interval(f.reliability),
    lambda f: {"reliability": f.reliability},
)  # fmt: skip
OBSERVE_TIME_VALID = ClaimRule(
    "observe_time_valid", "observe_time", "observe_time", _BAD,
    "{problem}",
    lambda f, _: _observe_problem(f) is not None,
    lambda f: {"problem": _observe_problem(f)},
)  # fmt: skip
REVIEW_STATUS_KNOWN = ClaimRule(
    "review_status_known", "review_status", "review_status", _BAD,
    "unknown review status {status}",
    lambda f, _: f.review_status not in ReviewStatus._value2member_map_,
    lambda f: {"status": f.review_status},
)  # fmt: skip
RELATION_NEEDS_ID = ClaimRule(
    "relation_needs_id", "id", "id", Reason.RELATION_WITHOUT_ID,
    "a claim with a relation must have an id",
    lambda f, _: _has_relation(f) and not f.id,
)  # fmt: skip
RELATION_KIND_REQUIRED = ClaimRule(
    "relation_kind_required", "relation.kind", "relation_kind", _BAD,
    "required: SUPPORTS, CONTRADICTS or SUPERSEDES",
    lambda f, _: f.relation is not None and _bad_kind(f.relation[0]),
)  # fmt: skip
RELATION_TARGET_REQUIRED = ClaimRule(
    "relation_target_required", "relation.target_claim_id", "relation_target", _BAD,
    "required: the target claim's id",
    lambda f, _: f.relation is not None and not f.relation[1],
)  # fmt: skip
ID_UNIQUE = ClaimRule(
    "id_unique", "id", "id", Reason.DUPLICATE_CLAIM_ID,
    "id {id} is already used by {first}",
    None,
)  # fmt: skip

# In the order a claim's violations are listed.
CLAIM_RULES: tuple[ClaimRule, ...] = (
    SUBJECT_REQUIRED,
    PREDICATE_REQUIRED,
    VALUE_REQUIRED,
    VALUE_KEYABLE,
    SOURCE_REQUIRED,
    SOURCE_KNOWN,
    CONFIDENCE_REQUIRED,
    CONFIDENCE_UNIT,
    RELIABILITY_UNIT,
    OBSERVE_TIME_VALID,
    REVIEW_STATUS_KNOWN,
    RELATION_NEEDS_ID,
    RELATION_KIND_REQUIRED,
    RELATION_TARGET_REQUIRED,
    ID_UNIQUE,
)
# The rules one claim can break on its own, walked per claim by the explaining paths.
SINGLE_CLAIM_RULES = tuple(rule for rule in CLAIM_RULES if rule.broken is not None)


def claim_violations(
    facts: ClaimFacts, known: Known, at: Callable[[ClaimRule], str]
) -> list[Violation]:
    """Every single-claim rule ``facts`` break, each at the path ``at`` gives its rule."""
    out: list[Violation] = []
    for rule in SINGLE_CLAIM_RULES:
        broken = rule.broken
        assert broken is not None
        if broken(facts, known):
            out.append(rule.violation(at(rule), **rule.values(facts)))
    return out
