"""Ties broken by claim_ref, as the reference breaks them, for the few rows that tie.

Within a correlation group the strongest row counts, ties going to the smallest
claim_ref; within a value, groups of equal weight are ordered by their counted claim's
claim_ref. Content references are costly to compute for id-less rows, so only the rows
that actually tie ask for them (``Refs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from assay.services.resolver.columnar.input.columns import Bools, Floats, Ints

Refs = Callable[[Sequence[int]], list[str]]
"""The claim_refs of some rows: their ids, or content references for id-less ones."""


def counted_rows(
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


def break_group_ties(group_sv: Ints, group_w: Floats, counted_row: Ints, refs: Refs) -> None:
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
