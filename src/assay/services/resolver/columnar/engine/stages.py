"""The stages of ``vectorized.resolve_table``, in order, each handing the next a record.

``weigh`` (reliability, weight, relations), ``group`` (correlation groups, each counted
at its strongest row), ``support`` (each value's noisy-OR), ``rank`` (values per
semantic, leaders, statuses), ``rationale`` (the leader's flags) and ``per_claim`` (the
full-detail tables). The rules are ``vectorized``'s docstring's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.services.resolver.columnar.engine import relations
from assay.services.resolver.columnar.engine.sorting import by_weight_descending
from assay.services.resolver.columnar.engine.ties import Refs, break_group_ties, counted_rows
from assay.services.resolver.columnar.input.columns import Bools, Floats, Ints, dense
from assay.services.resolver.columnar.input.decode import ClaimColumns
from assay.services.resolver.domain.model import Flag, Status, WarningCode
from assay.services.resolver.domain.policy import DISCOUNTED_BELOW, Policy

Warning = tuple[int, WarningCode, str]
"""A warning as (row, code, message)."""


@dataclass(frozen=True, slots=True)
class Weighed:
    """Each row's reliability and weight, what its relations do, and which rows count."""

    reliability: Floats
    weight: Floats
    found: relations.Relations
    excluded: Bools  # reviewed out or superseded
    active: Ints  # the rows not excluded


def weigh(claims: ClaimColumns) -> Weighed:
    """weight = confidence x min(stated reliability, the table's); relations applied."""
    stated = claims.stated
    reliability = np.where(np.isnan(stated), claims.ceiling, np.minimum(stated, claims.ceiling))
    found = relations.apply(claims)
    excluded = claims.rejected | found.superseded
    return Weighed(
        reliability, claims.confidence * reliability, found, excluded, np.flatnonzero(~excluded)
    )


@dataclass(frozen=True, slots=True)
class Groups:
    """The active rows' correlation groups, each counted once at its strongest row, in
    (value, weight descending) order: the reference's multiplication order."""

    values_total: int
    sv: Ints  # each active row's (semantic, value) pair, dense, in (semantic, value_key) order
    sv_keys: Ints  # each pair as semantic x values_total + value
    group_sv: Ints
    group_w: Floats
    counted_row: Ints
    v_starts: Ints  # where each pair's run of groups starts


def group(
    claims: ClaimColumns, weighed: Weighed, refs: Refs, full: bool, check: Callable[[], None]
) -> Groups:
    active = weighed.active
    values_total = max(1, len(claims.value_keys))
    sv_key = claims.semantic[active] * values_total + claims.value[active]
    sv, sv_keys = dense(sv_key, max(1, len(claims.subjects)) * values_total)
    groups_total = max(1, len(claims.groups))
    w_active = weighed.weight[active]
    # One sort groups the rows, each group's strongest first: that row is the one counted.
    gkey = sv * groups_total + claims.group[active]
    order = by_weight_descending(gkey, w_active)
    check()
    gkey = gkey[order]
    head = np.r_[True, gkey[1:] != gkey[:-1]] if len(active) else np.zeros(0, np.bool_)
    starts = np.flatnonzero(head)
    counted_row, group_w = counted_rows(active[order], head, starts, w_active[order], refs)
    group_sv = sv[order[starts]]
    check()
    # Groups by (value, weight descending): the multiplication order of the reference.
    g_order = by_weight_descending(group_sv, group_w)
    group_sv, group_w, counted_row = group_sv[g_order], group_w[g_order], counted_row[g_order]
    if full:
        break_group_ties(group_sv, group_w, counted_row, refs)
    v_starts = (
        np.flatnonzero(np.r_[True, group_sv[1:] != group_sv[:-1]]) if len(group_sv) else group_sv
    )
    return Groups(values_total, sv, sv_keys, group_sv, group_w, counted_row, v_starts)


@dataclass(frozen=True, slots=True)
class Values:
    """Each (semantic, value) pair that has active claims, in pair order."""

    sv: Ints
    semantic: Ints
    code: Ints  # the value's code (value_key order)
    support: Floats
    claims: Ints  # active claims per value
    groups: Ints  # groups per value


def support(groups: Groups) -> Values:
    """A value's support: the noisy-OR over its groups, its single claim's weight alone."""
    v_starts, group_w = groups.v_starts, groups.group_w
    value_sv = groups.group_sv[v_starts]
    claims = (
        np.bincount(groups.sv, minlength=len(groups.sv_keys))[value_sv]
        if len(groups.sv)
        else value_sv
    )
    per_value = np.diff(np.r_[v_starts, len(groups.group_sv)])
    if len(v_starts):
        remaining = np.multiply.reduceat(1.0 - group_w, v_starts)
        support = np.where(claims == 1, group_w[v_starts], 1.0 - remaining)
    else:
        support = np.zeros(0)
    keys = groups.sv_keys[value_sv]
    return Values(
        value_sv,
        keys // groups.values_total,
        keys % groups.values_total,
        support,
        claims,
        per_value,
    )


