"""Gwet's AC1 and AC2 against Gwet's own worked examples, and their honesty rules.

The expected numbers are the published outputs of Gwet's ``irrCAC`` (the examples of its
README and weighting vignette, from the Handbook of Inter-Rater Reliability, 4th ed.), not
values this code produced.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.services.adjudication.domain import gwet
from assay.services.adjudication.domain.agreement import (
    AgreementStatus,
    UndefinedReason,
    cohens_kappa,
)
from tests.unit.adjudication.test_agreement_breadth import KRIPPENDORFF_EXAMPLE, unit

# irrCAC's cac.raw4raters: 4 raters, 12 subjects, categories 1-5, missing ratings; subject 12
# has a single rating (it enters the category shares, not the observed agreement).
RAW_4_RATERS = [*KRIPPENDORFF_EXAMPLE, ["3"]]

# irrCAC's distrib.6raters: 15 patients, 6 psychiatrists, 5 diagnoses, as counts.
DISTRIB_6_RATERS = [
    [0, 0, 0, 6, 0],
    [0, 3, 0, 0, 3],
    [0, 1, 4, 0, 1],
    [0, 0, 0, 0, 6],
    [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0],
    [0, 0, 4, 0, 2],
    [2, 0, 3, 1, 0],
    [2, 0, 0, 4, 0],
    [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0],
    [1, 1, 0, 4, 0],
    [0, 3, 3, 0, 0],
    [1, 0, 0, 5, 0],
    [0, 2, 0, 3, 1],
]

# irrCAC's cont3x3abstractors: two abstractors, 100 pregnancies, 3 categories (rows: the
# first abstractor, columns: the second).
ABSTRACTORS = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]


def counts(units: list[list[str]], categories: int = 5) -> np.ndarray:
    table = np.zeros((len(units), categories))
    for row, values in enumerate(units):
        for value in values:
            table[row, int(value) - 1] += 1
    return table


class TestWorkedExamples:
    def test_ac1_of_four_raters_with_missing_ratings(self) -> None:
        """cac.raw4raters: pa 0.8181818, pe 0.1903212, AC1 0.77544, SE 0.14295, CI (0.461, 1)."""
        found = gwet.estimate(counts(RAW_4_RATERS), gwet.identity_weights(5))
        assert found.observed == pytest.approx(0.8181818, abs=1e-7)
        assert found.chance == pytest.approx(0.1903212, abs=1e-7)
        assert found.value == pytest.approx(0.77544, abs=1e-5)
        assert found.standard_error == pytest.approx(0.14295, abs=1e-5)
        low, high = gwet.interval(found, 12)
        assert (round(low, 3), high) == (0.461, 1.0)

    def test_ac2_with_quadratic_weights(self) -> None:
        """cac.raw4raters, quadratic weights: pa 0.975, pe 0.714, AC2 0.914, SE 0.104,
        CI (0.685, 1)."""
        found = gwet.estimate(counts(RAW_4_RATERS), gwet.quadratic_weights([1, 2, 3, 4, 5]))
        assert round(found.observed, 3) == 0.975
        assert round(found.chance, 3) == 0.714
        assert round(found.value, 3) == 0.914
        assert round(found.standard_error, 3) == 0.104
        low, high = gwet.interval(found, 12)
        assert (round(low, 3), high) == (0.685, 1.0)

    def test_ac1_of_a_distribution_of_six_raters(self) -> None:
        """distrib.6raters: AC1 0.4448007, SE 0.08418757, CI (0.264, 0.625), pa 0.5511111,
        pe 0.1914815 (an interval below 1: the t quantile on 14 degrees of freedom)."""
        found = gwet.estimate(np.array(DISTRIB_6_RATERS, dtype=float), gwet.identity_weights(5))
        assert found.value == pytest.approx(0.4448007, abs=1e-7)
        assert found.standard_error == pytest.approx(0.08418757, abs=1e-8)
        assert found.observed == pytest.approx(0.5511111, abs=1e-7)
        assert found.chance == pytest.approx(0.1914815, abs=1e-7)
        low, high = gwet.interval(found, 15)
        assert (round(low, 3), round(high, 3)) == (0.264, 0.625)

    def test_two_raters_from_a_contingency_table(self) -> None:
        """cont3x3abstractors as 100 two-review rounds: AC1 0.8493305, as the table form."""
        rows = [
            [1.0 * (c == i) + 1.0 * (c == j) for c in range(3)]
            for i, row in enumerate(ABSTRACTORS)
            for j, count in enumerate(row)
            for _ in range(count)
        ]
        found = gwet.estimate(np.array(rows), gwet.identity_weights(3))
        assert found.value == pytest.approx(0.8493305, abs=1e-7)
        assert found.observed == pytest.approx(0.89)


class TestFigures:
    def test_ac1_of_rounds_is_the_estimate_with_its_interval(self) -> None:
        """Twenty rounds or more: COMPUTED, the estimate's value and t interval, and
        fixtures flagged."""
        units = [unit(*u) for u in KRIPPENDORFF_EXAMPLE] * 2
        units[0] = unit("1", "1", "1", fixture=True)
        result = gwet.gwet_ac1(units)
        table = counts([list(u) for u in KRIPPENDORFF_EXAMPLE] * 2)
        expected = gwet.estimate(table, gwet.identity_weights(5))
        assert result.status is AgreementStatus.COMPUTED
        assert result.case_count == 22
        assert result.value == pytest.approx(expected.value)
        assert (result.ci_lower, result.ci_upper) == pytest.approx(gwet.interval(expected, 22))
        assert result.fixture_reviewers_contributed

    def test_ac1_stays_high_where_kappa_collapses(self) -> None:
        """Agreement on 90 of 100 rounds with 95% of answers one label: kappa's chance
        agreement is 0.905 and kappa −0.053; Gwet's is 2·0.95·0.05 = 0.095 and AC1
        (0.9 − 0.095)/(1 − 0.095) (the kappa paradox Gwet's coefficient answers)."""
        units = [unit('"y"', '"y"')] * 90 + [unit('"y"', '"n"')] * 5 + [unit('"n"', '"y"')] * 5
        kappa = cohens_kappa([u.first_pair() for u in units]).kappa
        assert kappa == pytest.approx((0.9 - 0.905) / (1 - 0.905))
        assert gwet.gwet_ac1(units).value == pytest.approx((0.9 - 0.095) / (1 - 0.095))

    def test_insufficient_and_degenerate(self) -> None:
        """Below twenty rounds: INSUFFICIENT; one category throughout: UNDEFINED."""
        few = gwet.gwet_ac1([unit("a", "b")] * 19)
        assert (few.status, few.case_count, few.value) == (AgreementStatus.INSUFFICIENT, 19, None)
        same = gwet.gwet_ac1([unit('"a"', '"a"')] * 20)
        assert same.status is AgreementStatus.UNDEFINED
        assert same.undefined_reason is UndefinedReason.DEGENERATE_MARGINALS
        assert same.value is None

    def test_ac2_needs_every_answer_a_number(self) -> None:
        """A string label or an unresolved answer among numbers: UNDEFINED, LABELS_NOT_ORDERED."""
        numbers = [unit("1", "2"), unit("3", "3")] * 10
        for stray in (unit('"1"', "1"), unit("unresolved", "2"), unit("true", "1")):
            result = gwet.gwet_ac2([*numbers, stray])
            assert result.status is AgreementStatus.UNDEFINED
            assert result.undefined_reason is UndefinedReason.LABELS_NOT_ORDERED
            assert result.value is None
        assert gwet.gwet_ac2(numbers[:19]).status is AgreementStatus.INSUFFICIENT

    def test_ac2_of_numeric_labels(self) -> None:
        """Numeric labels: quadratic weights on their values, whatever order their keys sort
        in (``10`` before ``2`` as text)."""
        units = [unit("2", "10"), unit("10", "10"), unit("2", "2"), unit("6", "2")] * 5
        result = gwet.gwet_ac2(units)
        table = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 1.0]] * 5)
        # Columns in value order (2, 10, 6) with their weights computed on those values.
        expected = gwet.estimate(table, gwet.quadratic_weights([2, 10, 6]))
        assert result.status is AgreementStatus.COMPUTED
        assert result.value == pytest.approx(expected.value)

    def test_ac2_credits_a_near_miss_more_than_a_far_one(self) -> None:
        """Rounds split 1 against 2 score higher than rounds split 1 against 9, though
        AC1 (nominal) cannot tell them apart."""
        rest = [unit("1", "1"), unit("9", "9"), unit("2", "2")] * 5
        near = gwet.gwet_ac2([unit("1", "2")] * 5 + rest)
        far = gwet.gwet_ac2([unit("1", "9")] * 5 + rest)
        assert near.value is not None
        assert far.value is not None
        assert near.value > far.value
        nominal = gwet.gwet_ac1([unit("1", "2")] * 5 + rest).value
        assert nominal == pytest.approx(gwet.gwet_ac1([unit("1", "9")] * 5 + rest).value)

    def test_a_chance_agreement_of_one_is_undefined(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Weights that credit every pair make chance agreement 1: the estimate is NaN, and
        the figure of an estimate without a value reads UNDEFINED, never NaN."""
        found = gwet.estimate(np.array([[1.0, 1.0]] * 4), np.ones((2, 2)))
        assert math.isnan(found.value)
        monkeypatch.setattr(gwet, "estimate", lambda *a: found)
        result = gwet.gwet_ac1([unit("a", "b")] * 20)
        assert result.status is AgreementStatus.UNDEFINED
        assert result.undefined_reason is UndefinedReason.ZERO_DENOMINATOR
        assert result.value is None


class TestNumericValues:
    @pytest.mark.parametrize(
        ("categories", "expected"),
        [
            (["1", "2.5", "-3", "1e-7"], [1.0, 2.5, -3.0, 1e-7]),
            (["1", '"2"'], None),
            (["1", "unresolved"], None),
            (["1", "not evaluable"], None),
            (["false", "1"], None),
            (["null"], None),
            (['{"a":1}'], None),
        ],
    )
    def test_numbers_only(self, categories: list[str], expected: list[float] | None) -> None:
        """Only JSON numbers have a place on a scale; booleans are not numbers here."""
        assert gwet.numeric_values(categories) == expected
