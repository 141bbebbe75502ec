"""SQL predicates and column lists that both engines' dialects read alike, and the shape
a worklist page takes.

What makes a case's round current (one more than its gold labels), what makes it
resolved, and columns qualified by a table alias are plain SQL with no
parameters, so SQLite's queries (``storage.sqlite``) and PostgreSQL's
(``storage.postgres``) build their statements from the same text. A
reviewer's queue and an adjudicator's worklist are written here once
(``queue_page``, ``worklist_page``, ``deciding_range`` and the deciding rows'
statements), each engine passing its own parameter markers and tenant filter;
``page_steps`` runs them, and ``snapshots`` turns a page's candidates and
reviews into the snapshots both engines return.
"""

from __future__ import annotations

from collections import defaultdict

from assay.services.adjudication.domain.model import Case, CaseSnapshot, Review
from assay.services.adjudication.storage import rows


def prefixed(alias: str, columns: str) -> str:
    """Each of the comma-separated ``columns`` qualified by ``alias``."""
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


# The current round of a case ``c``, and whether candidate ``k``'s current round is resolved.
CURRENT_ROUND = "(SELECT COUNT(*) FROM gold_labels g WHERE g.case_id = c.case_id) + 1"
ROUND_RESOLVED = (
    "EXISTS (SELECT 1 FROM resolutions x WHERE x.case_id = k.case_id AND x.round = k.current_round)"
)


def queue_page(
    *, now: str, after: str, in_scope: str, reviewer: str, limit: str, only: str = ""
) -> str:
    """The cases of a reviewer's queue page: not expired, in scope (``in_scope``: the
    engine's tenant filter on ``c.tenant``), awaiting a first review, or more reviews after a
    first (fewer final reviews than the case requires), with no resolution of the current
    round and no final review of it by ``reviewer`` (the rule
    ``permissions.awaits_review_by`` states for one case). Arguments are parameter markers;
    ``only``: a further condition on ``counted`` (a tier of the queue: ``assignment_rows``)."""
    return f"""
WITH candidates AS (
    SELECT {prefixed("c", rows.CASE_COLUMNS)},
           {CURRENT_ROUND} AS current_round
    FROM cases c
    WHERE c.expire_time > {now} AND c.case_id > {after} AND {in_scope}
), counted AS (
    SELECT candidates.*,
           (SELECT COUNT(*) FROM final_reviews r
             WHERE r.case_id = candidates.case_id AND r.round = candidates.current_round)
             AS review_count
    FROM candidates
)
SELECT * FROM counted
WHERE review_count < required_reviews{f" AND {only}" if only else ""}
  AND (current_round = 1 OR review_count >= 1)
  AND NOT EXISTS (SELECT 1 FROM resolutions x
                   WHERE x.case_id = counted.case_id AND x.round = counted.current_round)
  AND NOT EXISTS (SELECT 1 FROM final_reviews r
                   WHERE r.case_id = counted.case_id AND r.round = counted.current_round
                     AND r.reviewer_id = {reviewer})
ORDER BY case_id
LIMIT {limit}
"""


def worklist_page(*, now: str, after: str, in_scope: str, adjudicator: str, limit: str) -> str:
    """The candidate cases of a worklist page: not expired, in scope (``in_scope``: the
    engine's tenant filter on ``c.tenant``), current round unresolved and not reviewed by the
    adjudicator, two of its reviews with different answers. Arguments are parameter markers.

    It compares stored label keys, so it keeps a superset of the disagreed rounds (two keys
    of one value, stored before and after JCS, differ as text)."""
    return f"""
WITH k AS (
    SELECT {prefixed("c", rows.CASE_COLUMNS)}, {CURRENT_ROUND} AS current_round
    FROM cases c
    WHERE c.expire_time > {now} AND c.case_id > {after} AND {in_scope}
)
SELECT * FROM k
WHERE NOT {ROUND_RESOLVED}
  AND NOT EXISTS (SELECT 1 FROM final_reviews r WHERE r.case_id = k.case_id
                     AND r.round = k.current_round AND r.reviewer_id = {adjudicator})
  AND EXISTS (SELECT 1 FROM final_reviews a JOIN final_reviews b
                ON b.case_id = a.case_id AND b.round = a.round
               WHERE a.case_id = k.case_id AND a.round = k.current_round
                 AND (a.outcome <> b.outcome OR a.label_key <> b.label_key))
ORDER BY case_id
LIMIT {limit}
"""


