"""Percent agreement: how often two reviews of the same case round give the same answer.

The plainest figure, and the one people read first, so it stands beside the chance-corrected
ones rather than in place of them: it makes no allowance for agreement by chance, which is
high when one answer dominates. Each round (two or more final reviews) counts once, with the
share of its pairs of reviews that agree; the figure is the mean over rounds — Gwet's
observed agreement, so it is the ``pa`` beneath AC1. Its 95% interval is a percentile
bootstrap over rounds, seeded from the counts as Krippendorff's alpha's is, so the same
corpus gives the same interval on every engine and replica. It is INSUFFICIENT below the
minimum of rounds like every figure, and never UNDEFINED: a mean of shares always exists.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from assay.services.adjudication.domain.agreement import (
    MIN_KAPPA_CASES,
    AgreementStatus,
    Figure,
    RatedRound,
)
from assay.services.adjudication.domain.multirater import (
    Counts,
    data_seed,
    fixture_involved,
    value_counts,
)

# Numbers per NumPy step (resamples × distinct shares), as for alpha's bootstrap.
_STEP_CELLS = 4_000_000


def pair_shares(table: Counts) -> NDArray[np.float64]:
    """Each unit's share of agreeing pairs: Σ_k n_k(n_k − 1) / (m(m − 1))."""
    raters = table.sum(axis=1)
    shares: NDArray[np.float64] = (table * (table - 1.0)).sum(axis=1) / (raters * (raters - 1.0))
    return shares


def bootstrap_mean(values: NDArray[np.float64], resamples: int, seed: int) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of ``values`` over ``resamples``
    resamples with replacement. Equal values are interchangeable, so a resample is drawn
    as how many of each distinct value it holds (a multinomial, the same distribution as
    drawing one by one) at the cost of the distinct values, not of the units."""
    rng = np.random.default_rng(seed)
    count = values.shape[0]
    distinct, frequency = np.unique(values, return_counts=True)
    step = max(1, _STEP_CELLS // len(distinct))
    means: list[NDArray[np.float64]] = []
    done = 0
    while done < resamples:
        size = min(step, resamples - done)
        drawn = rng.multinomial(count, frequency / count, size=size).astype(np.float64)
        means.append(drawn @ distinct / count)
        done += size
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return float(low), float(high)


def percent_agreement(units: Sequence[RatedRound], resamples: int) -> Figure:
    """The mean share of agreeing review pairs per unit, with a bootstrap 95% interval of
    ``resamples`` resamples of the units."""
    fixture = fixture_involved(units)
    if len(units) < MIN_KAPPA_CASES:
        return Figure(AgreementStatus.INSUFFICIENT, len(units), fixture)
    table, categories = value_counts(units)
    shares = pair_shares(table)
    low, high = bootstrap_mean(shares, resamples, data_seed(table, categories))
    return Figure(
        AgreementStatus.COMPUTED,
        len(units),
        fixture,
        value=float(shares.mean()),
        ci_lower=low,
        ci_upper=high,
    )
