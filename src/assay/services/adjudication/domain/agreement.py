"""Cohen's kappa between the first and second review of each double-reviewed case round.

An agreement figure is a claim about people, so this module refuses to invent
one: below ``MIN_KAPPA_CASES`` rounds it answers INSUFFICIENT (with the
count); when kappa has no value — every answer in one category, or chance
agreement of exactly 1 — it answers UNDEFINED with the reason. It also says
whether any fixture reviewer contributed, in which case the number only
demonstrates the mechanism. The standard error is the large-sample one of
Fleiss, Cohen and Everitt (1969), the same as ``statsmodels``' ``std_kappa``,
and the interval is kappa ± z(0.975)·SE.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from assay.services.adjudication.domain.digests import same_label_key
from assay.services.adjudication.domain.model import Outcome, Review

MIN_KAPPA_CASES = 20
Z_975 = 1.959963984540054
_EPS = 1e-12


class AgreementStatus(Enum):
    COMPUTED = "COMPUTED"
    INSUFFICIENT = "INSUFFICIENT"
    UNDEFINED = "UNDEFINED"


class UndefinedReason(Enum):
    DEGENERATE_MARGINALS = "DEGENERATE_MARGINALS"
    ZERO_DENOMINATOR = "ZERO_DENOMINATOR"
    # Gwet's AC2 weighs answers by their distance, so it needs every answer a number.
    LABELS_NOT_ORDERED = "LABELS_NOT_ORDERED"


@dataclass(frozen=True)
class RatedPair:
    """One double-reviewed case round: the two answers and whether a fixture gave either."""

    first: str
    second: str
    fixture_involved: bool


@dataclass(frozen=True)
class Rating:
    """One review as agreement sees it: who gave it, its category, whether a fixture gave it."""

    reviewer_id: str
    category: str
    fixture: bool


@dataclass(frozen=True)
class RatedRound:
    """A case round with two or more reviews (a unit of agreement), in submit order."""

    ratings: tuple[Rating, ...]

    def first_pair(self) -> RatedPair:
        """The first two reviews: what the pooled kappa compares."""
        first, second = self.ratings[0], self.ratings[1]
        return RatedPair(first.category, second.category, first.fixture or second.fixture)


@dataclass(frozen=True)
class Agreement:
    status: AgreementStatus
    case_count: int
    fixture_reviewers_contributed: bool
    category_count: int = 0
    kappa: float | None = None
    standard_error: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    observed_agreement: float | None = None
    expected_agreement: float | None = None
    undefined_reason: UndefinedReason | None = None
    min_cases: int = MIN_KAPPA_CASES


# The categories of answers that are not labels. A label's category is its canonical JSON key,
# which is never one of these bare words (a JSON string is quoted), so the names cannot collide.
UNRESOLVED = "unresolved"
NOT_EVALUABLE = "not evaluable"


def category_of(outcome: Outcome, label_key: str) -> str:
    """Labels by their JCS key (so a review keyed ``1e-07`` before JCS and one keyed ``1e-7``
    after agree); unresolved and not-evaluable are categories of their own."""
    if outcome is Outcome.LABEL:
        return same_label_key(label_key)
    return UNRESOLVED if outcome is Outcome.UNRESOLVED else NOT_EVALUABLE


def category(review: Review) -> str:
    return category_of(review.outcome, review.label_key)


def kappa_table(table: list[list[float]]) -> tuple[float, float, float, float]:
    """(kappa, standard error, observed, expected) of a square contingency table.

    The caller has ruled out a zero denominator (expected agreement of 1).
    """
    k = len(table)
    n = sum(sum(row) for row in table)
    p = [[cell / n for cell in row] for row in table]
    rows = [sum(p[i]) for i in range(k)]
    cols = [sum(p[i][j] for i in range(k)) for j in range(k)]
    observed = sum(p[i][i] for i in range(k))
    expected = sum(rows[i] * cols[i] for i in range(k))
    kappa = (observed - expected) / (1 - expected)
    term_a = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(k))
    term_b = (1 - kappa) ** 2 * sum(
        p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(k) for j in range(k) if i != j
    )
    term_c = (kappa - expected * (1 - kappa)) ** 2
    variance = (term_a + term_b - term_c) / (1 - expected) ** 2 / n
    # Rounding can leave a perfect-agreement variance a hair below zero.
    return kappa, math.sqrt(max(variance, 0.0)), observed, expected


def cohens_kappa(pairs: Iterable[RatedPair]) -> Agreement:
    """Kappa over the pairs, or an honest INSUFFICIENT / UNDEFINED."""
    rated = list(pairs)
    fixture = any(p.fixture_involved for p in rated)
    count = len(rated)
    categories = sorted({p.first for p in rated} | {p.second for p in rated})
    if count < MIN_KAPPA_CASES:
        return Agreement(AgreementStatus.INSUFFICIENT, count, fixture, len(categories))
    index = {c: i for i, c in enumerate(categories)}
    table = [[0.0] * len(categories) for _ in categories]
    for pair in rated:
        table[index[pair.first]][index[pair.second]] += 1
    if len(categories) < 2:
        return Agreement(
            AgreementStatus.UNDEFINED,
            count,
            fixture,
            len(categories),
            observed_agreement=1.0,
            expected_agreement=1.0,
            undefined_reason=UndefinedReason.DEGENERATE_MARGINALS,
        )
    n = float(count)
    rows = [sum(row) / n for row in table]
    cols = [sum(table[i][j] for i in range(len(table))) / n for j in range(len(table))]
    expected = sum(r * c for r, c in zip(rows, cols, strict=True))
    observed = sum(table[i][i] for i in range(len(table))) / n
    if abs(1 - expected) < _EPS:
        return Agreement(
            AgreementStatus.UNDEFINED,
            count,
            fixture,
            len(categories),
            observed_agreement=observed,
            expected_agreement=expected,
            undefined_reason=UndefinedReason.ZERO_DENOMINATOR,
        )
    kappa, se, observed, expected = kappa_table(table)
    return Agreement(
        AgreementStatus.COMPUTED,
        count,
        fixture,
        len(categories),
        kappa=kappa,
        standard_error=se,
        ci_lower=kappa - Z_975 * se,
        ci_upper=kappa + Z_975 * se,
        observed_agreement=observed,
        expected_agreement=expected,
    )


@dataclass(frozen=True)
class Figure:
    """One coefficient under the same honesty rules as the pooled kappa: a value only when
    COMPUTED; an interval only when the method has one."""

    status: AgreementStatus
    case_count: int
    fixture_reviewers_contributed: bool
    value: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    undefined_reason: UndefinedReason | None = None
    min_cases: int = MIN_KAPPA_CASES


def figure_of(kappa: Agreement) -> Figure:
    """A kappa as a ``Figure`` (the pairs' and categories' form)."""
    return Figure(
        kappa.status,
        kappa.case_count,
        kappa.fixture_reviewers_contributed,
        value=kappa.kappa,
        ci_lower=kappa.ci_lower,
        ci_upper=kappa.ci_upper,
        undefined_reason=kappa.undefined_reason,
        min_cases=kappa.min_cases,
    )
