"""Per-semantic fusion: correlation groups, noisy-OR support, status and flags (rules 2, 4-8).

Rows arrive already weighted (confidence × capped reliability) and grouped by
value. Each row starts with the *negated* weight followed by the claim_ref, so
sorting plain tuples (no key function, which matters at 10^5 claims) yields
"strongest first, ties by claim_ref ascending"; the first member of each
correlation group in that order is the one that counts. Groups are multiplied
in that same order, so the floating-point result does not depend on the order
claims arrived in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter

from assay.services.resolver.domain.model import (
    DECLARED,
    GROUP,
    INDEX,
    NEG_W,
    REF,
    RELIABILITY,
    SEM,
    VALUE_KEY,
    Active,
    Excluded,
    Exclusion,
    Flag,
    Resolution,
    Row,
    SemKey,
    Staleness,
    Status,
    ValueSupport,
    Warning,
)
from assay.services.resolver.domain.policy import DISCOUNTED_BELOW, Policy


def support_of(rows: Sequence[Row]) -> ValueSupport:
    """One value's support from its active rows (any order; at least one row)."""
    if len(rows) == 1:
        row = rows[0]
        return ValueSupport(row[VALUE_KEY], -row[NEG_W], (row,), (row,))
    ordered = sorted(rows)
    best: dict[str, Row] = {}
    for row in ordered:
        if row[GROUP] not in best:
            best[row[GROUP]] = row
    counted = tuple(best.values())  # insertion order: strongest first
    remaining = 1.0
    for row in counted:
        remaining *= 1.0 + row[NEG_W]  # 1 - weight, exactly: negation is exact
    return ValueSupport(ordered[0][VALUE_KEY], 1.0 - remaining, tuple(ordered), counted)


def status_of(values: Sequence[ValueSupport], policy: Policy) -> Status:
    """INSUFFICIENT without values; CONFLICTED when the runner-up is within the margin."""
    if not values:
        return Status.INSUFFICIENT
    if len(values) > 1:
        gap = values[0].support - values[1].support
        if gap <= policy.conflict_margin + policy.margin_tolerance:
            return Status.CONFLICTED
    return Status.RESOLVED


def rationale_of(leader: ValueSupport, staleness: Staleness | None) -> tuple[Flag, ...]:
    """The weaknesses of the leader's support, ascending by flag number."""
    counted = leader.counted
    flags: list[Flag] = []
    # map/itemgetter keep these per-semantic checks out of the bytecode loop.
    if max(map(_reliability, counted)) < DISCOUNTED_BELOW:
        flags.append(Flag.ALL_SUPPORT_DISCOUNTED)
    if len(leader.claims) > 1 and len(counted) == 1:
        flags.append(Flag.SINGLE_SOURCE_CORROBORATION)
    if len(counted) > 1 and not all(map(_declared, counted)):
        flags.append(Flag.INDEPENDENCE_UNVERIFIED)
    if staleness is not None and all(_stale(row, staleness) for row in counted):
        flags.append(Flag.STALE_SUPPORT)
    return tuple(flags)


_reliability = itemgetter(RELIABILITY)
_declared = itemgetter(DECLARED)


def _stale(row: Row, staleness: Staleness) -> bool:
    observed = staleness.observed(row[INDEX])
    return observed is None or observed < staleness.horizon


def resolve(
    sem: SemKey,
    values: Iterable[Sequence[Row]],
    *,
    policy: Policy,
    excluded: Sequence[Excluded] = (),
    warnings: Sequence[Warning] = (),
    staleness: Staleness | None = None,
) -> Resolution:
    """Resolve one semantic from its active rows grouped by value (supersession already applied)."""
    return resolve_supports(
        sem,
        [support_of(rows) for rows in values if rows],
        policy=policy,
        excluded=excluded,
        warnings=warnings,
        staleness=staleness,
    )


def resolve_supports(
    sem: SemKey,
    supports: list[ValueSupport],
    *,
    policy: Policy,
    excluded: Sequence[Excluded] = (),
    warnings: Sequence[Warning] = (),
    staleness: Staleness | None = None,
) -> Resolution:
    """``resolve`` from each value's support, already computed (``supports`` is reordered)."""
    if len(supports) > 1:
        supports.sort(key=_value_order)
    status = status_of(supports, policy)
    sensitive = sem[1] in policy.safety_sensitive
    return Resolution(
        sem,
        status,
        tuple(supports),
        sensitive,
        sensitive and status is Status.CONFLICTED,
        rationale_of(supports[0], staleness) if supports else (),
        tuple(sorted(excluded, key=_excluded_order)) if excluded else (),
        tuple(sorted(warnings, key=_warning_order)) if warnings else (),
    )


def _value_order(value: ValueSupport) -> tuple[float, str]:
    return (-value.support, value.value_key)


def _excluded_order(excluded: Excluded) -> tuple[str, int]:
    return (excluded.row[REF], excluded.row[INDEX])


def _warning_order(warning: Warning) -> tuple[str, int, str]:
    return (warning.claim_ref, warning.code, warning.message)


def without_superseded(values: Mapping[str, Sequence[Row]], active: Active) -> list[Sequence[Row]]:
    """The value groups with every superseded row removed."""
    dropped = active.superseded
    return [[row for row in rows if row[INDEX] not in dropped] for rows in values.values()]


def exclusions(rejected: Iterable[Row], active: Active) -> dict[SemKey, list[Excluded]]:
    """Every excluded claim by semantic; reviewed out wins over superseded."""
    out: dict[SemKey, list[Excluded]] = {}
    rejected_indexes = set()
    for row in rejected:
        rejected_indexes.add(row[INDEX])
        out.setdefault(row[SEM], []).append(Excluded(row, Exclusion.REVIEWED_OUT))
    for index, (row, by) in active.superseded.items():
        if index not in rejected_indexes:
            out.setdefault(row[SEM], []).append(Excluded(row, Exclusion.SUPERSEDED, by))
    return out
