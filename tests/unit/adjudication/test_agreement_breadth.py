"""Agreement beyond the pooled kappa: per pair, per category, Fleiss' kappa, Krippendorff's alpha.

Expected numbers come from published worked examples and from the textbook formulas
written out here by hand, never from the library the code under test calls.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

import krippendorff
import numpy as np
import pytest

from assay.errors import InvalidArgument
from assay.services.adjudication.domain import agreement_report, multirater
from assay.services.adjudication.domain.agreement import (
    AgreementStatus,
    RatedPair,
    RatedRound,
    Rating,
    UndefinedReason,
    cohens_kappa,
)


def unit(*answers: str, fixture: bool = False, raters: Sequence[str] = ()) -> RatedRound:
    names = raters or [f"r{i}" for i in range(len(answers))]
    return RatedRound(tuple(Rating(n, a, fixture) for n, a in zip(names, answers, strict=True)))


def from_counts(rows: Sequence[Sequence[int]]) -> list[RatedRound]:
    """Units whose ratings have the given counts per category c0, c1, …"""
    return [unit(*[f"c{c}" for c, count in enumerate(row) for _ in range(count)]) for row in rows]


def hand_fleiss(rows: Sequence[Sequence[int]]) -> float:
    """Fleiss (1971): P̄ the mean per-subject agreement, P̄e the sum of squared category shares."""
    n = sum(rows[0])
    subjects = len(rows)
    p_bar = sum((sum(x * x for x in row) - n) / (n * (n - 1)) for row in rows) / subjects
    shares = [sum(row[j] for row in rows) / (subjects * n) for j in range(len(rows[0]))]
    p_e = sum(p * p for p in shares)
    return (p_bar - p_e) / (1 - p_e)


def hand_alpha(units: Sequence[Sequence[str]]) -> float:
    """Krippendorff's nominal alpha from its coincidence matrix, pair by pair (Krippendorff
    2011, "Computing Krippendorff's alpha-reliability")."""
    coincidences: dict[tuple[str, str], float] = {}
    for values in units:
        m = len(values)
        for i, j in itertools.permutations(range(m), 2):
            key = (values[i], values[j])
            coincidences[key] = coincidences.get(key, 0.0) + 1 / (m - 1)
    totals: dict[str, float] = {}
    for (c, _), weight in coincidences.items():
        totals[c] = totals.get(c, 0.0) + weight
    n = sum(totals.values())
    observed = sum(w for (c, k), w in coincidences.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k) / (n - 1)
    return 1 - observed / expected


# The worked example of Fleiss' kappa on Wikipedia: 10 subjects, 14 raters, 5 categories,
# P̄ = 0.378, P̄e = 0.213, kappa = 0.210.
FLEISS_EXAMPLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Krippendorff (2011)'s nominal example: four observers, twelve units (unit 12 has one
# value and is not pairable), alpha = 0.743.
KRIPPENDORFF_EXAMPLE = [
    ["1", "1", "1"],
    ["2", "2", "3", "2"],
    ["3", "3", "3", "3"],
    ["3", "3", "3", "3"],
    ["2", "2", "2", "2"],
    ["1", "2", "3", "4"],
    ["4", "4", "4", "4"],
    ["1", "1", "2", "1"],
    ["2", "2", "2", "2"],
    ["5", "5", "5"],
    ["1", "1"],
]


class TestFleiss:
    def test_the_worked_example_twice_over(self) -> None:
        """The 10 subjects twice over (same kappa, and 20 reach the minimum) give 0.210."""
        rows = FLEISS_EXAMPLE * 2
        result = multirater.fleiss_kappa(from_counts(rows))
        assert result.status is AgreementStatus.COMPUTED
        assert result.case_count == 20
        assert result.value == pytest.approx(hand_fleiss(rows), abs=1e-12)
        assert result.value == pytest.approx(0.210, abs=5e-4)
        assert result.ci_lower is None
        assert result.ci_upper is None

    def test_only_the_most_common_number_of_reviews_enters(self) -> None:
        """Rounds of another size are left out; a tie goes to the larger size."""
        threes = [unit("a", "a", "b")] * 12 + [unit("b", "b", "b")] * 10
        twos = [unit("a", "b")] * 22
        result = multirater.fleiss_kappa(threes + twos)
        assert result.case_count == 22
        assert result.value == pytest.approx(hand_fleiss([[2, 1]] * 12 + [[0, 3]] * 10))

    def test_one_category_is_degenerate_and_few_rounds_insufficient(self) -> None:
        """All answers alike: UNDEFINED; 19 rounds: INSUFFICIENT with the count."""
        same = multirater.fleiss_kappa([unit("a", "a", "a")] * 25)
        assert same.status is AgreementStatus.UNDEFINED
        assert same.undefined_reason is UndefinedReason.DEGENERATE_MARGINALS
        assert same.value is None
        few = multirater.fleiss_kappa([unit("a", "b")] * 19)
        assert (few.status, few.case_count, few.value) == (AgreementStatus.INSUFFICIENT, 19, None)

    def test_a_nan_from_the_formula_is_undefined(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Whatever makes the formula answer NaN, no NaN is reported as a value."""
        monkeypatch.setattr(multirater, "fleiss_kappa_of", lambda *a, **k: math.nan)
        result = multirater.fleiss_kappa([unit("a", "b")] * 20)
        assert result.status is AgreementStatus.UNDEFINED
        assert result.undefined_reason is UndefinedReason.ZERO_DENOMINATOR