def deciding_range(*, now: str, after: str, upto_unset: str, upto: str, in_scope: str) -> str:
    """The cases a page covers (after ``after``, to ``upto`` unless ``upto_unset``) with
    their current round, as the table ``k`` the deciding rows' statements join."""
    return f"""
WITH k AS (
    SELECT c.case_id, {CURRENT_ROUND} AS current_round
    FROM cases c
    WHERE c.expire_time > {now} AND c.case_id > {after} AND ({upto_unset} OR c.case_id <= {upto})
      AND {in_scope}
)
"""


def deciding_reviews(cases: str, *, adjudicator: str, insertion_order: str) -> str:
    """The final reviews that decide whether a case of ``cases`` is listed: the adjudicator's
    own, and every one of an unresolved round with two or more, each case's in the order they
    were stored (``insertion_order``: the view's column for it on ``r``)."""
    return (
        cases
        + f"""
SELECT {prefixed("r", rows.REVIEW_COLUMNS)}
FROM k JOIN final_reviews r ON r.case_id = k.case_id AND r.round = k.current_round
WHERE r.reviewer_id = {adjudicator}
   OR (NOT {ROUND_RESOLVED}
       AND (SELECT COUNT(*) FROM final_reviews n
             WHERE n.case_id = k.case_id AND n.round = k.current_round) >= 2)
ORDER BY r.case_id, {insertion_order}
"""
    )


def reviewer_reviews(cases: str, *, reviewer: str) -> str:
    """The final reviews by ``reviewer`` of the current rounds of ``cases``
    (``deciding_range``): what keeps a case out of the reviewer's queue, so a forged one must
    not hide a case."""
    return (
        cases
        + f"""
SELECT {prefixed("r", rows.REVIEW_COLUMNS)}
FROM k JOIN final_reviews r
  ON r.case_id = k.case_id AND r.round = k.current_round AND r.reviewer_id = {reviewer}
"""
    )


def deciding_resolutions(cases: str) -> str:
    """The resolutions of the current rounds of ``cases`` (a forged one must not hide a case)."""
    return (
        cases
        + f"""
SELECT {prefixed("x", rows.RESOLUTION_COLUMNS)}
FROM k JOIN resolutions x ON x.case_id = k.case_id AND x.round = k.current_round
"""
    )


def rated_reviews(*, in_scope: str, insertion_order: str) -> str:
    """Every final review of the cases in scope (``in_scope``: the engine's tenant filter on
    ``c.tenant``) with its reviewer's kind, by case, round, then the order they were stored
    (``insertion_order``: the engine's column for it on ``r``): ``rows.rated_rounds``' rows."""
    return f"""
SELECT r.case_id, r.round, r.reviewer_id, r.outcome, r.label_key, v.kind
FROM final_reviews r
JOIN reviewers v ON v.reviewer_id = r.reviewer_id
JOIN cases c ON c.case_id = r.case_id
WHERE {in_scope}
ORDER BY r.case_id, r.round, {insertion_order}
"""


def gold_answers(*, in_scope: str) -> str:
    """Each final review of the round each case's latest gold label was frozen from, beside
    that label's basis, label key and provenance and the reviewer's kind, for the gold labels
    in scope (``in_scope``: the engine's tenant filter on ``g.tenant``):
    ``rows.gold_answers``' rows, by reviewer then case."""
    return f"""
SELECT g.case_id, r.reviewer_id, r.outcome, r.label_key, v.kind,
       g.basis AS gold_basis, g.label_key AS gold_label_key, g.provenance AS gold_provenance
FROM gold_labels g
JOIN final_reviews r ON r.case_id = g.case_id AND r.round = g.round
JOIN reviewers v ON v.reviewer_id = r.reviewer_id
WHERE {in_scope}
  AND g.revision = (SELECT MAX(l.revision) FROM gold_labels l WHERE l.case_id = g.case_id)
ORDER BY r.reviewer_id, g.case_id
"""


def snapshots(candidates: list[tuple[Case, int]], reviews: list[Review]) -> list[CaseSnapshot]:
    """Each candidate as a snapshot of its (unresolved) current round, reviews in order."""
    by_round: defaultdict[tuple[str, int], list[Review]] = defaultdict(list)
    for review in reviews:
        by_round[(review.case_id, review.round)].append(review)
    return [
        CaseSnapshot(case, current - 1, tuple(by_round[(case.case_id, current)]), None)
        for case, current in candidates
    ]
