"""The vectorized resolver: every semantic of a claim table resolved with array operations.

The rules are the reference's (``fusion``), applied to whole columns at once:

- weight = confidence × min(stated reliability, the table's);
- rows are sorted once by (semantic, value, correlation group, weight descending), so
  each group's first row is its strongest, the one that counts; a weight tie at a
  group's top is broken by claim_ref ascending, which needs content references only
  for id-less rows that actually tie (``refs``);
- groups are then sorted by (value, weight descending), and a value's support is the
  noisy-OR ``1 - Π(1 - w)`` over its groups, multiplied strongest first exactly as the
  reference multiplies (``np.multiply.reduceat`` reduces each segment left to right),
  so supports are equal to the bit, not only close: value order and ties between
  values then agree with the reference too. A value with a single claim has that
  claim's weight as its support, as in the reference;
- values are ordered per semantic by support descending then value_key (value codes
  follow value_key order), the first leads, and status, flags, review and coverage
  follow from per-value aggregates over the counted claims.

Semantic, value and group codes are dense integers from ``decode``, so every step is a
sort, a scan or a segmented reduction. The only Python loops are over the rare rows:
relations, ties, capped reliabilities, and (at full detail) groups whose weights tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.services.resolver.columnar.engine import relations
from assay.services.resolver.columnar.engine.sorting import by_weight_descending
from assay.services.resolver.columnar.input.columns import Bools, Floats, Ints, dense
from assay.services.resolver.columnar.input.decode import ClaimColumns
from assay.services.resolver.domain.model import Exclusion, Flag, Status, WarningCode
from assay.services.resolver.domain.policy import DISCOUNTED_BELOW, Policy

Refs = Callable[[Sequence[int]], list[str]]
"""The claim_refs of some rows: their ids, or content references for id-less ones."""


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
    warnings: list[tuple[int, WarningCode, str]]
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
    per-claim tables. ``check`` is called between stages and may raise to abandon."""
    n = claims.count
    stated = claims.stated
    reliability = np.where(np.isnan(stated), claims.ceiling, np.minimum(stated, claims.ceiling))
    weight = claims.confidence * reliability
    found = relations.apply(claims)
    excluded = claims.rejected | found.superseded
    active = np.flatnonzero(~excluded)
    check()

    # (semantic, value) pairs, dense, in (semantic, value_key) order.
    values_total = max(1, len(claims.value_keys))
    sv_key = claims.semantic[active] * values_total + claims.value[active]
    sv, sv_keys = dense(sv_key, max(1, len(claims.subjects)) * values_total)
    m = len(active)
    groups_total = max(1, len(claims.groups))
    w_active = weight[active]
    # One sort groups the rows, each group's strongest first: that row is the one counted.
    gkey = sv * groups_total + claims.group[active]
    order = by_weight_descending(gkey, w_active)
    check()
    gkey = gkey[order]
    head = np.r_[True, gkey[1:] != gkey[:-1]] if m else np.zeros(0, np.bool_)
    starts = np.flatnonzero(head)
    counted_row, group_w = _counted(active[order], head, starts, w_active[order], refs)
    group_sv = sv[order[starts]]
    check()

    # Groups by (value, weight descending): the multiplication order of the reference.
    g_order = by_weight_descending(group_sv, group_w)
    group_sv, group_w, counted_row = group_sv[g_order], group_w[g_order], counted_row[g_order]
    if full:
        _break_group_ties(group_sv, group_w, counted_row, refs)
    v_starts = (
        np.flatnonzero(np.r_[True, group_sv[1:] != group_sv[:-1]]) if len(group_sv) else group_sv
    )
    value_sv = group_sv[v_starts]
    claims_per_value = np.bincount(sv, minlength=len(sv_keys))[value_sv] if m else value_sv
    groups_per_value = np.diff(np.r_[v_starts, len(group_sv)])
    if len(v_starts):
        remaining = np.multiply.reduceat(1.0 - group_w, v_starts)
        support = np.where(claims_per_value == 1, group_w[v_starts], 1.0 - remaining)
    else:
        support = np.zeros(0)
    value_sem = sv_keys[value_sv] // values_total
    value_code = sv_keys[value_sv] % values_total

    # Values per semantic by support descending, then value_key (the code order).
    v_order = by_weight_descending(value_sem, support)
    check()
    value_pos = np.empty(len(v_order), dtype=np.int64)
    value_pos[v_order] = np.arange(len(v_order), dtype=np.int64)
    semantics = len(claims.subjects)
    sem_sorted = value_sem[v_order]
    first = (
        np.flatnonzero(np.r_[True, sem_sorted[1:] != sem_sorted[:-1]]) if len(v_order) else v_order
    )
    leader = np.full(semantics, -1, dtype=np.int64)
    leader[sem_sorted[first]] = first
    has_leader = leader >= 0
    confidence = np.zeros(semantics)
    support_sorted = support[v_order]
    confidence[has_leader] = support_sorted[leader[has_leader]]
    runner = leader + 1
    has_runner = has_leader & (runner < len(v_order))
    has_runner[has_runner] = sem_sorted[runner[has_runner]] == np.flatnonzero(has_runner)
    gap = np.full(semantics, np.inf)
    gap[has_runner] = confidence[has_runner] - support_sorted[runner[has_runner]]
    status = np.full(semantics, int(Status.INSUFFICIENT), dtype=np.int64)
    status[has_leader] = int(Status.RESOLVED)
    status[gap <= policy.conflict_margin + policy.margin_tolerance] = int(Status.CONFLICTED)
    sensitive = np.asarray(
        pc.is_in(claims.predicates, value_set=pa.array(sorted(policy.safety_sensitive))).to_numpy(
            zero_copy_only=False
        ),
        dtype=np.bool_,
    )
    review = sensitive & (status == int(Status.CONFLICTED))

    # Rationale: per value, over its counted claims; kept for each semantic's leader.
    lead_value = v_order[leader[has_leader]] if len(v_order) else leader[:0]
    lead_sem = np.flatnonzero(has_leader)
    flags: list[Ints] = []
    if len(v_starts):
        counted_rel = np.maximum.reduceat(reliability[counted_row], v_starts)
        all_declared = np.minimum.reduceat(claims.declared[counted_row].astype(np.int8), v_starts)
        raised = {
            Flag.ALL_SUPPORT_DISCOUNTED: counted_rel < DISCOUNTED_BELOW,
            Flag.SINGLE_SOURCE_CORROBORATION: (claims_per_value > 1) & (groups_per_value == 1),
            Flag.INDEPENDENCE_UNVERIFIED: (groups_per_value > 1) & (all_declared == 0),
        }
        if horizon is not None:
            observed = claims.observed[counted_row]
            fresh = ~np.isnan(observed) & (observed >= horizon)
            raised[Flag.STALE_SUPPORT] = np.maximum.reduceat(fresh.astype(np.int8), v_starts) == 0
        for flag in (1, 2, 3, 4):
            mask = raised.get(Flag(flag))
            flags.append(lead_sem[mask[lead_value]] if mask is not None else lead_sem[:0])
    else:
        flags = [lead_sem[:0]] * 4
    check()

    excluded_rows = np.flatnonzero(excluded)
    reasons = np.where(
        claims.rejected[excluded_rows], int(Exclusion.REVIEWED_OUT), int(Exclusion.SUPERSEDED)
    )
    by = found.superseded_by.without(claims.rejected)

    counted = np.zeros(n, dtype=np.bool_)
    claim_value = np.full(n, -1, dtype=np.int64)
    warnings: list[tuple[int, WarningCode, str]] = []
    if full:
        counted[counted_row] = True
        value_of_sv = np.full(len(sv_keys), -1, dtype=np.int64)
        value_of_sv[value_sv] = value_pos
        claim_value[active] = value_of_sv[sv]
        capped = np.flatnonzero(stated > claims.ceiling)
        warnings = sorted(
            [*found.warnings, *relations.capped(claims, capped, reliability)],
            key=lambda w: (w[0], w[1]),
        )
    # Groups in values order: each value's run of groups, taken in the values' order.
    in_values_order = group_value = np.zeros(0, dtype=np.int64)
    if full and len(v_order):
        sizes = groups_per_value[v_order]
        opens = np.cumsum(sizes) - sizes
        in_values_order = np.repeat(v_starts[v_order] - opens, sizes) + np.arange(
            len(group_sv), dtype=np.int64
        )
        group_value = np.repeat(np.arange(len(v_order), dtype=np.int64), sizes)
    ordered_counted = counted_row[in_values_order]
    subjects = claims.subjects
    conflicted = np.flatnonzero(review)
    return Resolved(
        subjects=subjects,
        predicates=claims.predicates,
        status=status,
        leader=leader,
        confidence=confidence,
        safety_sensitive=sensitive,
        requires_review=review,
        rationale=flags,
        value_semantic=sem_sorted,
        value_keys=pa.array(claims.value_keys, pa.string()).take(value_code[v_order]),
        support=support_sorted,
        excluded_row=excluded_rows,
        excluded_semantic=claims.semantic[excluded_rows],
        excluded_reason=reasons,
        superseded_by=by,
        claim_value=claim_value,
        reliability=reliability,
        weight=weight,
        group=claims.group,
        groups=claims.groups,
        declared=claims.declared,
        counted=counted,
        group_value=group_value,
        group_name=claims.group[ordered_counted],
        group_declared=claims.declared[ordered_counted],
        group_weight=group_w[in_values_order],
        group_counted_row=ordered_counted,
        warnings=warnings,
        coverage=float(confidence.min()) if semantics else 0.0,
        conflicted_safety=list(
            zip(
                subjects.take(conflicted).to_pylist(),
                claims.predicates.take(conflicted).to_pylist(),
                strict=True,
            )
        ),
    )


