"""Garbage-collector settings for a process that serves.

CPython's default thresholds suit scripts. A server allocates short-lived, acyclic objects
on every call (requests, responses, rows, futures), and with the defaults it runs a young
collection every few calls, re-walking the same long-lived objects (modules, descriptors,
the gRPC runtime) each time. ``tune_for_serving`` freezes what start-up built (never
collected, so left out of every scan) and raises the thresholds, so young collections are
far rarer; a full collection still comes now and then, so cyclic garbage that outlived the
young generations (an error's traceback on a long call) does not pile up. The cost is
memory: up to ``SERVING_THRESHOLDS[0]`` young objects wait for their collection, and only
cyclic garbage waits at all. Only the ``assay`` command calls it: it owns its process, while
a library embedding the runtime keeps its own settings. (What it buys: docs/performance.md.)
"""

from __future__ import annotations

import gc

SERVING_THRESHOLDS = (50_000, 20, 10)


def tune_for_serving() -> None:
    """Freeze everything allocated so far and raise the collection thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLDS)
