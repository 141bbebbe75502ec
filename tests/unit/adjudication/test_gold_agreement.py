"""Each reviewer against the gold labels: matching, Wilson's interval, the honesty rules."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from assay.services.adjudication.domain.agreement import (
    NOT_EVALUABLE,
    UNRESOLVED,
    AgreementStatus,
    category_of,
)
from assay.services.adjudication.domain.gold_agreement import (
    GoldAnswer,
    gold_category,
    reviewer_agreements,
    wilson_interval,
)
from assay.services.adjudication.domain.model import Basis, Outcome


class TestWilson:
    @pytest.mark.parametrize(
        ("successes", "trials", "low", "high"),
        [
            # Newcombe (1998), "Two-sided confidence intervals for the single proportion",
            # Statistics in Medicine 17: Table I, method 3 (score interval without correction).
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0000, 0.1611),
            (1, 29, 0.0061, 0.1718),
            (29, 29, 0.8830, 1.0000),
        ],
    )
    def test_newcombes_worked_examples(
        self, successes: int, trials: int, low: float, high: float
    ) -> None:
        """The published four-decimal limits, and statsmodels' Wilson interval exactly."""
        found = wilson_interval(successes, trials)
        assert found == pytest.approx((low, high), abs=5e-5)
        reference = proportion_confint(successes, trials, alpha=0.05, method="wilson")
        assert found == pytest.approx(reference, abs=1e-12)


class TestGoldCategory:
    @pytest.mark.parametrize(
        ("basis", "key", "expected"),
        [
            (Basis.UNANIMOUS_AGREEMENT, '"key"', '"key"'),
            (Basis.ADJUDICATOR_DECISION, "1e-07", "1e-7"),
            (Basis.UNRESOLVED, "", UNRESOLVED),
            (Basis.NOT_EVALUABLE, "", NOT_EVALUABLE),
        ],
    )
    def test_a_basis_is_the_answer_it_stands_for(
        self, basis: Basis, key: str, expected: str
    ) -> None:
        """A label is its JCS key; an unresolved or not-evaluable round is that answer."""
        assert gold_category(basis, key) == expected

    def test_an_unresolved_answer_matches_an_unresolved_round(self) -> None:
        """A reviewer who answered UNRESOLVED agrees with a round closed as UNRESOLVED."""
        assert category_of(Outcome.UNRESOLVED, "") == gold_category(Basis.UNRESOLVED, "")
        assert category_of(Outcome.NOT_EVALUABLE, "") != gold_category(Basis.UNRESOLVED, "")


def answers(reviewer: str, matches: int, misses: int, fixture: bool = False) -> list[GoldAnswer]:
    hits = [GoldAnswer(reviewer, '"key"', '"key"', fixture)] * matches
    return hits + [GoldAnswer(reviewer, '"none"', '"key"', fixture)] * misses


class TestReviewerAgreements:
    def test_each_reviewer_by_id_with_the_share_and_interval(self) -> None:
        """Twenty of twenty-five: 0.8 with Wilson's interval; reviewers sorted by id."""
        found = reviewer_agreements(answers("zoe", 20, 5) + answers("amy", 24, 0))
        assert [r.reviewer_id for r in found] == ["amy", "zoe"]
        zoe = found[1].gold_agreement
        assert (zoe.status, zoe.case_count, zoe.value) == (AgreementStatus.COMPUTED, 25, 0.8)
        assert (zoe.ci_lower, zoe.ci_upper) == pytest.approx(wilson_interval(20, 25))
        amy = found[0].gold_agreement
        assert amy.value == 1.0
        assert amy.ci_upper == 1.0
        assert amy.ci_lower is not None
        assert amy.ci_lower < 1.0

    def test_below_twenty_rounds_is_insufficient(self) -> None:
        """Nineteen frozen rounds, all matching: INSUFFICIENT, not 100%."""
        (only,) = reviewer_agreements(answers("bob", 19, 0))
        figure = only.gold_agreement
        assert (figure.status, figure.case_count) == (AgreementStatus.INSUFFICIENT, 19)
        assert (figure.value, figure.ci_lower, figure.ci_upper) == (None, None, None)

    def test_a_fixture_anywhere_behind_the_figure_flags_it(self) -> None:
        """One answer beside a fixture-made label flags that reviewer's figure, not others'."""
        found = reviewer_agreements(
            answers("ann", 20, 0) + answers("ann", 1, 0, fixture=True) + answers("cy", 20, 0)
        )
        assert [r.gold_agreement.fixture_reviewers_contributed for r in found] == [True, False]

    def test_no_answers_no_reviewers(self) -> None:
        """Without frozen rounds nobody is listed."""
        assert reviewer_agreements([]) == ()
