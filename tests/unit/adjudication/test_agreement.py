"""Cohen's kappa: honest refusals, and numbers checked against statsmodels."""

from __future__ import annotations

import random

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from assay.services.adjudication.domain import agreement
from assay.services.adjudication.domain.agreement import AgreementStatus, RatedPair, UndefinedReason


def pairs(*answers: tuple[str, str], fixture: bool = False) -> list[RatedPair]:
    return [RatedPair(a, b, fixture) for a, b in answers]


class TestRefusals:
    def test_fewer_than_twenty_cases_is_insufficient_with_count(self) -> None:
        """19 double-reviewed rounds give no number, only the count."""
        result = agreement.cohens_kappa(pairs(*[("a", "b")] * 19))
        assert result.status is AgreementStatus.INSUFFICIENT
        assert result.case_count == 19
        assert result.kappa is None

    def test_one_category_is_degenerate(self) -> None:
        """Everyone always says the same thing: kappa is undefined, not 1."""
        result = agreement.cohens_kappa(pairs(*[("a", "a")] * 25))
        assert result.status is AgreementStatus.UNDEFINED
        assert result.undefined_reason is UndefinedReason.DEGENERATE_MARGINALS
        assert result.kappa is None

    def test_fixture_flag(self) -> None:
        """Any fixture reviewer in the pairs is reported."""
        data = pairs(*[("a", "b")] * 10) + pairs(("a", "a"), fixture=True)
        assert agreement.cohens_kappa(data).fixture_reviewers_contributed
        assert not agreement.cohens_kappa(pairs(("a", "a"))).fixture_reviewers_contributed


class TestAgainstStatsmodels:
    @pytest.mark.parametrize("seed", range(40))
    def test_random_tables_match(self, seed: int) -> None:
        """Kappa, its asymptotic SE and 95% interval equal statsmodels' on random data."""
        rng = random.Random(seed)
        categories = [f"c{i}" for i in range(rng.randint(2, 5))]
        n = rng.randint(20, 200)
        bias = rng.random()
        data = []
        for _ in range(n):
            first = rng.choice(categories)
            second = first if rng.random() < bias else rng.choice(categories)
            data.append(RatedPair(first, second, False))
        result = agreement.cohens_kappa(data)
        used = sorted({p.first for p in data} | {p.second for p in data})
        table = np.zeros((len(used), len(used)))
        for p in data:
            table[used.index(p.first), used.index(p.second)] += 1
        expected = sm_kappa(table)
        if result.status is AgreementStatus.UNDEFINED:
            # Only a degenerate draw may be undefined: one category used by both raters.
            assert len(used) == 1
            return
        assert result.status is AgreementStatus.COMPUTED
        assert result.kappa == pytest.approx(expected.kappa, abs=1e-12)
        assert result.standard_error == pytest.approx(expected.std_kappa, abs=1e-12)
        assert result.ci_lower == pytest.approx(expected.kappa_low, abs=1e-9)
        assert result.ci_upper == pytest.approx(expected.kappa_upp, abs=1e-9)

    def test_textbook_value(self) -> None:
        """A hand-checkable table: po 0.7, pe 0.5 → kappa 0.4."""
        data = pairs(
            *([("y", "y")] * 20 + [("n", "n")] * 15 + [("y", "n")] * 5 + [("n", "y")] * 10)
        )
        result = agreement.cohens_kappa(data)
        assert result.observed_agreement == pytest.approx(0.7)
        assert result.expected_agreement == pytest.approx(0.5)
        assert result.kappa == pytest.approx(0.4)