class TestKrippendorff:
    def test_published_example(self) -> None:
        """The closed form the bootstrap uses gives the published 0.743 (and the hand formula)."""
        table, _ = multirater.value_counts([unit(*u) for u in KRIPPENDORFF_EXAMPLE])
        closed = multirater.nominal_alpha(
            table.sum(axis=0, keepdims=True),
            multirater.coincidences_within(table).sum(keepdims=True),
        )[0]
        assert closed == pytest.approx(0.743, abs=5e-4)
        assert closed == pytest.approx(hand_alpha(KRIPPENDORFF_EXAMPLE), abs=1e-12)

    def test_value_and_interval_over_enough_rounds(self) -> None:
        """The example twice over: alpha by hand, an interval around it, fixtures flagged."""
        data = KRIPPENDORFF_EXAMPLE * 2
        units = [unit(*u) for u in data[:-1]] + [unit(*data[-1], fixture=True)]
        result = multirater.krippendorff_alpha(units, 1000)
        assert result.status is AgreementStatus.COMPUTED
        assert result.case_count == 22
        assert result.value == pytest.approx(hand_alpha(data), abs=1e-12)
        assert result.value is not None
        assert result.ci_lower is not None
        assert result.ci_upper is not None
        assert result.ci_lower < result.value < result.ci_upper
        assert result.fixture_reviewers_contributed

    @pytest.mark.parametrize("seed", range(20))
    def test_closed_form_equals_the_library(self, seed: int) -> None:
        """The bootstrap's vectorised alpha is the package's alpha on random tables."""
        rng = random.Random(seed)
        units = [
            unit(*[rng.choice("abcd"[: rng.randint(2, 4)]) for _ in range(rng.randint(2, 6))])
            for _ in range(rng.randint(5, 60))
        ]
        table, _ = multirater.value_counts(units)
        if table.shape[1] < 2:
            return
        closed = multirater.nominal_alpha(
            table.sum(axis=0, keepdims=True),
            multirater.coincidences_within(table).sum(keepdims=True),
        )[0]
        expected = krippendorff.alpha(value_counts=table, level_of_measurement="nominal")
        assert closed == pytest.approx(expected, abs=1e-12)

    def test_the_interval_is_deterministic_and_seeded_from_the_data(self) -> None:
        """The same rounds give the same interval; other rounds give another seed."""
        rng = random.Random(7)
        units = [unit(*[rng.choice("ab") for _ in range(3)]) for _ in range(60)]
        first = multirater.krippendorff_alpha(units, 2000)
        again = multirater.krippendorff_alpha(list(units), 2000)
        assert (first.ci_lower, first.ci_upper) == (again.ci_lower, again.ci_upper)
        table, names = multirater.value_counts(units)
        other, _ = multirater.value_counts(units[1:])
        assert multirater.data_seed(table, names) != multirater.data_seed(other, names)

    def test_no_interval_when_a_resample_can_have_no_alpha(self) -> None:
        """One dissenting round among 20: the value stands, an interval would be a guess."""
        units = [unit("a", "a")] * 19 + [unit("a", "b")]
        result = multirater.krippendorff_alpha(units, 500)
        assert result.status is AgreementStatus.COMPUTED
        assert result.value is not None
        assert result.ci_lower is None
        assert result.ci_upper is None

    def test_refusals(self) -> None:
        """19 rounds: INSUFFICIENT; one category: UNDEFINED, degenerate."""
        few = multirater.krippendorff_alpha([unit("a", "b")] * 19, 100)
        assert (few.status, few.value) == (AgreementStatus.INSUFFICIENT, None)
        same = multirater.krippendorff_alpha([unit("a", "a", "a")] * 30, 100)
        assert same.status is AgreementStatus.UNDEFINED
        assert same.undefined_reason is UndefinedReason.DEGENERATE_MARGINALS


