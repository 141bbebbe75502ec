"""Percent agreement: the published values, and its bootstrap interval."""

from __future__ import annotations

import numpy as np
import pytest

from assay.services.adjudication.domain.agreement import AgreementStatus
from assay.services.adjudication.domain.percent_agreement import (
    bootstrap_mean,
    pair_shares,
    percent_agreement,
)
from tests.unit.adjudication.test_agreement_breadth import KRIPPENDORFF_EXAMPLE, unit


class TestValue:
    def test_gwets_published_percent_agreement(self) -> None:
        """irrCAC's cac.raw4raters (its pairable units, twice over to reach twenty): 0.8181818."""
        result = percent_agreement([unit(*u) for u in KRIPPENDORFF_EXAMPLE] * 2, 100)
        assert result.status is AgreementStatus.COMPUTED
        assert result.case_count == 22
        assert result.value == pytest.approx(0.8181818, abs=1e-7)

    def test_two_reviews_a_round_is_the_share_of_rounds_agreeing(self) -> None:
        """With two reviews a round the figure is the plain share: 89 of 100 (irrCAC's
        cont3x3abstractors, percent agreement 0.89)."""
        units = [unit("a", "a")] * 89 + [unit("a", "b")] * 11
        assert percent_agreement(units, 100).value == pytest.approx(0.89)

    def test_each_round_counts_once_whatever_its_size(self) -> None:
        """A round of four with one dissent has 3 agreeing pairs of 6: one half, weighted
        like a round of two."""
        shares = pair_shares(np.array([[3.0, 1.0], [2.0, 0.0], [1.0, 1.0]]))
        assert shares.tolist() == [0.5, 1.0, 0.0]

    def test_insufficient_below_twenty_and_fixtures_flagged(self) -> None:
        """Nineteen rounds: no number; a fixture's review anywhere flags the figure."""
        few = percent_agreement([unit("a", "a")] * 19, 100)
        assert (few.status, few.value, few.ci_lower) == (AgreementStatus.INSUFFICIENT, None, None)
        units = [unit("a", "a")] * 19 + [unit("a", "b", fixture=True)]
        assert percent_agreement(units, 100).fixture_reviewers_contributed

    def test_all_agreeing_is_one_not_undefined(self) -> None:
        """One answer throughout is 100% agreement, with the interval a point."""
        result = percent_agreement([unit("a", "a", "a")] * 20, 100)
        assert (result.status, result.value) == (AgreementStatus.COMPUTED, 1.0)
        assert (result.ci_lower, result.ci_upper) == (1.0, 1.0)


class TestBootstrap:
    def test_the_same_corpus_gives_the_same_interval(self) -> None:
        """Seeded from the counts: two calls, one interval; it holds the value."""
        units = [unit("a", "a")] * 30 + [unit("a", "b")] * 10 + [unit("b", "b", "a")] * 5
        first = percent_agreement(units, 1000)
        again = percent_agreement(list(units), 1000)
        assert (first.ci_lower, first.ci_upper) == (again.ci_lower, again.ci_upper)
        assert first.ci_lower is not None
        assert first.ci_upper is not None
        assert first.value is not None
        assert first.ci_lower < first.value < first.ci_upper

    def test_matches_a_bootstrap_drawn_unit_by_unit(self) -> None:
        """Drawing how many of each distinct value a resample holds gives the interval that
        drawing units one at a time does (within the resampling noise)."""
        rng = np.random.default_rng(7)
        values = rng.choice([0.0, 1.0 / 3.0, 0.5, 1.0], size=200, p=[0.2, 0.1, 0.2, 0.5])
        low, high = bootstrap_mean(values, 20_000, seed=11)
        draws = np.random.default_rng(12).choice(values, size=(20_000, values.size)).mean(axis=1)
        naive_low, naive_high = np.percentile(draws, [2.5, 97.5])
        assert low == pytest.approx(naive_low, abs=0.01)
        assert high == pytest.approx(naive_high, abs=0.01)

    def test_more_rounds_narrow_the_interval(self) -> None:
        """Four times the rounds, about half the width."""
        base = [unit("a", "a")] * 15 + [unit("a", "b")] * 5
        narrow = percent_agreement(base * 4, 2000)
        wide = percent_agreement(base, 2000)
        widths = [(f.ci_upper or 0.0) - (f.ci_lower or 0.0) for f in (narrow, wide)]
        ratio = widths[0] / widths[1]
        assert 0.35 < ratio < 0.65