@dataclass(frozen=True, slots=True)
class Ranked:
    """The values per semantic by support descending then value_key, and each semantic's
    leader, confidence and status."""

    order: Ints  # value positions in ranked order
    position: Ints  # each value's rank
    semantic: Ints  # each ranked value's semantic
    support: Floats  # each ranked value's support
    leader: Ints  # per semantic, its first ranked value; -1 when none
    has_leader: Bools
    confidence: Floats
    status: Ints
    sensitive: Bools
    review: Bools


def rank(claims: ClaimColumns, values: Values, policy: Policy, check: Callable[[], None]) -> Ranked:
    v_order = by_weight_descending(values.semantic, values.support)
    check()
    value_pos = np.empty(len(v_order), dtype=np.int64)
    value_pos[v_order] = np.arange(len(v_order), dtype=np.int64)
    semantics = len(claims.subjects)
    sem_sorted = values.semantic[v_order]
    first = (
        np.flatnonzero(np.r_[True, sem_sorted[1:] != sem_sorted[:-1]]) if len(v_order) else v_order
    )
    leader = np.full(semantics, -1, dtype=np.int64)
    leader[sem_sorted[first]] = first
    has_leader = leader >= 0
    confidence = np.zeros(semantics)
    support_sorted = values.support[v_order]
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
    return Ranked(
        v_order, value_pos, sem_sorted, support_sorted, leader, has_leader, confidence, status,
        sensitive, review,
    )  # fmt: skip


def rationale(
    claims: ClaimColumns,
    weighed: Weighed,
    groups: Groups,
    values: Values,
    ranked: Ranked,
    horizon: float | None,
) -> list[Ints]:
    """Per flag number (1..4), the semantics it is raised for: per value, over its counted
    claims, kept for each semantic's leader."""
    lead_value = (
        ranked.order[ranked.leader[ranked.has_leader]] if len(ranked.order) else ranked.leader[:0]
    )
    lead_sem = np.flatnonzero(ranked.has_leader)
    v_starts, counted_row = groups.v_starts, groups.counted_row
    if not len(v_starts):
        return [lead_sem[:0]] * 4
    counted_rel = np.maximum.reduceat(weighed.reliability[counted_row], v_starts)
    all_declared = np.minimum.reduceat(claims.declared[counted_row].astype(np.int8), v_starts)
    raised = {
        Flag.ALL_SUPPORT_DISCOUNTED: counted_rel < DISCOUNTED_BELOW,
        Flag.SINGLE_SOURCE_CORROBORATION: (values.claims > 1) & (values.groups == 1),
        Flag.INDEPENDENCE_UNVERIFIED: (values.groups > 1) & (all_declared == 0),
    }
    if horizon is not None:
        observed = claims.observed[counted_row]
        fresh = ~np.isnan(observed) & (observed >= horizon)
        raised[Flag.STALE_SUPPORT] = np.maximum.reduceat(fresh.astype(np.int8), v_starts) == 0
    flags: list[Ints] = []
    for flag in (1, 2, 3, 4):
        mask = raised.get(Flag(flag))
        flags.append(lead_sem[mask[lead_value]] if mask is not None else lead_sem[:0])
    return flags


@dataclass(frozen=True, slots=True)
class PerClaim:
    """The full-detail tables' columns (empty at SUMMARY)."""

    counted: Bools  # per row
    claim_value: Ints  # per row, its value's rank; -1 for an excluded row
    warnings: list[Warning]  # ordered by row then code
    in_values_order: Ints  # the groups, in values order: each value's run, values ranked
    group_value: Ints  # each of those groups' value rank


def per_claim(
    claims: ClaimColumns,
    weighed: Weighed,
    groups: Groups,
    values: Values,
    ranked: Ranked,
    full: bool,
) -> PerClaim:
    n = claims.count
    counted = np.zeros(n, dtype=np.bool_)
    claim_value = np.full(n, -1, dtype=np.int64)
    warnings: list[Warning] = []
    in_values_order = group_value = np.zeros(0, dtype=np.int64)
    if not full:
        return PerClaim(counted, claim_value, warnings, in_values_order, group_value)
    counted[groups.counted_row] = True
    value_of_sv = np.full(len(groups.sv_keys), -1, dtype=np.int64)
    value_of_sv[values.sv] = ranked.position
    claim_value[weighed.active] = value_of_sv[groups.sv]
    capped = np.flatnonzero(claims.stated > claims.ceiling)
    warnings = sorted(
        [*weighed.found.warnings, *relations.capped(claims, capped, weighed.reliability)],
        key=lambda w: (w[0], w[1]),
    )
    if len(ranked.order):
        sizes = values.groups[ranked.order]
        opens = np.cumsum(sizes) - sizes
        in_values_order = np.repeat(groups.v_starts[ranked.order] - opens, sizes) + np.arange(
            len(groups.group_sv), dtype=np.int64
        )
        group_value = np.repeat(np.arange(len(ranked.order), dtype=np.int64), sizes)
    return PerClaim(counted, claim_value, warnings, in_values_order, group_value)
