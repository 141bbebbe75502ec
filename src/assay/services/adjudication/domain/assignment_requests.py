"""AssignCases and UnassignCase requests, and every field check they take.

The checks that need nothing stored run before the write job (``validate_assign``,
``validate_unassign``); those that need the reviewers (``check_pool``: unknown, not
HUMAN) and the case (``per_case``: a case's ``required_reviews`` larger than the pool)
run inside it. Each names the field as the request spells it, and every bad field of a
request is reported at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from assay.errors import Violations
from assay.services.adjudication.domain.assignment import (
    MAX_CASES,
    MAX_REVIEWERS,
    AssignmentRule,
)
from assay.services.adjudication.domain.fields import require_id
from assay.services.adjudication.domain.model import Reviewer, ReviewerKind
from assay.services.adjudication.domain.reviewers import check_reviewer_id


@dataclass(frozen=True)
class AssignRequest:
    case_ids: tuple[str, ...]
    reviewer_ids: tuple[str, ...]
    rule: AssignmentRule | None
    reviewers_per_case: int


@dataclass(frozen=True)
class UnassignRequest:
    case_id: str
    reviewer_ids: tuple[str, ...]
    to_reviewer_ids: tuple[str, ...]


def _distinct_ids(
    found: Violations, values: Sequence[str], path: str, check: Callable[[str, str], str]
) -> None:
    """Each of ``values`` well formed (``check``) and named once (``path[i]``)."""
    first: dict[str, int] = {}
    for i, value in enumerate(values):
        found.check(check, value, f"{path}[{i}]")
        if value in first:
            found.add(f"{path}[{i}]", f"repeats {path}[{first[value]}]")
        else:
            first[value] = i


def validate_assign(req: AssignRequest, found: Violations) -> None:
    if not req.case_ids:
        found.add("case_ids", "is required: 1 to 1,000 cases")
    elif len(req.case_ids) > MAX_CASES:
        found.add("case_ids", f"must name at most {MAX_CASES:,} cases (it has {len(req.case_ids)})")
    elif len(set(req.case_ids)) < len(req.case_ids):
        found.add("case_ids", "must not repeat a case")
    if len(req.case_ids) <= MAX_CASES:
        _distinct_ids(found, req.case_ids, "case_ids", require_id)
    _pool_fields(req.reviewer_ids, "reviewer_ids", found, required=True)
    if req.rule is None:
        found.add("rule", "must be EACH, ROUND_ROBIN or LEAST_LOADED")
    per = req.reviewers_per_case
    if per < 0:
        found.add("reviewers_per_case", "must not be negative")
    elif req.rule is AssignmentRule.EACH and per != 0:
        found.add("reviewers_per_case", "must be 0 with EACH (every reviewer gets every case)")
    elif req.reviewer_ids and per > len(req.reviewer_ids):
        found.add(
            "reviewers_per_case",
            f"must be at most the pool's size ({len(req.reviewer_ids)})",
        )


def validate_unassign(req: UnassignRequest, found: Violations) -> None:
    found.check(require_id, req.case_id, "case_id")
    _pool_fields(req.reviewer_ids, "reviewer_ids", found, required=True)
    _pool_fields(req.to_reviewer_ids, "to_reviewer_ids", found, required=False)
    removed = set(req.reviewer_ids)
    for i, value in enumerate(req.to_reviewer_ids):
        if value in removed:
            found.add(f"to_reviewer_ids[{i}]", "is also among reviewer_ids (being removed)")


def _pool_fields(ids: Sequence[str], path: str, found: Violations, required: bool) -> None:
    if not ids and required:
        found.add(path, f"is required: 1 to {MAX_REVIEWERS} reviewers")
    elif len(ids) > MAX_REVIEWERS:
        found.add(path, f"must name at most {MAX_REVIEWERS} reviewers (it has {len(ids)})")
        return
    _distinct_ids(found, ids, path, check_reviewer_id)


def check_pool(
    ids: Sequence[str], path: str, known: Mapping[str, Reviewer], found: Violations
) -> None:
    """Each reviewer registered and HUMAN: a fixture reviewer is never assigned work."""
    for i, reviewer_id in enumerate(ids):
        reviewer = known.get(reviewer_id)
        if reviewer is None:
            found.add(f"{path}[{i}]", "is not a registered reviewer")
        elif reviewer.kind is not ReviewerKind.HUMAN:
            found.add(f"{path}[{i}]", "is not a HUMAN reviewer")


def per_case(req: AssignRequest, required: Mapping[str, int], found: Violations) -> dict[str, int]:
    """How many reviewers each case takes: ``reviewers_per_case``, or (0) the case's own
    ``required_reviews``, which must fit in the pool too."""
    if req.reviewers_per_case or req.rule is AssignmentRule.EACH:
        return {c: req.reviewers_per_case for c in req.case_ids}
    pool = len(req.reviewer_ids)
    too_many = sorted({n for n in required.values() if n > pool})
    if too_many:
        found.add(
            "reviewers_per_case",
            f"is 0, and a case needs {too_many[-1]} reviews: more than the pool ({pool})",
        )
    return dict(required)
