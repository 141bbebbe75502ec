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
import pyarrow as pa

from assay.services.resolver.columnar.input.columns import Bools, Ints
from assay.services.resolver.columnar.input.decode import ClaimColumns
from assay.services.resolver.domain.active import resolve_relations
from assay.services.resolver.domain.model import Relation, RelationKind, Row, WarningCode


@dataclass(frozen=True, slots=True)
class Supersessions:
    """Who superseded each superseded row, as columns: ``rows`` ascending, each with
    ``counts`` ids, which follow in ``ids`` row by row, each row's sorted."""

    rows: Ints
    counts: Ints
    ids: pa.Array

    @classmethod
    def none(cls) -> Supersessions:
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, empty, pa.array([], pa.string()))

    @classmethod
    def of(cls, by: dict[int, tuple[str, ...]]) -> Supersessions:
        """From ``{row: sorted ids}``."""
        rows = sorted(by)
        return cls(
            np.array(rows, dtype=np.int64),
            np.array([len(by[row]) for row in rows], dtype=np.int64),
            pa.array([claim_id for row in rows for claim_id in by[row]], pa.string()),
        )

    @classmethod
    def pairs(cls, rows: Ints, ids: pa.Array) -> Supersessions:
        """From one (superseded row, superseding id) pair per entry, in any order."""
        if not len(rows):
            return cls.none()
        table = pa.table({"row": rows, "id": ids.cast(pa.string())})
        table = table.sort_by([("row", "ascending"), ("id", "ascending")])
        ordered = table.column("row").to_numpy()
        opens = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        counts = np.diff(np.r_[opens, len(ordered)])
        return cls(ordered[opens].astype(np.int64), counts, table.column("id").combine_chunks())

    def without(self, dropped: Bools) -> Supersessions:
        """These supersessions less those of the rows ``dropped`` marks."""
        keep = ~dropped[self.rows]
        if keep.all():
            return self
        kept_ids = self.ids.filter(pa.array(np.repeat(keep, self.counts)))
        return Supersessions(self.rows[keep], self.counts[keep], kept_ids)

    def as_dict(self) -> dict[int, tuple[str, ...]]:
        """``{row: ids}``."""
        ids = self.ids.to_pylist()
        ends = np.cumsum(self.counts).tolist()
        starts = [end - count for end, count in zip(ends, self.counts.tolist(), strict=True)]
        return {
            row: tuple(ids[start:end])
            for row, start, end in zip(self.rows.tolist(), starts, ends, strict=True)
        }

    def lists(self, rows: Ints) -> pa.Array:
        """list<utf8> per row of ``rows`` (ascending, every superseded row among them):
        who superseded it, empty for the others."""
        lengths = np.zeros(len(rows), dtype=np.int64)
        lengths[np.searchsorted(rows, self.rows)] = self.counts
        offsets = np.r_[0, np.cumsum(lengths)].astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), self.ids.cast(pa.string()))


@dataclass(frozen=True, slots=True)
class Relations:
    """What the relations do: superseded rows (with by whom) and warnings by row."""

    superseded: Bools
    superseded_by: Supersessions = field(default_factory=Supersessions.none)
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
    by = Supersessions.pairs(dropped, claims.ids.column.take(pa.array(sources, pa.int64())))
    return Relations(superseded, by, warnings)


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
    return Relations(superseded, Supersessions.of(by), warnings)


def capped(
    claims: ClaimColumns, rows: Ints, reliability: np.ndarray
) -> list[tuple[int, WarningCode, str]]:
    """One RELIABILITY_CAPPED warning per row whose stated reliability the table lowered,
    worded as ``domain.resolve.capped_warnings`` words it."""
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
