"""Explaining the rows that failed a check, one by one, as the reference explains a claim.

``decode.violations`` finds the bad rows with masks; this module reads each flagged row
as the ``ClaimFacts`` the reference reads of a ``Claim`` and walks the same rule table
(``claim_rules``, then the duplicate id rule), so the order, reasons and words are the
reference's, at ``claims_arrow.<column>[<row>]``; it stops after the
row that brings the list to ``MAX_VIOLATIONS``, as the reference does. Only flagged
rows are visited, so a request with a few bad rows among a million costs a few rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.errors import excerpt
from assay.services.resolver.columnar.input.columns import ABSENT, Ints
from assay.services.resolver.columnar.input.stream import FIELD
from assay.services.resolver.domain.claim_rules import (
    ID_UNIQUE,
    ClaimFacts,
    Violation,
    claim_violations,
)
from assay.services.resolver.domain.validation import MAX_VIOLATIONS

if TYPE_CHECKING:
    from assay.services.resolver.columnar.input.decode import RawColumns


def path(column: str, row: int) -> str:
    """The field path of one cell: ``claims_arrow.confidence[17]``."""
    return f"{FIELD}.{column}[{row}]"


def explain(raw: RawColumns, rows: Ints, reliability: dict[str, float]) -> list[Violation]:
    """The violations of ``rows`` (ascending), capped like ``check_claims``."""
    out: list[Violation] = []
    for row in rows.tolist():
        out.extend(_row(raw, row, reliability))
        if len(out) >= MAX_VIOLATIONS:
            break
    return out


def facts(raw: RawColumns, row: int) -> ClaimFacts:
    """What the rules read of one row, as ``convert.facts_of`` reads a ``Claim``."""
    text = int(raw.value.codes[row])
    has_relation = not raw.kind_null[row] or raw.targets.present[row]
    return ClaimFacts(
        id=raw.ids.text(row),
        subject=raw.subject.text(row),
        predicate=raw.predicate.text(row),
        source=raw.source.text(row),
        confidence=float(raw.confidence[row]),
        reliability=None if raw.reliability_null[row] else float(raw.reliability[row]),
        value_problem=raw.value_problems.get(text) if text != ABSENT else None,
        review_status=int(raw.review[row]),
        relation=(int(raw.kind[row]), raw.targets.text(row)) if has_relation else None,
        observed=raw.observe.at(row) if raw.observe.present[row] else None,
        value_absent=text == ABSENT,
        confidence_absent=bool(raw.confidence_null[row]),
    )


def _row(raw: RawColumns, row: int, reliability: dict[str, float]) -> list[Violation]:
    out = claim_violations(facts(raw, row), reliability, lambda rule: path(rule.column, row))
    first = int(raw.duplicate_of[row])
    if first != ABSENT:
        out.append(
            ID_UNIQUE.violation(
                path(ID_UNIQUE.column, row),
                id=excerpt(raw.ids.text(row)),
                first=path(ID_UNIQUE.column, first),
            )
        )
    return out
