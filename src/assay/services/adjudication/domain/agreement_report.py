"""Every agreement figure of a corpus, from its multiply reviewed case rounds and gold labels.

One pooled kappa hides who disagrees and about what. So beside it come Cohen's kappa per
reviewer pair (over the case rounds both reviewed: a reviewer who drifts shows up in every
pair they are in) and per category (one category against the rest, over the same first
and second reviews as the pooled kappa: which answers people cannot agree on), and the
multi-rater figures of ``multirater``, percent agreement (``percent_agreement``), Gwet's
AC1/AC2 (``gwet``: chance-corrected, yet meaningful when one answer dominates) and each
reviewer against the gold labels (``gold_agreement``). Every figure is a ``Figure`` under
the pooled kappa's rules, so a pair of two shared cases reads INSUFFICIENT, not a kappa of 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assay.services.adjudication.domain import gwet, multirater
from assay.services.adjudication.domain.agreement import (
    Agreement,
    Figure,
    RatedPair,
    RatedRound,
    cohens_kappa,
    figure_of,
)
from assay.services.adjudication.domain.fields import bad
from assay.services.adjudication.domain.gold_agreement import (
    GoldAnswer,
    ReviewerFigure,
    reviewer_agreements,
)
from assay.services.adjudication.domain.percent_agreement import percent_agreement

# The two sides of a one-against-the-rest table.
_THIS, _REST = "this", "rest"


@dataclass(frozen=True)
class PairFigure:
    """Cohen's kappa between two reviewers; ``reviewer_a`` sorts first and is the first rater."""

    reviewer_a: str
    reviewer_b: str
    kappa: Figure


@dataclass(frozen=True)
class CategoryFigure:
    category: str
    kappa: Figure


@dataclass(frozen=True)
class AgreementReport:
    """The whole panel's figures first, then the breakdowns: by pair, category, reviewer."""

    pooled: Agreement
    fleiss: Figure
    krippendorff: Figure
    percent: Figure
    gwet_ac1: Figure
    gwet_ac2: Figure
    pairs: tuple[PairFigure, ...]
    categories: tuple[CategoryFigure, ...]
    reviewers: tuple[ReviewerFigure, ...]


def resample_count(requested: int, path: str = "bootstrap_resamples") -> int:
    """0 means the default; negative or above the maximum is refused."""
    if requested < 0:
        raise bad(path, "must not be negative")
    if requested > multirater.MAX_RESAMPLES:
        raise bad(path, f"must be at most {multirater.MAX_RESAMPLES}")
    return requested or multirater.DEFAULT_RESAMPLES


def pair_kappas(units: Sequence[RatedRound]) -> tuple[PairFigure, ...]:
    """Kappa of every two reviewers who reviewed a case round together, by their ids."""
    shared: dict[tuple[str, str], list[RatedPair]] = defaultdict(list)
    for unit in units:
        ratings = sorted(unit.ratings, key=lambda r: r.reviewer_id)
        for i, a in enumerate(ratings):
            for b in ratings[i + 1 :]:
                shared[(a.reviewer_id, b.reviewer_id)].append(
                    RatedPair(a.category, b.category, a.fixture or b.fixture)
                )
    return tuple(
        PairFigure(a, b, figure_of(cohens_kappa(pairs))) for (a, b), pairs in sorted(shared.items())
    )


def category_kappas(pairs: Sequence[RatedPair]) -> tuple[CategoryFigure, ...]:
    """Kappa of each category used against all the others, over the pooled kappa's pairs."""
    used = sorted({p.first for p in pairs} | {p.second for p in pairs})
    return tuple(
        CategoryFigure(category, figure_of(cohens_kappa(_one_against_rest(pairs, category))))
        for category in used
    )


def _one_against_rest(pairs: Sequence[RatedPair], category: str) -> list[RatedPair]:
    def side(answer: str) -> str:
        return _THIS if answer == category else _REST

    return [RatedPair(side(p.first), side(p.second), p.fixture_involved) for p in pairs]


def report(
    units: Sequence[RatedRound], resamples: int, gold: Iterable[GoldAnswer] = ()
) -> AgreementReport:
    """All the figures over ``units`` (case rounds with two or more reviews), and each
    reviewer's against ``gold`` (their answers in frozen rounds); the bootstrap intervals
    (Krippendorff's alpha, percent agreement) from ``resamples`` resamples."""
    pooled = [unit.first_pair() for unit in units]
    return AgreementReport(
        pooled=cohens_kappa(pooled),
        pairs=pair_kappas(units),
        categories=category_kappas(pooled),
        fleiss=multirater.fleiss_kappa(units),
        krippendorff=multirater.krippendorff_alpha(units, resamples),
        percent=percent_agreement(units, resamples),
        gwet_ac1=gwet.gwet_ac1(units),
        gwet_ac2=gwet.gwet_ac2(units),
        reviewers=reviewer_agreements(gold),
    )
