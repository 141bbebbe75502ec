"""What a refused INSERT means to the caller, the same on both engines.

A uniqueness constraint that refuses a row is a rule of the domain, not a
storage failure: a reviewer registered twice, a second review by one reviewer
in a round, a gold-label revision that exists already. Each engine recognises
the refusal in its driver's terms (``sqlite3.IntegrityError``; PostgreSQL's
``unique_violation``) and raises the error built here, so a client sees the
same ALREADY_EXISTS, reason and message whichever engine stores its data.
"""

from __future__ import annotations

from assay.errors import AlreadyExists, Reason
from assay.services.adjudication.domain.model import GoldLabelRevision, Review, Reviewer


def reviewer_exists(value: Reviewer) -> AlreadyExists:
    return AlreadyExists(
        Reason.REVIEWER_ALREADY_EXISTS, f"reviewer {value.reviewer_id} exists already"
    )


def review_submitted(value: Review) -> AlreadyExists:
    return AlreadyExists(
        Reason.REVIEW_ALREADY_SUBMITTED,
        f"{value.reviewer_id} already reviewed case {value.case_id} in round {value.round}",
    )


def gold_revision_exists(value: GoldLabelRevision) -> AlreadyExists:
    return AlreadyExists(
        Reason.GOLD_LABEL_REVISION_EXISTS,
        f"gold label {value.case_id} revision {value.revision} exists already",
        metadata={"case_id": value.case_id, "revision": str(value.revision)},
    )
