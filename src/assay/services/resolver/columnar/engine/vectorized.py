"""The vectorized resolver: every semantic of a claim table resolved with array operations.

The rules are the reference's (``fusion``), applied to whole columns (``resolve_table``):

- weight = confidence × min(stated reliability, the table's);
- rows sorted once by (semantic, value, correlation group, weight descending), so each
  group's first row is its strongest, the one that counts; a weight tie at a group's top is
  broken by claim_ref ascending (content references needed only for id-less rows that tie);
- groups sorted by (value, weight descending); a value's support is the noisy-OR
  ``1 - Π(1 - w)`` over its groups, multiplied strongest first as the reference multiplies
  (``np.multiply.reduceat`` reduces each segment left to right), so supports are equal to
  the bit, not only close, and value order and ties agree too; a lone claim's weight is its
  value's support;
- values ordered per semantic by support descending then value_key; the first leads, and
  status, flags, review and coverage follow from per-value aggregates over counted claims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from assay.services.resolver.columnar.engine import relations, stages
from assay.services.resolver.columnar.engine.stages import Warning
from assay.services.resolver.columnar.engine.ties import Refs
from assay.services.resolver.columnar.input.columns import Bools, Floats, Ints
from assay.services.resolver.columnar.input.decode import ClaimColumns
from assay.services.resolver.domain.model import Exclusion
from assay.services.resolver.domain.policy import Policy


def _carry_on() -> None:
    """The ``check`` of work nobody can stop half-way."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """Every table of a ResolveColumns response, as arrays (see the contract)."""

    # semantics, in (subject, predicate) order
    subjects: pa.Array
    predicates: pa.Array
    status: Ints
    leader: Ints  # row of the values table; -1 when INSUFFICIENT
    confidence: Floats
    safety_sensitive: Bools
    requires_review: Bools
    rationale: list[Ints]  # per flag number (1..4): the semantics it is raised for
    # values
    value_semantic: Ints
    value_keys: pa.Array
    support: Floats
    # excluded
    excluded_row: Ints
    excluded_semantic: Ints
    excluded_reason: Ints
    superseded_by: relations.Supersessions
    # claims (full detail)
    claim_value: Ints  # -1 for an excluded row
    reliability: Floats
    weight: Floats
    group: Ints
    groups: pa.Array
    declared: Bools
    counted: Bools
    # groups (full detail), in values order, strongest first
    group_value: Ints
    group_name: Ints
    group_declared: Bools
    group_weight: Floats
    group_counted_row: Ints
    # warnings (full detail): (row, code, message), ordered by row then code
    warnings: list[Warning]
    coverage: float
    conflicted_safety: list[tuple[str, str]]


def resolve_table(
    claims: ClaimColumns,
    policy: Policy,
    horizon: float | None = None,
    *,
    refs: Refs,
    full: bool = True,
    check: Callable[[], None] = _carry_on,
) -> Resolved:
    """Resolve every semantic of ``claims`` (valid: ``decode.violations`` found nothing).

    ``horizon`` is ``as_of - stale_after`` in seconds when staleness is asked for;
    ``refs`` gives claim_refs for tie-breaks; ``full=False`` (SUMMARY) skips the
    per-claim tables. ``check`` is called between stages and may raise to abandon.

    The rules run as named stages (``stages``: ``weigh``, ``group``, ``support``, ``rank``,
    ``rationale``, ``per_claim``), each handing the next a record. Semantic, value and group
    codes are dense integers from ``decode`` (value codes follow value_key order), so every
    step is a sort, a scan or a segmented reduction. The only Python loops are over the rare
    rows: relations, ties, capped reliabilities, and (at full detail) groups whose weights
    tie."""
    weighed = stages.weigh(claims)
    check()
    groups = stages.group(claims, weighed, refs, full, check)
    values = stages.support(groups)
    ranked = stages.rank(claims, values, policy, check)
    flags = stages.rationale(claims, weighed, groups, values, ranked, horizon)
    check()
    per_claim = stages.per_claim(claims, weighed, groups, values, ranked, full)
    excluded_rows = np.flatnonzero(weighed.excluded)
    ordered_counted = groups.counted_row[per_claim.in_values_order]
    subjects = claims.subjects
    conflicted = np.flatnonzero(ranked.review)
    return Resolved(
        subjects=subjects,
        predicates=claims.predicates,
        status=ranked.status,
        leader=ranked.leader,
        confidence=ranked.confidence,
        safety_sensitive=ranked.sensitive,
        requires_review=ranked.review,
        rationale=flags,
        value_semantic=ranked.semantic,
        value_keys=pa.array(claims.value_keys, pa.string()).take(values.code[ranked.order]),
        support=ranked.support,
        excluded_row=excluded_rows,
        excluded_semantic=claims.semantic[excluded_rows],
        excluded_reason=np.where(
            claims.rejected[excluded_rows], int(Exclusion.REVIEWED_OUT), int(Exclusion.SUPERSEDED)
        ),
        superseded_by=weighed.found.superseded_by.without(claims.rejected),
        claim_value=per_claim.claim_value,
        reliability=weighed.reliability,
        weight=weighed.weight,
        group=claims.group,
        groups=claims.groups,
        declared=claims.declared,
        counted=per_claim.counted,
        group_value=per_claim.group_value,
        group_name=claims.group[ordered_counted],
        group_declared=claims.declared[ordered_counted],
        group_weight=groups.group_w[per_claim.in_values_order],
        group_counted_row=ordered_counted,
        warnings=per_claim.warnings,
        coverage=float(ranked.confidence.min()) if len(subjects) else 0.0,
        conflicted_safety=list(
            zip(
                subjects.take(conflicted).to_pylist(),
                claims.predicates.take(conflicted).to_pylist(),
                strict=True,
            )
        ),
    )