def _counted(
    rows: Ints, head: Bools, starts: Ints, weight: Floats, refs: Refs
) -> tuple[Ints, Floats]:
    """Each group's counted row and weight: its strongest, ties by claim_ref ascending.

    ``rows`` are grouped (``head`` marks, and ``starts`` lists, each group's first
    position), each group strongest first, equal weights in row order."""
    if not len(rows):
        return rows, weight
    top = weight[starts]
    counted = rows[starts]
    # A group ties at the top when its second row weighs what its first does: found as
    # masks over positions (a byte each) rather than arrays of group numbers.
    ties = head[:-1] & ~head[1:]
    ties &= weight[1:] == weight[:-1]
    tied = np.searchsorted(starts, np.flatnonzero(ties))
    if len(tied):
        ends = np.r_[starts[1:], len(rows)][tied]
        sizes = ends - starts[tied]
        at = np.repeat(starts[tied] - (np.cumsum(sizes) - sizes), sizes)
        at += np.arange(int(sizes.sum()), dtype=np.int64)
        group = np.repeat(tied, sizes)
        keep = weight[at] == top[group]
        candidates, group = rows[at[keep]], group[keep]
        names = refs(candidates.tolist())
        best: dict[int, tuple[str, int]] = {}
        for g, row, name in zip(group.tolist(), candidates.tolist(), names, strict=True):
            found = best.get(g)
            # Identical id-less claims share a reference: the earlier row counts.
            if found is None or (name, row) < found:
                best[g] = (name, row)
        for g, (_, row) in best.items():
            counted[g] = row
    return counted, top


def _break_group_ties(group_sv: Ints, group_w: Floats, counted_row: Ints, refs: Refs) -> None:
    """Groups of one value with equal weights are ordered by counted claim_ref (in place)."""
    if len(group_sv) < 2:
        return
    same = (group_sv[1:] == group_sv[:-1]) & (group_w[1:] == group_w[:-1])
    if not same.any():
        return
    edges = np.flatnonzero(np.diff(np.r_[0, same.astype(np.int8), 0]))
    runs = list(zip(edges[::2].tolist(), (edges[1::2] + 1).tolist(), strict=True))
    candidates = [int(r) for start, end in runs for r in counted_row[start:end]]
    names = dict(zip(candidates, refs(candidates), strict=True))
    for start, end in runs:
        counted_row[start:end] = sorted(counted_row[start:end].tolist(), key=names.__getitem__)
