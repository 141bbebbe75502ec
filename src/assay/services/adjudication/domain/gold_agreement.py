"""Each reviewer against the gold labels: how often their final answer was the frozen one.

Agreement between reviewers says whether people read cases alike; this says whether one
person's answers hold up once a round is decided. A round counts when its case's latest
gold-label revision was frozen from it; the reviewer's answer matches when it is the
label (compared in JCS form), or is UNRESOLVED / NOT_EVALUABLE and the round was closed
on that basis. The share has a Wilson score 95% interval, which stays inside [0, 1] and
behaves at shares of 0 and 1 where the normal interval collapses. Below the minimum of
rounds it is INSUFFICIENT, never a number; fixture reviewers are flagged, and so is a gold
label a fixture helped make. A reviewer's own review often helped decide the label (a
unanimous round always matches), so the figure is an upper bound on independent accuracy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from assay.services.adjudication.domain.agreement import (
    MIN_KAPPA_CASES,
    NOT_EVALUABLE,
    UNRESOLVED,
    Z_975,
    AgreementStatus,
    Figure,
    category_of,
)
from assay.services.adjudication.domain.model import Basis, Outcome


@dataclass(frozen=True)
class GoldAnswer:
    """One reviewer's final answer in a frozen round, beside the round's gold label, both as
    agreement categories; ``fixture`` when the reviewer or the label's making involved one."""

    reviewer_id: str
    answer: str
    gold: str
    fixture: bool


@dataclass(frozen=True)
class ReviewerFigure:
    reviewer_id: str
    gold_agreement: Figure


def gold_category(basis: Basis, label_key: str) -> str:
    """The category a gold label stands for: its label, or the basis it was closed on."""
    if basis.has_label:
        return category_of(Outcome.LABEL, label_key)
    return UNRESOLVED if basis is Basis.UNRESOLVED else NOT_EVALUABLE


def wilson_interval(successes: int, trials: int, z: float = Z_975) -> tuple[float, float]:
    """Wilson's score interval for a proportion (Wilson 1927; Newcombe 1998, method 3)."""
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def gold_figure(answers: list[GoldAnswer]) -> Figure:
    """The share of ``answers`` (one reviewer's) that match their gold label."""
    fixture = any(a.fixture for a in answers)
    trials = len(answers)
    if trials < MIN_KAPPA_CASES:
        return Figure(AgreementStatus.INSUFFICIENT, trials, fixture)
    matches = sum(a.answer == a.gold for a in answers)
    low, high = wilson_interval(matches, trials)
    return Figure(
        AgreementStatus.COMPUTED,
        trials,
        fixture,
        value=matches / trials,
        ci_lower=low,
        ci_upper=high,
    )


def reviewer_agreements(answers: Iterable[GoldAnswer]) -> tuple[ReviewerFigure, ...]:
    """Every reviewer with a final answer in a frozen round, by id."""
    by_reviewer: defaultdict[str, list[GoldAnswer]] = defaultdict(list)
    for answer in answers:
        by_reviewer[answer.reviewer_id].append(answer)
    return tuple(
        ReviewerFigure(reviewer, gold_figure(found))
        for reviewer, found in sorted(by_reviewer.items())
    )
