"""Explaining the rows that failed a check, one by one, as the reference explains a claim.

``decode.violations`` finds the bad rows with masks; this module says what is wrong
with each, in the order and words of ``validation.check_claim`` (then the duplicate
id check of ``check_claims``), at ``claims_arrow.<column>[<row>]``, and stops after the
row that brings the list to ``MAX_VIOLATIONS``, as the reference does. Only flagged
rows are visited, so a request with a few bad rows among a million costs a few rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.errors import Reason, excerpt
from assay.prototime import timestamp_problem
from assay.services.resolver.columnar.input.columns import ABSENT, Ints
from assay.services.resolver.columnar.input.stream import FIELD
from assay.services.resolver.domain.model import RelationKind, ReviewStatus
from assay.services.resolver.domain.validation import KNOWN_SOURCES_KEY, MAX_VIOLATIONS, Violation

if TYPE_CHECKING:
    from assay.services.resolver.columnar.input.decode import RawColumns

_BAD = Reason.INVALID_CLAIM


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


def _row(raw: RawColumns, row: int, reliability: dict[str, float]) -> list[Violation]:
    out: list[Violation] = []
    if not raw.subject.present[row]:
        out.append(Violation(_BAD, path("subject", row), "required: the subject must not be empty"))
    if not raw.predicate.present[row]:
        out.append(
            Violation(_BAD, path("predicate", row), "required: the predicate must not be empty")
        )
    text = int(raw.value.codes[row])
    if text == ABSENT:
        out.append(Violation(_BAD, path("value", row), "required: the claim must assert a value"))
    elif text in raw.value_problems:
        sub, description = raw.value_problems[text]
        out.append(Violation(_BAD, path("value", row) + (f".{sub}" if sub else ""), description))
    source = raw.source.text(row)
    if not source:
        out.append(
            Violation(_BAD, path("source", row), "required: the source kind must not be empty")
        )
    elif source not in reliability:
        out.append(
            Violation(
                Reason.UNKNOWN_SOURCE,
                path("source", row),
                f"unknown source kind {excerpt(source)} (the known kinds are in "
                f"the error's metadata, {KNOWN_SOURCES_KEY})",
            )
        )
    confidence = float(raw.confidence[row])
    if raw.confidence_null[row]:
        out.append(Violation(_BAD, path("confidence", row), "required: a number in [0, 1]"))
    elif not 0.0 <= confidence <= 1.0:
        out.append(
            Violation(_BAD, path("confidence", row), f"{confidence!r} is not a number in [0, 1]")
        )
    stated = float(raw.reliability[row])
    if not raw.reliability_null[row] and not 0.0 <= stated <= 1.0:
        out.append(
            Violation(_BAD, path("reliability", row), f"{stated!r} is not a number in [0, 1]")
        )
    if raw.observe.present[row]:
        problem = timestamp_problem(*raw.observe.at(row))
        if problem is not None:
            out.append(Violation(_BAD, path("observe_time", row), problem))
    status = int(raw.review[row])
    if status not in ReviewStatus._value2member_map_:
        out.append(Violation(_BAD, path("review_status", row), f"unknown review status {status}"))
    if not raw.kind_null[row] or raw.targets.present[row]:
        if not raw.ids.present[row]:
            out.append(
                Violation(
                    Reason.RELATION_WITHOUT_ID,
                    path("id", row),
                    "a claim with a relation must have an id",
                )
            )
        kind = int(raw.kind[row])
        if kind not in RelationKind._value2member_map_ or kind == RelationKind.UNSPECIFIED:
            out.append(
                Violation(
                    _BAD,
                    path("relation_kind", row),
                    "required: SUPPORTS, CONTRADICTS or SUPERSEDES",
                )
            )
        if not raw.targets.present[row]:
            out.append(
                Violation(_BAD, path("relation_target", row), "required: the target claim's id")
            )
    first = int(raw.duplicate_of[row])
    if first != ABSENT:
        out.append(
            Violation(
                Reason.DUPLICATE_CLAIM_ID,
                path("id", row),
                f"id {excerpt(raw.ids.text(row))} is already used by {path('id', first)}",
            )
        )
    return out
