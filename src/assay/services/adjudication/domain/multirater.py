"""Fleiss' kappa and Krippendorff's alpha: agreement of every review of a case round, not two.

The pooled kappa compares the first two reviews of each round; these use them all, computed
from one table of counts (Fleiss' 1971 formula, a few lines, held equal to statsmodels'
``fleiss_kappa`` by a differential test; alpha by the ``krippendorff`` package), and held
to the pooled kappa's honesty rules: INSUFFICIENT below
``MIN_KAPPA_CASES`` rounds, UNDEFINED when every answer is in one category or the library
answers NaN, and fixture reviewers flagged. Fleiss' kappa takes the rounds with the most
common number of reviews; alpha every round with two or more.

Alpha's 95% interval is a percentile bootstrap over rounds, on the closed form of nominal
alpha evaluated for every resample at once with NumPy (a differential test holds it equal
to the library), seeded from the counts so every engine and replica gives the same interval.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence

import krippendorff
import numpy as np
from numpy.typing import NDArray

from assay.services.adjudication.domain.agreement import (
    MIN_KAPPA_CASES,
    AgreementStatus,
    Figure,
    RatedRound,
    UndefinedReason,
)

Counts = NDArray[np.float64]

DEFAULT_RESAMPLES = 1000
MAX_RESAMPLES = 10_000
# Numbers per NumPy step (resamples × distinct rows), about 32 MB, so even a corpus of
# all-different rows bootstraps in bounded memory.
_STEP_CELLS = 4_000_000


def value_counts(units: Sequence[RatedRound]) -> tuple[Counts, list[str]]:
    """Units by categories: how many of each unit's reviews fell in each category."""
    categories = sorted({r.category for unit in units for r in unit.ratings})
    column = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(units), len(categories)))
    for row, unit in enumerate(units):
        for rating in unit.ratings:
            table[row, column[rating.category]] += 1
    return table, categories


def fixture_involved(units: Sequence[RatedRound]) -> bool:
    """Whether any review of ``units`` comes from a fixture reviewer."""
    return any(r.fixture for unit in units for r in unit.ratings)


def refusal(units: Sequence[RatedRound], categories: int) -> Figure | None:
    """The INSUFFICIENT or degenerate UNDEFINED figure, or None when a value may be computed."""
    fixture = fixture_involved(units)
    if len(units) < MIN_KAPPA_CASES:
        return Figure(AgreementStatus.INSUFFICIENT, len(units), fixture)
    if categories < 2:
        return Figure(
            AgreementStatus.UNDEFINED,
            len(units),
            fixture,
            undefined_reason=UndefinedReason.DEGENERATE_MARGINALS,
        )
    return None


def undefined_if_nan(value: float, units: Sequence[RatedRound]) -> Figure | None:
    """The ZERO_DENOMINATOR figure when ``value`` is not a number, else None."""
    if math.isfinite(value):
        return None
    fixture = fixture_involved(units)
    return Figure(
        AgreementStatus.UNDEFINED,
        len(units),
        fixture,
        undefined_reason=UndefinedReason.ZERO_DENOMINATOR,
    )


def modal_units(units: Sequence[RatedRound]) -> list[RatedRound]:
    """The units with the most common number of ratings (on a tie, the larger number)."""
    sizes = Counter(len(unit.ratings) for unit in units)
    if not sizes:
        return []
    modal = max(sizes, key=lambda size: (sizes[size], size))
    return [unit for unit in units if len(unit.ratings) == modal]


def fleiss_kappa_of(table: Counts) -> float:
    """Fleiss' kappa of a table of counts (rounds by categories, each round with the same
    number of ratings n): observed agreement per round, (sum of squared counts - n) / (n
    (n - 1)), averaged, against chance, the sum of squared category shares. NaN when chance
    agreement is 1 (the caller's UNDEFINED)."""
    counts = np.asarray(table, dtype=float)
    rounds = counts.shape[0]
    per_round = counts.sum(axis=1)[0]
    shares = counts.sum(axis=0) / (rounds * per_round)
    observed = ((counts * counts).sum(axis=1) - per_round) / (per_round * (per_round - 1))
    chance = float((shares * shares).sum())
    return float((observed.mean() - chance) / (1.0 - chance))