class TestPairsAndCategories:
    def test_each_pair_over_the_rounds_both_reviewed(self) -> None:
        """ann-bob share 25 rounds, ann-cid 25, bob-cid 5 (INSUFFICIENT); pairs sorted by id."""
        rng = random.Random(3)
        units = []
        expected: dict[tuple[str, str], list[RatedPair]] = {}
        for i in range(25):
            raters = ["bob", "ann", "cid"] if i < 5 else ["bob", "ann"]
            answers = [rng.choice("xy") for _ in raters]
            units.append(unit(*answers, raters=raters))
            given = dict(zip(raters, answers, strict=True))
            for a, b in itertools.combinations(sorted(raters), 2):
                expected.setdefault((a, b), []).append(RatedPair(given[a], given[b], False))
        units += [unit("x", "y", raters=["ann", "cid"])] * 20
        expected[("ann", "cid")] += [RatedPair("x", "y", False)] * 20
        found = agreement_report.pair_kappas(units)
        assert [(p.reviewer_a, p.reviewer_b) for p in found] == sorted(expected)
        for pair in found:
            want = cohens_kappa(expected[(pair.reviewer_a, pair.reviewer_b)])
            assert pair.kappa.status is want.status
            assert pair.kappa.case_count == want.case_count
            assert pair.kappa.value == want.kappa
        statuses = {(p.reviewer_a, p.reviewer_b): p.kappa.status for p in found}
        assert statuses[("bob", "cid")] is AgreementStatus.INSUFFICIENT
        assert statuses[("ann", "bob")] is AgreementStatus.COMPUTED

    def test_one_category_against_the_rest_by_hand(self) -> None:
        """Category y of a 3-category table: its 2×2 table and kappa worked out by hand."""
        answers = (
            ([("y", "y")] * 10 + [("n", "n")] * 6 + [("u", "u")] * 2 + [("y", "n")] * 3)
            + [("n", "y")] * 1
            + [("u", "y")] * 2
            + [("n", "u")] * 1
        )
        pairs = [RatedPair(a, b, False) for a, b in answers]
        found = {c.category: c.kappa for c in agreement_report.category_kappas(pairs)}
        assert sorted(found) == ["n", "u", "y"]
        # y vs rest: both y 10, first only 3, second only 3, neither 9; n = 25.
        po = (10 + 9) / 25
        pe = (13 / 25) * (13 / 25) + (12 / 25) * (12 / 25)
        assert found["y"].value == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
        assert found["y"].ci_lower is not None

    def test_a_category_everyone_always_uses_is_degenerate(self) -> None:
        """One category only: its one-against-the-rest kappa is UNDEFINED."""
        pairs = [RatedPair("y", "y", False)] * 20
        (only,) = agreement_report.category_kappas(pairs)
        assert only.kappa.status is AgreementStatus.UNDEFINED


class TestReportAndResamples:
    def test_report_uses_first_two_reviews_for_the_pooled_kappa(self) -> None:
        """A third review changes Fleiss and Krippendorff, not the pooled kappa."""
        two = [unit("a", "a")] * 12 + [unit("a", "b")] * 8
        three = [unit("a", "a", "b")] * 12 + [unit("a", "b", "b")] * 8
        assert (
            agreement_report.report(two, 100).pooled.kappa
            == agreement_report.report(three, 100).pooled.kappa
        )

    @pytest.mark.parametrize(("given", "used"), [(0, 1000), (1, 1), (10_000, 10_000)])
    def test_resample_count(self, given: int, used: int) -> None:
        """0 means 1,000; up to 10,000 as asked."""
        assert agreement_report.resample_count(given) == used

    @pytest.mark.parametrize("given", [-1, 10_001])
    def test_bad_resample_count_names_the_field(self, given: int) -> None:
        """Negative or over 10,000: INVALID_ARGUMENT naming bootstrap_resamples."""
        with pytest.raises(InvalidArgument) as raised:
            agreement_report.resample_count(given)
        assert [v.field for v in raised.value.violations] == ["bootstrap_resamples"]


def test_value_counts_columns_are_sorted_categories() -> None:
    """The table's columns are the categories in sorted order, rows the units in order."""
    table, names = multirater.value_counts([unit("b", "a"), unit("a", "a", "c")])
    assert names == ["a", "b", "c"]
    assert np.array_equal(table, [[1, 1, 0], [2, 0, 1]])
