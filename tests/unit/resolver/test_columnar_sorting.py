"""Orders found by sorting packed keys equal NumPy's stable orders, fix-ups included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from assay.services.resolver.columnar.engine.sorting import by_weight_descending, stable_order


def reference(outer: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """By outer ascending, weight descending, index ascending."""
    return np.lexsort((np.arange(len(outer)), -weight, outer))


@settings(max_examples=200, deadline=None)
@given(keys=arrays(np.int64, st.integers(0, 300), elements=st.integers(0, 1 << 20)))
def test_stable_order_is_numpys_stable_argsort(keys: np.ndarray) -> None:
    order, ordered = stable_order(keys, 1 << 21)
    assert order.tolist() == np.argsort(keys, kind="stable").tolist()
    assert ordered.tolist() == np.sort(keys).tolist()


def test_keys_too_wide_to_pack_fall_back_to_argsort() -> None:
    keys = np.array([1 << 60, 5, 1 << 60, 0], dtype=np.int64)
    order, ordered = stable_order(keys, (1 << 60) + 1)
    assert order.tolist() == [3, 1, 0, 2]
    assert ordered.tolist() == [0, 5, 1 << 60, 1 << 60]


# Weights that collide in fixed point but differ: near-equal neighbours, tiny weights,
# and exact repeats, so that the fix-up runs and ties keep index order.
_NEAR = st.sampled_from([0.5, 0.5 + 1e-15, 0.5 - 1e-15, 0.5 + 2e-12, 1e-12, 2e-12, 0.0, 1.0])
_WEIGHT = st.one_of(_NEAR, st.floats(0.0, 1.0))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), _WEIGHT), max_size=200),
)
def test_by_weight_descending_is_exact_whatever_the_weights(pairs: list[tuple[int, float]]) -> None:
    outer = np.array([p[0] for p in pairs], dtype=np.int64)
    weight = np.array([p[1] for p in pairs], dtype=np.float64)
    assert by_weight_descending(outer, weight).tolist() == reference(outer, weight).tolist()


def test_weights_sharing_a_fixed_point_step_are_put_in_exact_order() -> None:
    weight = np.array([1e-12, 3e-12, 2e-12, 0.25, 3e-12], dtype=np.float64)
    outer = np.zeros(5, dtype=np.int64)
    assert by_weight_descending(outer, weight).tolist() == [3, 1, 4, 2, 0]


def test_a_wide_outer_key_leaves_too_few_bits_and_sorts_exactly() -> None:
    outer = np.array([1 << 58, 0, 1 << 58, 0], dtype=np.int64)
    weight = np.array([0.1, 0.2, 0.3, 0.2], dtype=np.float64)
    assert by_weight_descending(outer, weight).tolist() == [1, 3, 2, 0]


def test_large_inputs_agree_with_lexsort() -> None:
    rng = np.random.default_rng(7)
    outer = rng.integers(0, 5_000, 200_000)
    weight = np.round(rng.random(200_000), 9)  # many exact repeats
    weight[::97] = 1e-13 * rng.integers(0, 5, len(weight[::97]))  # many shared steps
    assert by_weight_descending(outer, weight).tolist() == reference(outer, weight).tolist()
