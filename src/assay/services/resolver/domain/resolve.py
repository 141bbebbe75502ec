"""Resolution of whole requests: evidence, one semantic, hypotheses (rules 3-9, 11).

Every entry point here works on one or more ``Intake``s (the base evidence and
possibly extra claims) and applies the same steps: relations over all of them
together, then exclusions, then fusion per semantic. Hypotheses reuse the base
intake, so resolving N hypotheses costs N × (the extra claims + the target
semantic), not N × the whole evidence: that is what makes the planner's
"could this probe change the outcome?" cheap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain

from assay.services.resolver.domain.active import resolve_relations
from assay.services.resolver.domain.fusion import (
    exclusions,
    resolve,
    resolve_supports,
    support_of,
    without_superseded,
)
from assay.services.resolver.domain.model import (
    REF,
    RELIABILITY,
    SEM,
    SOURCE,
    Active,
    Excluded,
    Exclusion,
    Intake,
    Resolution,
    Row,
    SemKey,
    Staleness,
    ValueSupport,
    Warning,
    WarningCode,
)
from assay.services.resolver.domain.policy import Policy


def capped_warnings(intakes: Iterable[Intake]) -> dict[SemKey, list[Warning]]:
    """One RELIABILITY_CAPPED warning per claim whose stated reliability the table lowered."""
    out: dict[SemKey, list[Warning]] = {}
    for intake in intakes:
        for row, stated in intake.capped:
            out.setdefault(row[SEM], []).append(
                Warning(
                    WarningCode.RELIABILITY_CAPPED,
                    row[REF],
                    f"reliability {stated:g} exceeds source {row[SOURCE]!r}'s "
                    f"{row[RELIABILITY]:g}; capped",
                )
            )
    return out


def _lookup(intakes: Sequence[Intake]) -> Active:
    relations = list(chain.from_iterable(i.relations for i in intakes))
    if not relations:
        return resolve_relations((), _nothing)  # without building any id index
    if len(intakes) == 1:
        return resolve_relations(relations, intakes[0].ids.get)

    def find(claim_id: str) -> Row | None:
        for intake in intakes:
            row = intake.ids.get(claim_id)
            if row is not None:
                return row
        return None

    return resolve_relations(relations, find)


def _nothing(claim_id: str) -> Row | None:
    return None


class _Context:
    """Relations, exclusions and warnings over a set of intakes, bucketed by semantic."""

    def __init__(self, intakes: Sequence[Intake]) -> None:
        self.intakes = intakes
        self.active = _lookup(intakes)
        self.excluded: dict[SemKey, list[Excluded]] = (
            exclusions(chain.from_iterable(i.rejected for i in intakes), self.active)
            if self.active.superseded or any(i.rejected for i in intakes)
            else {}
        )
        warnings = capped_warnings(intakes)
        for sem, found in self.active.warnings.items():
            warnings.setdefault(sem, []).extend(found)
        self.warnings = warnings

    def resolve(self, sem: SemKey, policy: Policy, staleness: Staleness | None) -> Resolution:
        merged: dict[str, list[Row]] = {}
        for intake in self.intakes:
            for key, rows in intake.values.get(sem, {}).items():
                merged.setdefault(key, []).extend(rows)
        values: Iterable[Sequence[Row]] = (
            without_superseded(merged, self.active) if self.active.superseded else merged.values()
        )
        return resolve(
            sem,
            values,
            policy=policy,
            excluded=self.excluded.get(sem, ()),
            warnings=self.warnings.get(sem, ()),
            staleness=staleness,
        )


def _carry_on() -> None:
    """The ``check`` of work nobody can stop half-way."""


# Semantics resolved between two calls of ``check``.
CHECK_EVERY = 64


def resolve_evidence(
    intake: Intake,
    policy: Policy,
    staleness: Staleness | None = None,
    check: Callable[[], None] = _carry_on,
) -> list[Resolution]:
    """One resolution per semantic present (even if all its claims are excluded), sorted.

    ``check`` is called every ``CHECK_EVERY`` semantics and may raise to abandon the work
    (its caller is gone)."""
    context = _Context((intake,))
    sems = set(intake.values)
    sems.update(context.excluded)
    sems.update(context.warnings)
    out = []
    active = context.active
    excluded = context.excluded
    warnings = context.warnings
    # Only these semantics lose rows to supersession; the others are resolved as read.
    touched = {row[SEM] for row, _ in active.superseded.values()}
    for i, sem in enumerate(sorted(sems)):
        if not i % CHECK_EVERY:
            check()
        values = intake.values.get(sem, {})
        out.append(
            resolve(
                sem,
                without_superseded(values, active) if sem in touched else values.values(),
                policy=policy,
                excluded=excluded.get(sem, ()),
                warnings=warnings.get(sem, ()),
                staleness=staleness,
            )
        )
    return out


class Layered:
    """The base evidence prepared once; extra claims (a hypothesis, a proposal) layered on it.

    Relations, exclusions and warnings of the base are computed once per request. Extra
    claims without relations, whose ids no base relation was waiting for, cannot change
    any of that, so each of them costs only its own claims plus the target semantic; only
    extra claims that do touch relations pay for recomputing them over base + extra.

    The base's support of each value is kept too: under such extra claims a value they
    do not assert has exactly the base's active rows, so its support is reused, and a
    value they do assert is re-fused from the base's (already sorted) rows plus theirs.
    Six hypotheses over a 1,000-claim semantic then sort a few hundred rows each, not
    every row six times.
    """

    def __init__(self, base: Intake, policy: Policy, staleness: Staleness | None = None) -> None:
        self.base = base
        self.policy = policy
        self.staleness = staleness
        self.context = _Context((base,))
        known = base.ids if base.relations else {}
        self.awaited = {r.target_id for r in base.relations if r.target_id not in known}
        self._supports: dict[SemKey, dict[str, ValueSupport]] = {}
        self._rejected: Counter[SemKey] | None = None

    def claims_about(self, sem: SemKey) -> int:
        """How many base claims are about ``sem``, reviewed-out ones included: what one
        resolution of ``sem`` weighs (and the unit of ``budget.charge``)."""
        if self._rejected is None:
            self._rejected = Counter(row[SEM] for row in self.base.rejected)
        rows = self.base.values.get(sem)
        return (sum(map(len, rows.values())) if rows else 0) + self._rejected[sem]

    def _base_supports(self, sem: SemKey) -> dict[str, ValueSupport]:
        """The base's support per value key of ``sem`` (active rows only), computed once."""
        found = self._supports.get(sem)
        if found is None:
            values = self.base.values.get(sem, {})
            active = self.context.active
            groups: Iterable[Sequence[Row]] = (
                without_superseded(values, active) if active.superseded else values.values()
            )
            supports = (support_of(rows) for rows in groups if rows)
            found = self._supports[sem] = {s.value_key: s for s in supports}
        return found

    def resolve(self, sem: SemKey) -> Resolution:
        """The base alone."""
        context = self.context
        return resolve_supports(
            sem,
            list(self._base_supports(sem).values()),
            policy=self.policy,
            excluded=context.excluded.get(sem, ()),
            warnings=context.warnings.get(sem, ()),
            staleness=self.staleness,
        )

    def resolve_with(self, extra: Intake, sem: SemKey) -> Resolution:
        """Base + ``extra``."""
        if extra.relations or (self.awaited and not self.awaited.isdisjoint(extra.ids)):
            return _Context((self.base, extra)).resolve(sem, self.policy, self.staleness)
        context = self.context
        base_supports = self._base_supports(sem)
        added = extra.values.get(sem, {})
        supports = [s for key, s in base_supports.items() if key not in added]
        for key, rows in added.items():
            before = base_supports.get(key)
            supports.append(support_of([*before.claims, *rows] if before else rows))
        excluded = [
            *context.excluded.get(sem, ()),
            *(Excluded(row, Exclusion.REVIEWED_OUT) for row in extra.rejected if row[SEM] == sem),
        ]
        warnings = [*context.warnings.get(sem, ()), *capped_warnings((extra,)).get(sem, ())]
        return resolve_supports(
            sem,
            supports,
            policy=self.policy,
            excluded=excluded,
            warnings=warnings,
            staleness=self.staleness,
        )


def resolve_one(
    intakes: Sequence[Intake], sem: SemKey, policy: Policy, staleness: Staleness | None = None
) -> Resolution:
    """The resolution of ``sem`` over the union of ``intakes``."""
    return _Context(intakes).resolve(sem, policy, staleness)


def coverage(resolutions: Sequence[Resolution]) -> float:
    """Display only: the weakest per-semantic confidence, 0 when there is nothing."""
    return min((r.confidence for r in resolutions), default=0.0)


def conflicted_safety(resolutions: Sequence[Resolution]) -> list[SemKey]:
    return [r.sem for r in resolutions if r.requires_review]
