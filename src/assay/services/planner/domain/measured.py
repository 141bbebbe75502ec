"""What the executor's recorded acquisitions measured, per probe kind, as plain values.

A probe's cost and latency bands are declared, and a candidate's discrimination is
predicted; the executor records what each acquisition it performed took and did
(``assay executor run --observations FILE``). From those records this module derives,
per probe kind: the median and 90th-percentile latency (nearest rank), the share of
acquisitions that yielded a claim, and the latency band that holds the 90th percentile
(a declared band is an upper bound, as the executor's own check reads it). Below
``MINIMUM_ACQUISITIONS`` completed acquisitions a kind keeps its declared band; at or
above it the ranking uses the observed band and success rate (``ranking``), and a band
a step or more from the declared one is flagged.

The planner's judgement is checked the same way: per kind and predicted
discrimination, how many acquisitions that observed something changed the decision
(the resolver's status or leader). Below the minimum there is no rate, only counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from assay.services.planner.domain.vocabulary import (
    Discrimination,
    LatencyBand,
    MeasurementBasis,
    ProbeKind,
)

# The fewest acquisitions a figure is drawn from: a kind's latency and success rate, and
# one row (kind and predicted discrimination) of the judgement.
MINIMUM_ACQUISITIONS = 20
# Upper bounds of the latency bands, in seconds (the executor's check of a declared band
# uses the same ones); HOURS is open-ended.
BAND_UPPER_SECONDS: Mapping[LatencyBand, float] = {
    LatencyBand.SECONDS: 60.0,
    LatencyBand.MINUTES: 3600.0,
}
HIGH_PERCENTILE = 0.9
JUDGED = (Discrimination.HIGH, Discrimination.MEDIUM, Discrimination.LOW)


@dataclass(frozen=True)
class Observation:
    """One recorded acquisition. ``completed`` is False while it waits on people (a case
    enqueued, a gold label not yet frozen); ``changed`` is None when no decision before
    and after is known (a gold label collected outside a plan)."""

    kind: ProbeKind
    completed: bool
    succeeded: bool
    latency_seconds: float
    predicted: Discrimination = Discrimination.UNSPECIFIED
    changed: bool | None = None


@dataclass(frozen=True)
class MeasuredCost:
    """One probe kind's observed figures beside its declared latency band."""

    declared: LatencyBand
    acquisitions: int = 0
    median_seconds: float | None = None
    p90_seconds: float | None = None
    success_rate: float | None = None

    @property
    def measured(self) -> bool:
        return self.acquisitions >= MINIMUM_ACQUISITIONS and self.p90_seconds is not None

    @property
    def observed_band(self) -> LatencyBand:
        """The band holding the 90th percentile; UNSPECIFIED below the minimum."""
        if not self.measured or self.p90_seconds is None:
            return LatencyBand.UNSPECIFIED
        return band_of(self.p90_seconds)

    @property
    def disagrees(self) -> bool:
        """The observed band is a band or more from the declared one."""
        observed = self.observed_band
        return observed is not LatencyBand.UNSPECIFIED and observed != self.declared

    @property
    def basis(self) -> MeasurementBasis:
        return MeasurementBasis.OBSERVED if self.measured else MeasurementBasis.DECLARED

    @property
    def latency(self) -> LatencyBand:
        """The band the ranking charges: observed once measured, else declared."""
        return self.observed_band if self.measured else self.declared

    @property
    def success_share(self) -> float:
        """The share of its expected value a candidate keeps: 1 until measured."""
        if not self.measured or self.success_rate is None:
            return 1.0
        return self.success_rate


@dataclass(frozen=True)
class DiscriminationCheck:
    """One row of the judgement: acquisitions at one predicted discrimination that
    observed something, and how many of them changed the decision."""

    predicted: Discrimination
    acquisitions: int
    changes: int

    @property
    def sufficient(self) -> bool:
        return self.acquisitions >= MINIMUM_ACQUISITIONS

    @property
    def rate(self) -> float | None:
        return self.changes / self.acquisitions if self.sufficient else None


@dataclass(frozen=True)
class Measurements:
    """Every kind's figures and judgement rows; ``costs`` is empty without observations."""

    costs: Mapping[ProbeKind, MeasuredCost]
    checks: Mapping[ProbeKind, tuple[DiscriminationCheck, ...]]


NONE = Measurements({}, {})


def band_of(seconds: float) -> LatencyBand:
    for band, upper in BAND_UPPER_SECONDS.items():
        if seconds < upper:
            return band
    return LatencyBand.HOURS


def nearest_rank(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile of an ascending, non-empty list."""
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def median(ordered: list[float]) -> float:
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def cost_of(declared: LatencyBand, observations: list[Observation]) -> MeasuredCost:
    done = [o for o in observations if o.completed]
    if not done:
        return MeasuredCost(declared)
    latencies = sorted(o.latency_seconds for o in done)
    return MeasuredCost(
        declared=declared,
        acquisitions=len(done),
        median_seconds=median(latencies),
        p90_seconds=nearest_rank(latencies, HIGH_PERCENTILE),
        success_rate=sum(o.succeeded for o in done) / len(done),
    )


def checks_of(observations: list[Observation]) -> tuple[DiscriminationCheck, ...]:
    """One row per predicted band: acquisitions that yielded claims with a known change."""
    judged = [o for o in observations if o.succeeded and o.changed is not None]
    return tuple(
        DiscriminationCheck(
            band,
            sum(o.predicted is band for o in judged),
            sum(o.predicted is band and bool(o.changed) for o in judged),
        )
        for band in JUDGED
    )


def measure(
    observations: Iterable[Observation], declared: Mapping[ProbeKind, LatencyBand]
) -> Measurements:
    """The figures of every kind in ``declared`` (the catalogue's latency bands)."""
    by_kind: dict[ProbeKind, list[Observation]] = {kind: [] for kind in declared}
    for observation in observations:
        if observation.kind in by_kind:
            by_kind[observation.kind].append(observation)
    costs = {kind: cost_of(declared[kind], found) for kind, found in by_kind.items()}
    checks = {kind: checks_of(found) for kind, found in by_kind.items()}
    return Measurements(costs, checks)
