"""Which field of the planner's request a resolver error's field path names.

The resolver reports bad evidence by field path (``evidence.claims[3].value``); the
planner's request has the same field names for the evidence it passes through, so
those paths map as they are, and paths into what the planner built itself (the
hypotheses, a scoped copy of the evidence) name no field of the caller's.
"""

from __future__ import annotations

from collections.abc import Callable

# Maps a resolver field path to the planner request's path (None: not the caller's field).
PathMap = Callable[[str], "str | None"]


def same_paths(path: str) -> str | None:
    """ResolveSemantic's fields have the planner request's names: identity."""
    return path


def no_paths(path: str) -> str | None:
    """Evidence the planner derived itself: no resolver path names a caller's field."""
    return None


def base_paths_only(path: str) -> str | None:
    """For ResolveHypotheses: base fields map through; ``hypotheses[...]`` are the planner's own."""
    return None if path.startswith("hypotheses") else path
