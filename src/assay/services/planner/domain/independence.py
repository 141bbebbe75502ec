"""Independence of a candidate from what the resolver already counted.

Read from structure, never assumed: the resolution lists, per value, the
claims that counted and whether their correlation group was declared. A probe
whose source kind was never counted brings a new line of evidence; one whose
source kind was counted in a declared group would most likely repeat it; one
whose source kind was counted only under a defaulted group is of unknown
independence and is not rewarded as independent. When a source kind was counted
both ways, the conservative reading (same source) wins: correlated evidence
must never be scored as independent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from assay.services.planner.domain.model import CountedClaim, Independence, Resolution

CountedIndex = Mapping[str, tuple[CountedClaim, ...]]
"""The counted claims of a resolution by source kind: built once per plan."""


def counted_by_source(resolution: Resolution) -> CountedIndex:
    """Every counted claim of every value (all of them were already weighed), by source."""
    index: dict[str, list[CountedClaim]] = defaultdict(list)
    for view in resolution.values:
        for claim in view.counted:
            index[claim.source].append(claim)
    return {source: tuple(claims) for source, claims in index.items()}


def independence_of(source: str, counted: CountedIndex) -> Independence:
    """How a new claim from ``source`` relates to the counted claims."""
    same = counted.get(source, ())
    if not same:
        return Independence.INDEPENDENT_OF_COUNTED
    if any(c.declared for c in same):
        return Independence.SAME_SOURCE_AS_COUNTED
    return Independence.UNVERIFIED


def shared_group(source: str, counted: CountedIndex) -> CountedClaim | None:
    """The counted group a new claim from ``source`` would most likely join, if any.

    Declared groups first, then defaulted ones, each by name: a deterministic
    pick among equally plausible groups.
    """
    same = counted.get(source, ())
    if not same:
        return None
    return min(same, key=lambda c: (not c.declared, c.correlation_group))
