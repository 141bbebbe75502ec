"""Gwet's AC1 and AC2: chance-corrected agreement that stays meaningful when one answer dominates.

Kappa's chance agreement grows with the share of the commonest answer, so a corpus where
nearly every case gets one label shows high raw agreement and a low or even negative kappa
(the "kappa paradox"). Gwet's chance agreement is the probability of agreeing by guessing
on a hard case, Σ π_k(1 − π_k)/(q − 1), which stays small then. This is the multi-rater form
(Gwet 2008; Handbook of Inter-Rater Reliability, 2014): units may have different numbers of
ratings, π_k is the mean over units of each unit's share of category k, and the observed
agreement is the mean over units with two or more ratings. The variance is Gwet's
linearisation over units, the 95% interval a t interval on n − 1 degrees of freedom with its
upper end capped at 1, as in Gwet's own ``irrCAC``. AC2 is the same with weights: quadratic,
on the numeric values of the labels, so it exists only when every answer is a number.
SciPy (statsmodels' dependency) gives the t quantile, imported at the first interval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from assay.services.adjudication.domain.agreement import (
    MIN_KAPPA_CASES,
    AgreementStatus,
    Figure,
    RatedRound,
    UndefinedReason,
)
from assay.services.adjudication.domain.multirater import (
    Counts,
    fixture_involved,
    refusal,
    undefined_if_nan,
    value_counts,
)


@dataclass(frozen=True)
class Estimate:
    """One coefficient with what it is made of: observed and chance agreement, standard error."""

    value: float
    observed: float
    chance: float
    standard_error: float


def identity_weights(categories: int) -> NDArray[np.float64]:
    """Full credit for the same category, none otherwise: AC1."""
    return np.eye(categories)


def quadratic_weights(values: Sequence[float]) -> NDArray[np.float64]:
    """1 − ((x_k − x_l)/(max − min))²: partial credit for near answers (AC2)."""
    x = np.asarray(values, dtype=np.float64)
    spread = float(x.max() - x.min())
    weights: NDArray[np.float64] = 1.0 - ((x[:, None] - x[None, :]) / spread) ** 2
    return weights


def estimate(table: Counts, weights: NDArray[np.float64]) -> Estimate:
    """Gwet's coefficient of ``table`` (units × categories counts; every unit rated at least
    once, two or more categories) under ``weights`` (categories × categories, symmetric).

    NaN when chance agreement is 1 (the caller reports the figure UNDEFINED)."""
    n, q = table.shape
    raters = table.sum(axis=1)
    paired = raters >= 2
    paired_count = int(paired.sum())
    credited = table @ weights.T  # r*_ik: ratings of unit i that earn credit against k
    agreeing = (table * (credited - 1.0)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_unit = np.where(paired, agreeing / (raters * (raters - 1.0)), 0.0)
    observed = float(per_unit[paired].sum() / paired_count)
    shares = (table / raters[:, None]).mean(axis=0)
    weight_sum = float(weights.sum())
    chance = weight_sum * float((shares * (1.0 - shares)).sum()) / (q * (q - 1))
    if abs(1.0 - chance) < 1e-12:
        return Estimate(math.nan, observed, chance, math.nan)
    value = (observed - chance) / (1.0 - chance)
    # Each unit's contribution, linearised (Gwet 2008, eq. 27-28 in the multi-rater form).
    unit_value = (n / paired_count) * (per_unit - chance * paired) / (1.0 - chance)
    unit_chance = weight_sum / (q * (q - 1)) * (table @ (1.0 - shares)) / raters
    linear = unit_value - 2.0 * (1.0 - value) * (unit_chance - chance) / (1.0 - chance)
    variance = float(((linear - value) ** 2).sum()) / (n * (n - 1))
    return Estimate(value, observed, chance, math.sqrt(max(variance, 0.0)))


def t_quantile(degrees: int) -> float:
    """The 97.5th percentile of Student's t on ``degrees`` degrees of freedom."""
    from scipy.special import stdtrit  # type: ignore[import-untyped]

    return float(stdtrit(degrees, 0.975))


def interval(found: Estimate, units: int) -> tuple[float, float]:
    """The 95% t interval over ``units`` units, its upper end capped at 1."""
    half = t_quantile(units - 1) * found.standard_error
    return found.value - half, min(1.0, found.value + half)


def numeric_values(categories: Sequence[str]) -> list[float] | None:
    """Each category's number when every one is a numeric label (a JSON number), else None."""
    values: list[float] = []
    for category in categories:
        try:
            value = json.loads(category)
        except ValueError:
            return None  # "unresolved" or "not evaluable": no place on a scale
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        values.append(float(value))
    return values


def _figure(units: Sequence[RatedRound], table: Counts, weights: NDArray[np.float64]) -> Figure:
    found = estimate(table, weights)
    undefined = undefined_if_nan(found.value, units)
    if undefined is not None:
        return undefined
    low, high = interval(found, len(units))
    return Figure(
        AgreementStatus.COMPUTED,
        len(units),
        fixture_involved(units),
        value=found.value,
        ci_lower=low,
        ci_upper=high,
    )


def gwet_ac1(units: Sequence[RatedRound]) -> Figure:
    """Nominal AC1 over every unit (case round with two or more reviews)."""
    table, categories = value_counts(units)
    refused = refusal(units, len(categories))
    if refused is not None:
        return refused
    return _figure(units, table, identity_weights(len(categories)))


def gwet_ac2(units: Sequence[RatedRound]) -> Figure:
    """AC2 with quadratic weights over every unit, when every answer is a numeric label;
    UNDEFINED (LABELS_NOT_ORDERED) otherwise."""
    table, categories = value_counts(units)
    if len(units) < MIN_KAPPA_CASES:
        return Figure(AgreementStatus.INSUFFICIENT, len(units), fixture_involved(units))
    values = numeric_values(categories)
    if values is None:
        return Figure(
            AgreementStatus.UNDEFINED,
            len(units),
            fixture_involved(units),
            undefined_reason=UndefinedReason.LABELS_NOT_ORDERED,
        )
    refused = refusal(units, len(categories))
    if refused is not None:
        return refused
    return _figure(units, table, quadratic_weights(values))
