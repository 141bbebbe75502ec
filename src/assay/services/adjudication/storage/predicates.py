"""SQL predicates and column lists that both engines' dialects read alike, and the shape
a worklist page takes.

What makes a case's round current (one more than its gold labels), what makes it
resolved, and columns qualified by a table alias are plain SQL with no
parameters, so SQLite's queries (``storage.sqlite``) and PostgreSQL's
(``storage.postgres``) build their statements from the same text; each engine
adds its own parameters and tenant filter. ``snapshots`` turns a page's
candidates and reviews into the snapshots both engines return.
"""

from __future__ import annotations

from collections import defaultdict

from assay.services.adjudication.domain.model import Case, CaseSnapshot, Review


def prefixed(alias: str, columns: str) -> str:
    """Each of the comma-separated ``columns`` qualified by ``alias``."""
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


# The current round of a case ``c``, and whether candidate ``k``'s current round is resolved.
CURRENT_ROUND = "(SELECT COUNT(*) FROM gold_labels g WHERE g.case_id = c.case_id) + 1"
ROUND_RESOLVED = (
    "EXISTS (SELECT 1 FROM resolutions x WHERE x.case_id = k.case_id AND x.round = k.current_round)"
)


def snapshots(candidates: list[tuple[Case, int]], reviews: list[Review]) -> list[CaseSnapshot]:
    """Each candidate as a snapshot of its (unresolved) current round, reviews in order."""
    by_round: defaultdict[tuple[str, int], list[Review]] = defaultdict(list)
    for review in reviews:
        by_round[(review.case_id, review.round)].append(review)
    return [
        CaseSnapshot(case, current - 1, tuple(by_round[(case.case_id, current)]), None)
        for case, current in candidates
    ]
