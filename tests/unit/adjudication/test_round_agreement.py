"""One round's agreement, as GetCase shows it: counted over final reviews only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assay.services.adjudication.domain.model import Outcome, Review
from assay.services.adjudication.domain.round_agreement import (
    RoundAgreement,
    round_agreement,
    round_agreements,
)
from tests.unit.adjudication.factories import review


def answers(*labels: str, round_: int = 1) -> list[Review]:
    return [
        replace(review(f"r{i}", label, round_=round_), review_id=f"rev-{i}-{round_}")
        for i, label in enumerate(labels)
    ]


class TestRoundAgreement:
    @pytest.mark.parametrize(
        ("labels", "largest", "pairwise"),
        [
            (("key", "key"), 2, 1.0),
            (("key", "none"), 1, 0.0),
            # One dissent among five: 6 of 10 pairs agree.
            (("key", "key", "key", "key", "none"), 4, 6 / 10),
            # An even split of four: 2 of 6 pairs agree.
            (("key", "key", "none", "none"), 2, 2 / 6),
            (("a", "b", "c"), 1, 0.0),
        ],
    )
    def test_the_largest_group_and_the_agreeing_pairs(
        self, labels: tuple[str, ...], largest: int, pairwise: float
    ) -> None:
        """The most common answer's count and share, and the share of agreeing pairs."""
        found = round_agreement(3, answers(*labels))
        assert found is not None
        assert (found.round, found.review_count) == (3, len(labels))
        assert (found.agreeing_count, found.agreeing_share) == (largest, largest / len(labels))
        assert found.pairwise_agreement == pytest.approx(pairwise)

    def test_outcome_and_label_must_both_match(self) -> None:
        """Two declines agree with each other, not with a label; unresolved is its own answer."""
        declines = [
            review("a", outcome=Outcome.NOT_EVALUABLE),
            review("b", outcome=Outcome.NOT_EVALUABLE),
            review("c", outcome=Outcome.UNRESOLVED),
            review("d", "key"),
        ]
        found = round_agreement(1, declines)
        assert found is not None
        assert found.agreeing_count == 2
        assert found.pairwise_agreement == pytest.approx(1 / 6)

    def test_labels_are_compared_in_jcs_form(self) -> None:
        """A label stored before JCS (``1e-07``) agrees with the same number after (``1e-7``)."""
        old = replace(review("a", 1e-7), label_key="1e-07")
        found = round_agreement(1, [old, review("b", 1e-7)])
        assert found is not None
        assert found.agreeing_count == 2

    def test_fewer_than_two_reviews_have_no_agreement(self) -> None:
        """A lone review, or none, shows nothing."""
        assert round_agreement(1, answers("key")) is None
        assert round_agreement(1, []) is None


class TestRoundAgreements:
    def test_each_round_with_two_or_more_by_round(self) -> None:
        """Reviews of several rounds in one list: a row per round that has two or more."""
        records = answers("key", "none", round_=1) + answers("key", round_=2)
        records += answers("none", "none", "none", round_=3)
        found = round_agreements(records)
        assert [(a.round, a.review_count, a.agreeing_count) for a in found] == [
            (1, 2, 1),
            (3, 3, 3),
        ]

    def test_only_final_reviews_count(self) -> None:
        """An amended review counts as its latest revision; a withdrawn one not at all."""
        first, second, third = answers("key", "none", "none")
        amended = replace(
            first,
            review_id="rev-0-amended",
            label="none",
            label_key='"none"',
            supersedes=first.review_id,
        )
        withdrawn = replace(
            third,
            review_id="rev-2-withdrawn",
            outcome=Outcome.WITHDRAWN,
            label=None,
            label_key="",
            supersedes=third.review_id,
        )
        (found,) = round_agreements([first, second, third, amended, withdrawn])
        assert (found.review_count, found.agreeing_count, found.pairwise_agreement) == (2, 2, 1.0)
        assert round_agreements([first, second, withdrawn]) == (RoundAgreement(1, 2, 1, 0.5, 0.0),)
