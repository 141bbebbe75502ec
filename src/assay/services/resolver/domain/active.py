"""Which claims are active: supersession in force, dangling relations, cycles (rule 3).

A SUPERSEDES relation is in force when its claim is not reviewed out and its
target exists. Its target is dropped whatever the target's own standing, so a
superseded claim's own supersessions stay in force: in the chain A→B→C both B
and C are targets of in-force relations and only A remains. The same rule makes
a cycle drop every claim on it; that is almost never what the author meant, so
each claim on a cycle gets a warning as well as an exclusion.

Reviewed-out claims never reach this module with their relations (the intake
voids them), which is what makes a rejected claim's supersession void.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from assay.services.resolver.domain.model import (
    INDEX,
    REF,
    SEM,
    Active,
    Relation,
    RelationKind,
    Row,
    SemKey,
    Warning,
    WarningCode,
)

_NO_RELATIONS = Active(superseded={}, warnings={})


def resolve_relations(relations: Sequence[Relation], lookup: Callable[[str], Row | None]) -> Active:
    """Apply every relation: what is superseded (and by whom), and the warnings to report."""
    if not relations:
        return _NO_RELATIONS
    by_target: dict[int, tuple[Row, list[str]]] = {}
    next_of: dict[int, int] = {}
    rows: dict[int, Row] = {}
    warnings: dict[SemKey, list[Warning]] = {}
    for relation in relations:
        source = relation.row
        target = lookup(relation.target_id)
        if target is None:
            warnings.setdefault(source[SEM], []).append(
                Warning(
                    WarningCode.DANGLING_RELATION,
                    source[REF],
                    f"relation {relation.kind.name} targets {relation.target_id!r}, "
                    "which is not in the request; it is ignored",
                )
            )
            continue
        if relation.kind is not RelationKind.SUPERSEDES:
            continue  # SUPPORTS / CONTRADICTS are informational only.
        entry = by_target.setdefault(target[INDEX], (target, []))
        entry[1].append(source[REF])
        next_of[source[INDEX]] = target[INDEX]
        rows[source[INDEX]] = source
        rows[target[INDEX]] = target
    for index in _on_cycles(next_of):
        row = rows[index]
        warnings.setdefault(row[SEM], []).append(
            Warning(
                WarningCode.SUPERSESSION_CYCLE,
                row[REF],
                f"claim {row[REF]!r} is on a supersession cycle: every claim on it is dropped",
            )
        )
    superseded = {
        index: (row, tuple(sorted(sources))) for index, (row, sources) in by_target.items()
    }
    return Active(superseded=superseded, warnings=warnings)


def _on_cycles(next_of: dict[int, int]) -> list[int]:
    """Nodes on a cycle of a graph where every node has at most one successor."""
    state: dict[int, int] = {}  # 1 = on the current walk, 2 = finished
    found: list[int] = []
    for start in sorted(next_of):
        if start in state:
            continue
        walk: list[int] = []
        node: int | None = start
        while node is not None and node not in state:
            state[node] = 1
            walk.append(node)
            node = next_of.get(node)
        if node is not None and state[node] == 1:
            found.extend(walk[walk.index(node) :])
        for visited in walk:
            state[visited] = 2
    return sorted(found)
