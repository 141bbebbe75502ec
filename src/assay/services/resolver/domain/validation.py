"""Every reason a claim or a request is rejected, with the field path that names it.

The intake pass only detects that *something* is wrong (cheaply, while it
builds rows); this module then explains everything that is wrong, so one
``InvalidArgument`` carries every violation (up to ``MAX_VIOLATIONS``; the
runtime lists fewer and says how many more) and the error reason is the first
violation's. It is the single statement of what a valid claim is; the intake's
fast checks are tested against it. A description quotes at most a short prefix
of a request value (``excerpt``), and the list of known source kinds goes once
into the error's metadata (``known_sources``), never into every violation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from assay import errors
from assay.errors import FieldViolation, InvalidArgument, Reason, excerpt
from assay.prototime import duration_problem, timestamp_problem
from assay.services.resolver.domain.model import RelationKind, ReviewStatus

# Validation stops explaining after this many violations: the work stays bounded, and
# the error then says "at least" (the runtime lists fewer still).
# The one cap on violations kept per request (assay.errors): the resolver's list also
# carries each violation's own reason, and its intake stops early once the cap is reached.
MAX_VIOLATIONS = errors.MAX_VIOLATIONS
MAX_HYPOTHESES = 1024
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


@dataclass(frozen=True, slots=True)
class Violation:
    """One problem: the reason it maps to and the field it concerns."""

    reason: Reason
    field: str
    description: str


def _unit_interval(x: float) -> bool:
    return math.isfinite(x) and 0.0 <= x <= 1.0


def check_claim(facts: ClaimFacts, path: str, table: Mapping[str, float]) -> list[Violation]:
    """Everything wrong with one claim on its own (ids are checked across claims separately)."""
    out: list[Violation] = []
    bad = Reason.INVALID_CLAIM
    if not facts.subject:
        out.append(Violation(bad, f"{path}.subject", "required: the subject must not be empty"))
    if not facts.predicate:
        out.append(Violation(bad, f"{path}.predicate", "required: the predicate must not be empty"))
    if facts.value_problem is not None:
        sub, description = facts.value_problem
        out.append(Violation(bad, f"{path}.value{'.' + sub if sub else ''}", description))
    if not facts.source:
        out.append(Violation(bad, f"{path}.source", "required: the source kind must not be empty"))
    elif facts.source not in table:
        out.append(
            Violation(
                Reason.UNKNOWN_SOURCE,
                f"{path}.source",
                f"unknown source kind {excerpt(facts.source)} (the known kinds are in "
                f"the error's metadata, {KNOWN_SOURCES_KEY})",
            )
        )
    if not _unit_interval(facts.confidence):
        out.append(
            Violation(bad, f"{path}.confidence", f"{facts.confidence!r} is not a number in [0, 1]")
        )
    if facts.reliability is not None and not _unit_interval(facts.reliability):
        out.append(
            Violation(
                bad, f"{path}.reliability", f"{facts.reliability!r} is not a number in [0, 1]"
            )
        )
    if facts.observed is not None:
        problem = timestamp_problem(*facts.observed)
        if problem is not None:
            out.append(Violation(bad, f"{path}.observe_time", problem))
    if facts.review_status not in ReviewStatus._value2member_map_:
        out.append(
            Violation(bad, f"{path}.review_status", f"unknown review status {facts.review_status}")
        )
    if facts.relation is not None:
        kind, target = facts.relation
        if not facts.id:
            out.append(
                Violation(
                    Reason.RELATION_WITHOUT_ID,
                    f"{path}.id",
                    "a claim with a relation must have an id",
                )
            )
        if kind not in RelationKind._value2member_map_ or kind == RelationKind.UNSPECIFIED:
            out.append(
                Violation(
                    bad, f"{path}.relation.kind", "required: SUPPORTS, CONTRADICTS or SUPERSEDES"
                )
            )
        if not target:
            out.append(
                Violation(
                    bad, f"{path}.relation.target_claim_id", "required: the target claim's id"
                )
            )
    return out


def check_claims(
    claims: Iterable[tuple[str, ClaimFacts]],
    table: Mapping[str, float],
    seen: dict[str, str],
) -> list[Violation]:
    """Every violation of a list of (path, claim); ``seen`` maps ids already used to their path."""
    out: list[Violation] = []
    for path, facts in claims:
        out.extend(check_claim(facts, path, table))
        if facts.id:
            first = seen.get(facts.id)
            if first is not None:
                out.append(
                    Violation(
                        Reason.DUPLICATE_CLAIM_ID,
                        f"{path}.id",
                        f"id {excerpt(facts.id)} is already used by {first}",
                    )
                )
            else:
                seen[facts.id] = path
        if len(out) >= MAX_VIOLATIONS:
            break
    return out


def check_semantic(subject: str, predicate: str, prefix: str = "") -> list[Violation]:
    """The target semantic of ResolveSemantic / ResolveHypotheses."""
    out = []
    if not subject:
        out.append(Violation(Reason.INVALID_FIELD, f"{prefix}subject", "required"))
    if not predicate:
        out.append(Violation(Reason.INVALID_FIELD, f"{prefix}predicate", "required"))
    return out


def check_times(
    as_of: tuple[int, int] | None, stale_after: tuple[int, int] | None
) -> list[Violation]:
    """``as_of`` (a Timestamp) and ``stale_after`` (a Duration) are well formed, if set."""
    out = []
    if as_of is not None and (problem := timestamp_problem(*as_of)) is not None:
        out.append(Violation(Reason.INVALID_FIELD, "as_of", problem))
    if stale_after is not None and (problem := duration_problem(*stale_after)) is not None:
        out.append(Violation(Reason.INVALID_FIELD, "stale_after", problem))
    return out


def check_staleness(has_as_of: bool, has_stale_after: bool, stale_after: float) -> list[Violation]:
    """``as_of`` and ``stale_after`` come together, and the horizon must be positive."""
    if has_as_of and not has_stale_after:
        return [Violation(Reason.INVALID_FIELD, "stale_after", "required when as_of is set")]
    if has_stale_after and not has_as_of:
        return [Violation(Reason.INVALID_FIELD, "as_of", "required when stale_after is set")]
    if has_stale_after and not stale_after > 0:
        return [Violation(Reason.INVALID_FIELD, "stale_after", "must be a positive duration")]
    return []


def raise_if_any(violations: list[Violation], known_sources: Iterable[str] = ()) -> None:
    """One InvalidArgument carrying every violation; its reason is the first one's.

    When a source kind is unknown, ``known_sources`` go into the metadata, once. With
    ``MAX_VIOLATIONS`` or more, validation may have stopped early: the count is a floor.
    """
    if not violations:
        return
    shown = violations[:MAX_VIOLATIONS]
    complete = len(violations) < MAX_VIOLATIONS
    first = shown[0]
    others = len(violations) - 1
    more = f" (and {'' if complete else 'at least '}{others} more)" if others else ""
    metadata = {}
    if any(v.reason is Reason.UNKNOWN_SOURCE for v in shown):
        metadata[KNOWN_SOURCES_KEY] = ",".join(sorted(known_sources))
    raise InvalidArgument(
        first.reason,
        f"{first.field}: {first.description}{more}",
        [FieldViolation(v.field, v.description) for v in shown],
        metadata,
        more_violations=len(violations) - len(shown),
        violations_complete=complete,
    )
