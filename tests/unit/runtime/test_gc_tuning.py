"""``tune_for_serving``: start-up objects frozen out of collections, rarer collections."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from assay.runtime.gc_tuning import SERVING_THRESHOLDS, tune_for_serving


@pytest.fixture
def restored_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


@pytest.mark.usefixtures("restored_gc")
def test_tuning_freezes_start_up_and_raises_thresholds() -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    tune_for_serving()
    assert gc.get_threshold() == SERVING_THRESHOLDS
    assert gc.get_freeze_count() > 1000  # the modules, classes and objects imported so far
    assert gc.isenabled()


@pytest.mark.usefixtures("restored_gc")
def test_cyclic_garbage_is_still_collected_after_tuning() -> None:
    tune_for_serving()

    class Node:
        other: object = None

    first, second = Node(), Node()
    first.other, second.other = second, first
    ids = {id(first), id(second)}
    del first, second
    gc.collect()
    assert not any(id(o) in ids for o in gc.get_objects() if type(o).__name__ == "Node")
