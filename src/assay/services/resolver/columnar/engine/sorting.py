"""Sorting orders by sorting numbers: the row index packed into the key's low bits.

NumPy sorts integers with a SIMD sort but has no SIMD ``argsort`` on most CPUs, so sorting
the numbers is several times faster than finding their order (docs/performance.md). So an
order is found by sorting ``key << b | index`` (``b`` bits hold every index) and reading the
indices back from the low bits; equal keys then come out in index order, so the order is
also stable. Keys too wide to share 63 bits with an index fall back to ``np.argsort``.

Orders "by an integer, then by a weight descending" pack a fixed-point copy of the
weight between the two. Weights in [0, 1] that are different but share a fixed-point
step are rare, and are put in exact order afterwards, run by run; so the result is
exact whatever the weights.
"""

from __future__ import annotations

import numpy as np

from assay.services.resolver.columnar.input.columns import Floats, Ints

_BITS = 63  # the packed key stays a non-negative int64 value, kept as uint64
_FINEST = 30  # more fixed-point bits than this make no fewer fix-ups worth having


def _index_bits(count: int) -> int:
    return max(1, (count - 1).bit_length())


def stable_order(keys: Ints, bound: int) -> tuple[Ints, Ints]:
    """The stable order of non-negative ``keys`` below ``bound``, and the keys in it."""
    count = len(keys)
    shift = _index_bits(count)
    if count == 0 or max(1, bound - 1).bit_length() + shift > _BITS:
        by_key: Ints = np.argsort(keys, kind="stable")
        return by_key, keys[by_key]
    packed = keys.astype(np.uint64)
    packed <<= np.uint64(shift)
    packed |= np.arange(count, dtype=np.uint64)
    packed.sort()
    order = packed & np.uint64((1 << shift) - 1)
    packed >>= np.uint64(shift)
    # Both fit in 63 bits, so their uint64 bits read as the same int64 values.
    return order.view(np.int64), packed.view(np.int64)


def by_weight_descending(outer: Ints, weight: Floats) -> Ints:
    """The order by ``outer`` ascending (non-negative), then ``weight`` (in [0, 1])
    descending, then index ascending."""
    count = len(outer)
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    shift = _index_bits(count)
    outer_bits = max(1, int(outer.max()).bit_length())
    step_bits = min(_FINEST, _BITS - shift - outer_bits)
    if step_bits < 8:  # by weight descending, then stably by outer
        by_weight: Ints = np.argsort(-weight, kind="stable")
        within, _ = stable_order(outer[by_weight], int(outer.max()) + 1)
        result: Ints = by_weight[within]
        return result
    steps = (1 << step_bits) - 1
    # Fixed point, descending: a heavier weight gets a smaller (or equal) step. Built in
    # place: at a million rows each fresh array costs more in page faults than its work.
    scaled = np.clip(weight, 0.0, 1.0)
    scaled *= steps
    fixed = scaled.astype(np.uint64)
    np.subtract(np.uint64(steps), fixed, out=fixed)
    packed = outer.astype(np.uint64)
    packed <<= np.uint64(step_bits)
    packed |= fixed
    packed <<= np.uint64(shift)
    packed |= np.arange(count, dtype=np.uint64)
    packed.sort()
    order = packed & np.uint64((1 << shift) - 1)
    _exact_within_steps(order.view(np.int64), packed, shift, weight)
    return order.view(np.int64)


def _exact_within_steps(order: Ints, packed: np.ndarray, shift: int, weight: Floats) -> None:
    """Put runs of equal coarse keys (``packed`` above its ``shift`` index bits) whose
    weights differ in exact order (in place)."""
    if len(order) < 2:
        return
    # Neighbours share a coarse key when their packed keys differ only in the index bits.
    shared = packed[1:] ^ packed[:-1]
    pairs = np.flatnonzero(shared < np.uint64(1 << shift))  # i and i + 1 share a step
    if not len(pairs):
        return
    differ = weight[order[pairs]] != weight[order[pairs + 1]]
    if not differ.any():
        return
    # Runs of equal coarse keys as [start, end) positions: a pair opens a run unless the
    # pair before it is its neighbour; keep the runs in which some weights differ.
    opens = np.r_[True, pairs[1:] != pairs[:-1] + 1]
    run_of_pair = np.cumsum(opens) - 1
    touched = np.zeros(int(run_of_pair[-1]) + 1, dtype=np.bool_)
    touched[run_of_pair[differ]] = True
    starts = pairs[opens][touched]
    closes = np.r_[opens[1:], True]
    ends = (pairs[closes] + 2)[touched]
    sizes = ends - starts
    run = np.repeat(np.arange(len(starts), dtype=np.int64), sizes)
    positions = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes) + np.arange(
        int(sizes.sum()), dtype=np.int64
    )
    rows = order[positions]
    order[positions] = rows[np.lexsort((rows, -weight[rows], run))]
