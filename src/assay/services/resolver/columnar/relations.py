"""The rare cases, on their own: relations (supersession, cycles, dangling targets) and
reliability-capped claims.

Supersession without cycles is one scatter: every target of an in-force SUPERSEDES
relation is dropped, superseded by its sources' ids. Anything more is handed to the
reference's own logic (``active.resolve_relations``) as minimal rows (it reads only a
row's claim_ref, index and semantic), its answer mapped back to row numbers: all the
relations when they form a cycle (found by pointer doubling over the few rows involved),
and the dangling ones, whose warnings it words. Relations only exist on claims with ids,
and every warning concerns such a claim, so no content reference is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assay.services.resolver.columnar.columns import Bools, Ints
from assay.services.resolver.columnar.decode import ClaimColumns
from assay.services.resolver.domain.active import resolve_relations
from assay.services.resolver.domain.model import Relation, RelationKind, Row, WarningCode


@dataclass(frozen=True, slots=True)
class Relations:
    """What the relations do: superseded rows (with by whom) and warnings by row."""

    superseded: Bools
    superseded_by: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # (row, code, message)
    warnings: list[tuple[int, WarningCode, str]] = field(default_factory=list)


def _row(claim_id: str, index: int) -> Row:
    """A minimal reference row: the fields ``active`` reads (ref, index, semantic)."""
    return (0.0, claim_id, "", 0.0, "", False, index, ("", ""), "")


def apply(claims: ClaimColumns) -> Relations:
    """Apply every relation of a claim that is not reviewed out (rule 3)."""
    superseded = np.zeros(claims.count, dtype=np.bool_)
    rows = np.flatnonzero((claims.relation > 0) & ~claims.rejected)
    if not len(rows):
        return Relations(superseded)
    targets = claims.target_row[rows]
    supersedes = (claims.relation[rows] == RelationKind.SUPERSEDES) & (targets >= 0)
    sources, dropped = rows[supersedes], targets[supersedes]
    if _has_cycle(sources, dropped):
        return _by_reference(claims, rows)
    dangling = rows[targets < 0]
    warnings = _by_reference(claims, dangling).warnings if len(dangling) else []
    superseded[dropped] = True
    by: dict[int, list[str]] = {}
    for target, claim_id in zip(dropped.tolist(), claims.ids.texts(sources), strict=True):
        by.setdefault(target, []).append(claim_id)
    return Relations(
        superseded, {target: tuple(sorted(ids)) for target, ids in by.items()}, warnings
    )


def _has_cycle(sources: Ints, targets: Ints) -> bool:
    """Whether the edges source -> target (at most one per source) contain a cycle.

    After 2^k >= nodes steps, every walk has either fallen off the end of its chain or
    is going round a cycle; steps are doubled (``follow = follow[follow]``), so this
    takes log2(nodes) gathers over the few nodes involved."""
    if not len(sources):
        return False
    nodes, compact = np.unique(np.r_[sources, targets], return_inverse=True)
    end = len(nodes)  # where a chain falls off, and stays
    follow = np.full(end + 1, end, dtype=np.int64)
    follow[compact[: len(sources)]] = compact[len(sources) :]
    for _ in range(int(end).bit_length() + 1):
        follow = follow[follow]
    return bool((follow[:end] != end).any())


def _by_reference(claims: ClaimColumns, rows: Ints) -> Relations:
    """The relations of ``rows`` applied by ``active.resolve_relations`` itself."""
    superseded = np.zeros(claims.count, dtype=np.bool_)
    target_rows = claims.target_row[rows]
    source_ids = claims.ids.texts(rows)
    target_ids = claims.targets.texts(rows)
    found: dict[str, Row] = {}
    relations: list[Relation] = []
    kinds = claims.relation[rows].tolist()
    for index, claim_id, kind, target_id, target in zip(
        rows.tolist(), source_ids, kinds, target_ids, target_rows.tolist(), strict=True
    ):
        if target >= 0:
            found[target_id] = _row(target_id, target)
        relations.append(Relation(_row(claim_id, index), RelationKind(kind), target_id))
    active = resolve_relations(relations, found.get)
    by: dict[int, tuple[str, ...]] = {}
    for index, (_, sources) in active.superseded.items():
        superseded[index] = True
        by[index] = sources
    row_of = dict(zip(source_ids, rows.tolist(), strict=True))
    warnings = [
        (row_of[w.claim_ref], w.code, w.message)
        for found_warnings in active.warnings.values()
        for w in found_warnings
    ]
    return Relations(superseded, by, warnings)


def capped(
    claims: ClaimColumns, rows: Ints, reliability: np.ndarray
) -> list[tuple[int, WarningCode, str]]:
    """One RELIABILITY_CAPPED warning per row whose stated reliability the table lowered,
    worded as ``engine.capped_warnings`` words it."""
    out = []
    for index in rows.tolist():
        source = claims.sources[int(claims.source[index])]
        out.append(
            (
                index,
                WarningCode.RELIABILITY_CAPPED,
                f"reliability {float(claims.stated[index]):g} exceeds source {source!r}'s "
                f"{float(reliability[index]):g}; capped",
            )
        )
    return out
