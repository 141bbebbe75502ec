"""How far one case round's reviews agree: what an operator sees beside the reviews on GetCase.

The corpus figures say how reviewers agree in general; an adjudicator deciding one round
wants to know whether it was one dissent among five or an even split. Only final reviews
count (each reviewer's latest revision, withdrawals left out: ``model.final_reviews``), and
two answers agree when they share ``state.answer_key`` — the same rule the round's state is
derived from, so "agreed" here and AGREED there cannot drift apart. Rounds with fewer than
two final reviews have no agreement to show.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from assay.services.adjudication.domain.model import Review, final_reviews
from assay.services.adjudication.domain.state import answer_key


@dataclass(frozen=True)
class RoundAgreement:
    """``agreeing_count``: reviews giving the most common answer; ``pairwise_agreement``:
    the share of unordered pairs of reviews that agree."""

    round: int
    review_count: int
    agreeing_count: int
    agreeing_share: float
    pairwise_agreement: float


def round_agreement(round_: int, reviews: Sequence[Review]) -> RoundAgreement | None:
    """The agreement of ``reviews`` (one round's final reviews); None below two."""
    count = len(reviews)
    if count < 2:
        return None
    groups = Counter(answer_key(r) for r in reviews).values()
    agreeing_pairs = sum(size * (size - 1) for size in groups)
    largest = max(groups)
    return RoundAgreement(
        round=round_,
        review_count=count,
        agreeing_count=largest,
        agreeing_share=largest / count,
        pairwise_agreement=agreeing_pairs / (count * (count - 1)),
    )


def round_agreements(records: Sequence[Review]) -> tuple[RoundAgreement, ...]:
    """Each round of ``records`` (review records in the order stored, revisions and
    withdrawals included) with two or more final reviews, by round."""
    by_round: defaultdict[int, list[Review]] = defaultdict(list)
    for record in records:
        by_round[record.round].append(record)
    found = (
        round_agreement(round_, final_reviews(tuple(rows)))
        for round_, rows in sorted(by_round.items())
    )
    return tuple(a for a in found if a is not None)