def fleiss_kappa(units: Sequence[RatedRound]) -> Figure:
    """Fleiss' kappa over the modal units; it has no interval."""
    chosen = modal_units(units)
    table, categories = value_counts(chosen)
    refused = refusal(chosen, len(categories))
    if refused is not None:
        return refused
    with np.errstate(divide="ignore", invalid="ignore"):
        value = fleiss_kappa_of(table)
    undefined = undefined_if_nan(value, chosen)
    if undefined is not None:
        return undefined
    fixture = fixture_involved(chosen)
    return Figure(AgreementStatus.COMPUTED, len(chosen), fixture, value=value)


def krippendorff_alpha(units: Sequence[RatedRound], resamples: int) -> Figure:
    """Nominal alpha (the ``krippendorff`` package) over every unit, with a bootstrap 95%
    percentile interval of ``resamples`` resamples (left out, the value kept, when any
    resample has no alpha: the data are too near one category for an interval)."""
    table, categories = value_counts(units)
    refused = refusal(units, len(categories))
    if refused is not None:
        return refused
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(krippendorff.alpha(value_counts=table, level_of_measurement="nominal"))
    undefined = undefined_if_nan(value, units)
    if undefined is not None:
        return undefined
    low, high = bootstrap_interval(table, resamples, data_seed(table, categories))
    fixture = fixture_involved(units)
    return Figure(
        AgreementStatus.COMPUTED, len(units), fixture, value=value, ci_lower=low, ci_upper=high
    )


def data_seed(table: Counts, categories: Sequence[str]) -> int:
    """A seed that is a function of the counts alone (and their category names)."""
    digest = hashlib.sha256()
    digest.update("\x00".join(categories).encode("utf-8"))
    digest.update(table.astype("<i8").tobytes())
    return int.from_bytes(digest.digest()[:8], "big")


def nominal_alpha(totals: Counts, within: NDArray[np.float64]) -> NDArray[np.float64]:
    """Nominal alpha of each row: ``totals`` the pairable values per category, ``within``
    the coincidences within a category (A). NaN where every value is in one category."""
    n = totals.sum(axis=1)
    spread = n * n - (totals * totals).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * (n - within) / spread
    return np.where(spread > 0, alpha, np.nan)


def coincidences_within(table: Counts) -> NDArray[np.float64]:
    """Each unit's coincidences within a category: Σ_c n_uc(n_uc - 1) / (m_u - 1)."""
    pairable = table.sum(axis=1)
    within: NDArray[np.float64] = (table * (table - 1.0)).sum(axis=1) / (pairable - 1.0)
    return within


def bootstrap_interval(
    table: Counts, resamples: int, seed: int
) -> tuple[float | None, float | None]:
    """The 2.5th and 97.5th percentiles of alpha over ``resamples`` resamples of the units
    (rows of ``table``, each with two or more values); (None, None) when any resample has
    no alpha.

    Units with the same counts are interchangeable, so a resample is drawn as how many
    units of each distinct row it holds (a multinomial over the rows' frequencies: the same
    distribution as drawing units one by one), which costs the number of distinct rows —
    a few dozen — instead of the number of units."""
    rng = np.random.default_rng(seed)
    units = table.shape[0]
    rows, frequency = np.unique(table, axis=0, return_counts=True)
    within = coincidences_within(rows)
    step = max(1, _STEP_CELLS // len(rows))
    alphas: list[NDArray[np.float64]] = []
    done = 0
    while done < resamples:
        count = min(step, resamples - done)
        weights = rng.multinomial(units, frequency / units, size=count).astype(np.float64)
        alphas.append(nominal_alpha(weights @ rows, weights @ within))
        done += count
    values = np.concatenate(alphas)
    if not np.isfinite(values).all():
        return None, None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)
