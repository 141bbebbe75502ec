"""One reliability figure: a Beta posterior over a source kind's matched share.

Each checked claim is a Bernoulli trial (did it assert the gold value?), so ``k`` matches
in ``n`` claims give Beta(1 + k, 1 + n - k) under a uniform Beta(1, 1) prior. The prior
is not centred on the declared value because calibration exists to test that value: such
a prior would pull every interval towards it and let a wrong table vouch for itself.

Weighted trials (spot-checks sampled at unequal rates) enter as a Hájek estimate p̂ with
an effective sample size n_eff: Beta(1 + n_eff·p̂, 1 + n_eff·(1 - p̂)), the unweighted
posterior when all weights are equal. n_eff is the smaller of Kish's ``(Σw)² / Σw²`` and
``p̂(1 - p̂) / V``, V the linearised variance: Kish assumes outcomes unrelated to weights,
and when the rarely sampled semantics are also the harder ones the estimate varies more.
Below ``min_count`` effective trials a figure is INSUFFICIENT, with no number. SciPy is
imported at the first interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

PRIOR_A = 1.0
PRIOR_B = 1.0
PRIOR_NAME = "Beta(1, 1)"
LOWER_TAIL = 0.025
UPPER_TAIL = 0.975
INTERVAL_NAME = "95% equal-tailed"
# Equal weights give n_eff = n only up to rounding; a count is not refused for that.
_COUNT_TOLERANCE = 1e-9


class FigureStatus(Enum):
    ESTIMATED = "ESTIMATED"
    INSUFFICIENT = "INSUFFICIENT"


@dataclass(slots=True)
class Tally:
    """One source kind's trials of one kind (spot-check or conflict), counted per weight.

    Counting per distinct weight, and summing in weight order only when asked, makes
    every figure independent of the order the trials arrived in, to the last bit.
    """

    counts: dict[float, list[int]] = field(default_factory=dict)  # weight -> [trials, matched]
    labels: set[str] = field(default_factory=set)

    def add(self, label_id: str, matched: bool, weight: float) -> None:
        found = self.counts.get(weight)
        if found is None:
            found = self.counts[weight] = [0, 0]
        found[0] += 1
        found[1] += matched
        self.labels.add(label_id)

    @property
    def count(self) -> int:
        return sum(n for n, _ in self.counts.values())

    def sums(self) -> tuple[float, float, float]:
        """(Σw, Σw·matched, Σw²), summed in ascending weight order."""
        weight = matched = squared = 0.0
        for w, (n, k) in sorted(self.counts.items()):
            weight += n * w
            matched += k * w
            squared += n * w * w
        return weight, matched, squared

    @property
    def effective_count(self) -> float:
        """The smaller of Kish's size and the linearised variance's; n for equal weights."""
        if len(self.counts) == 1:  # exactly n, not n up to rounding
            return float(self.count)
        weight, matched, squared = self.sums()
        if not squared:
            return 0.0
        kish = weight * weight / squared
        share = matched / weight
        if share <= 0.0 or share >= 1.0:
            return kish  # no spread to measure: every trial matched, or none did
        # Σ w²(x - p̂)², grouped by weight: k trials at (1 - p̂)², n - k at p̂².
        spread = 0.0
        for w, (n, k) in sorted(self.counts.items()):
            spread += w * w * (k * (1.0 - share) ** 2 + (n - k) * share * share)
        linearised = share * (1.0 - share) * weight * weight / spread
        return min(kish, linearised)

    @property
    def share(self) -> float:
        """The weighted matched share (Hájek); at least one trial."""
        if len(self.counts) == 1:  # exactly k / n
            ((n, k),) = self.counts.values()
            return k / n
        weight, matched, _ = self.sums()
        return matched / weight


@dataclass(frozen=True, slots=True)
class Figure:
    """A source kind's reliability from one kind of trial, or INSUFFICIENT without a number.

    ``estimate`` is the (weighted) matched share, the maximum-likelihood figure;
    ``posterior_mean``, ``low`` and ``high`` are the Beta posterior's mean and interval.
    ``synthetic`` marks a figure that used labels not adjudicated by people.
    """

    status: FigureStatus
    count: int
    labels: int
    effective_count: float
    synthetic: bool
    estimate: float | None = None
    posterior_mean: float | None = None
    low: float | None = None
    high: float | None = None
    declared_outside: bool | None = None


def figures_of(
    tallies: Sequence[Tally], declared: Sequence[float], min_count: int, synthetic: bool
) -> list[Figure]:
    """One figure per tally, the intervals computed in one vectorised call."""
    sufficient = [
        i for i, t in enumerate(tallies) if t.effective_count + _COUNT_TOLERANCE >= min_count
    ]
    shapes = [posterior_shape(tallies[i]) for i in sufficient]
    bounds = beta_quantiles(shapes)
    out = [
        Figure(FigureStatus.INSUFFICIENT, t.count, len(t.labels), t.effective_count, synthetic)
        for t in tallies
    ]
    for i, (a, b), (low, high) in zip(sufficient, shapes, bounds, strict=True):
        t = tallies[i]
        out[i] = Figure(
            FigureStatus.ESTIMATED,
            t.count,
            len(t.labels),
            t.effective_count,
            synthetic,
            estimate=t.share,
            posterior_mean=a / (a + b),
            low=low,
            high=high,
            declared_outside=not low <= declared[i] <= high,
        )
    return out


def posterior_shape(tally: Tally) -> tuple[float, float]:
    """The Beta posterior's (a, b) for a tally with at least one trial."""
    n = tally.effective_count
    share = tally.share
    return PRIOR_A + n * share, PRIOR_B + n * (1.0 - share)


def beta_quantiles(shapes: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The 2.5% and 97.5% quantiles of each Beta(a, b)."""
    if not shapes:
        return []
    from scipy.special import betaincinv  # type: ignore[import-untyped]

    a = np.array([s[0] for s in shapes])
    b = np.array([s[1] for s in shapes])
    low = betaincinv(a, b, LOWER_TAIL)
    high = betaincinv(a, b, UPPER_TAIL)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]
