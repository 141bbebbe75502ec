"""A tenant's agreement as figures and server-drawn SVG: what the template draws.

Every figure follows the service's honesty rules: a number (with its 95% interval when
the method has one) only when COMPUTED; otherwise the words why ("insufficient: 12 of 20
double-reviewed cases"), each reviewer's agreement with the gold labels included. The
charts are geometry computed here — a heatmap of Cohen's kappa per reviewer pair, and bars
of the one-against-the-rest kappa per category with their intervals — drawn by the
template with SVG attributes only (the Content-Security-Policy forbids inline style and
script). Names on the charts are stored text: the template escapes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.v1 import adjudication_service_pb2 as adj

CELL = 56
LABEL = 120
BAR_WIDTH = 360
BAR_ROW = 28
# Kappa from -1 to 1 in five bands, red to blue; grey where there is no number. Each band
# with the colour of the number written on it: white on the two dark ends (black on them
# falls short of the 4.5:1 contrast WCAG asks of text), black on the rest.
_BANDS = (
    (0.0, "#d73027", "#fff"),
    (0.2, "#fc8d59", "#000"),
    (0.4, "#fee090", "#000"),
    (0.6, "#91bfdb", "#000"),
    (1.01, "#4575b4", "#fff"),
)
NO_VALUE = "#d0d7de"
_UNDEFINED = {
    adj.AGREEMENT_UNDEFINED_REASON_DEGENERATE_MARGINALS: "every answer falls in one category",
    adj.AGREEMENT_UNDEFINED_REASON_ZERO_DENOMINATOR: "chance agreement is 1",
    adj.AGREEMENT_UNDEFINED_REASON_LABELS_NOT_ORDERED: "some answers are not numbers to order",
}


def said(figure: Any, units: str = "double-reviewed cases") -> str:
    """A figure (AgreementFigure or the pooled response) in words, honestly; ``units``: what
    it counts, for the words of an insufficient one."""
    if figure.status == adj.AGREEMENT_STATUS_COMPUTED:
        value = figure.kappa if isinstance(figure, adj.ComputeAgreementResponse) else figure.value
        text = f"{value:.2f}"
        if figure.HasField("ci_lower") and figure.HasField("ci_upper"):
            text += f" (95% interval {figure.ci_lower:.2f} to {figure.ci_upper:.2f})"
        return text
    if figure.status == adj.AGREEMENT_STATUS_INSUFFICIENT:
        return f"insufficient: {figure.case_count} of {figure.min_cases} {units}"
    if figure.status == adj.AGREEMENT_STATUS_UNDEFINED:
        return f"undefined: {_UNDEFINED.get(figure.undefined_reason, 'no value here')}"
    return "not reported"


def colour(figure: adj.AgreementFigure) -> tuple[str, str]:
    """The cell's fill and the colour of the number on it."""
    if figure.status != adj.AGREEMENT_STATUS_COMPUTED:
        return NO_VALUE, "#000"
    return next((fill, ink) for top, fill, ink in _BANDS if figure.value < top)


@dataclass(frozen=True)
class Cell:
    x: int
    y: int
    fill: str
    ink: str
    text: str
    title: str


@dataclass(frozen=True)
class Heatmap:
    names: list[str]
    cells: list[Cell]
    size: int


def heatmap(pairs: list[adj.PairAgreement]) -> Heatmap:
    """Reviewers on both axes; each pair's cell (both halves) coloured by its kappa."""
    names = sorted({p.reviewer_a for p in pairs} | {p.reviewer_b for p in pairs})
    at = {name: i for i, name in enumerate(names)}
    cells = []
    for pair in pairs:
        figure = pair.kappa
        short = f"{figure.value:.2f}" if figure.status == adj.AGREEMENT_STATUS_COMPUTED else "–"
        title = f"{pair.reviewer_a} and {pair.reviewer_b}: {said(figure)}"
        a, b = at[pair.reviewer_a], at[pair.reviewer_b]
        fill, ink = colour(figure)
        for row, col in {(a, b), (b, a)}:
            cells.append(Cell(LABEL + col * CELL, LABEL + row * CELL, fill, ink, short, title))
    return Heatmap(names, cells, LABEL + len(names) * CELL)


@dataclass(frozen=True)
class Bar:
    y: int
    name: str
    words: str
    computed: bool
    x: float = 0.0
    width: float = 0.0
    low: float = 0.0
    high: float = 0.0
    interval: bool = False


def _scale(value: float) -> float:
    """Kappa in [-1, 1] to a position on the bar axis."""
    clamped = max(-1.0, min(1.0, value))
    return LABEL + (clamped + 1.0) / 2.0 * BAR_WIDTH


def bars(categories: list[adj.CategoryAgreement]) -> list[Bar]:
    """One bar per category from 0 to its kappa, its interval as a whisker."""
    drawn = []
    zero = _scale(0.0)
    for i, category in enumerate(categories):
        figure = category.kappa
        y = 20 + i * BAR_ROW
        if figure.status != adj.AGREEMENT_STATUS_COMPUTED:
            drawn.append(Bar(y, category.category, said(figure), False))
            continue
        end = _scale(figure.value)
        has_interval = figure.HasField("ci_lower") and figure.HasField("ci_upper")
        drawn.append(
            Bar(
                y,
                category.category,
                said(figure),
                True,
                x=min(zero, end),
                width=abs(end - zero),
                low=_scale(figure.ci_lower) if has_interval else 0.0,
                high=_scale(figure.ci_upper) if has_interval else 0.0,
                interval=has_interval,
            )
        )
    return drawn


def agreement_view(reply: adj.ComputeAgreementResponse) -> dict[str, Any]:
    """Everything the agreement page shows."""
    return {
        "pooled": said(reply),
        "case_count": reply.case_count,
        "min_cases": reply.min_cases,
        "fleiss": said(reply.fleiss_kappa),
        "alpha": said(reply.krippendorff_alpha),
        "percent": said(reply.percent_agreement),
        "ac1": said(reply.gwet_ac1),
        "ac2": said(reply.gwet_ac2),
        "reviewers": [
            (r.reviewer_id, said(r.gold_agreement, "frozen rounds")) for r in reply.reviewers
        ],
        "fixtures": reply.fixture_reviewers_contributed,
        "pairs": [(p.reviewer_a, p.reviewer_b, said(p.kappa)) for p in reply.pairs],
        "heatmap": heatmap(list(reply.pairs)),
        "bars": bars(list(reply.categories)),
        "bars_height": 30 + len(reply.categories) * BAR_ROW,
        "axis": {"left": _scale(-1.0), "zero": _scale(0.0), "right": _scale(1.0)},
        "cell": CELL,
        "label": LABEL,
    }
