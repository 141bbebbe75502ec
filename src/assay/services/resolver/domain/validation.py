"""Every reason a claim or a request is rejected, with the field path that names it.

The intake pass only detects that *something* is wrong (cheaply, while it
builds rows); this module then explains everything that is wrong, so one
``InvalidArgument`` carries every violation (up to ``MAX_VIOLATIONS``; the
runtime lists fewer and says how many more) and the error reason is the first
violation's. Its per-claim rules are ``claim_rules.CLAIM_RULES``, the one statement of what a
valid claim is, which the intake's fast checks and the columnar masks are tested
against. A description quotes at most a short prefix
of a request value (``excerpt``), and the list of known source kinds goes once
into the error's metadata (``known_sources``), never into every violation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assay import errors
from assay.errors import FieldViolation, InvalidArgument, Reason, excerpt
from assay.prototime import duration_problem, timestamp_problem
from assay.services.resolver.domain.claim_rules import ID_UNIQUE, claim_violations
from assay.services.resolver.domain.claim_rules import KNOWN_SOURCES_KEY as KNOWN_SOURCES_KEY
from assay.services.resolver.domain.claim_rules import ClaimFacts as ClaimFacts
from assay.services.resolver.domain.claim_rules import Violation as Violation

# Validation stops explaining after this many violations: the work stays bounded, and
# the error then says "at least" (the runtime lists fewer still).
# The one cap on violations kept per request (assay.errors): the resolver's list also
# carries each violation's own reason, and its intake stops early once the cap is reached.
MAX_VIOLATIONS = errors.MAX_VIOLATIONS
MAX_HYPOTHESES = 1024


def check_claim(facts: ClaimFacts, path: str, table: Mapping[str, float]) -> list[Violation]:
    """Everything wrong with one claim on its own (ids are checked across claims separately)."""
    return claim_violations(facts, table, lambda rule: f"{path}.{rule.field}")


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
                    ID_UNIQUE.violation(
                        f"{path}.{ID_UNIQUE.field}", id=excerpt(facts.id), first=first
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
