"""A case's state, derived from its reviews, resolutions and revisions — never stored.

There is no state column anywhere, so no write path can move a case from
DISAGREED to AGREED by overwriting a field: the only way to change the state is
to append a review (or a revision of one), a resolution or a gold-label
revision, each of which is audited. A round is AGREED only when every one of
the reviews its case requires gives the same answer; anything else with all of
them in is DISAGREED and goes to an adjudicator — never to a majority.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.services.adjudication.domain.digests import same_label_key
from assay.services.adjudication.domain.model import Basis, CaseSnapshot, CaseState, Outcome, Review

# Reviews a round takes unless its case says otherwise, and the most a case may ask for. A
# round with all it takes waits for a resolution and refuses more (a late review could turn
# an agreed round into a disagreed one).
DEFAULT_REQUIRED_REVIEWS = 2
MAX_REQUIRED_REVIEWS = 10
# How a bad count is told, wherever one is given (a request, the review policy file).
REQUIRED_REVIEWS_RANGE = f"2 to {MAX_REQUIRED_REVIEWS}"


def required_reviews_allowed(value: int) -> bool:
    """Whether a round may take ``value`` reviews: one review is no agreement at all."""
    return DEFAULT_REQUIRED_REVIEWS <= value <= MAX_REQUIRED_REVIEWS


_STATE_BY_BASIS = {
    Basis.UNANIMOUS_AGREEMENT: CaseState.RESOLVED,
    Basis.ADJUDICATOR_DECISION: CaseState.RESOLVED,
    Basis.UNRESOLVED: CaseState.UNRESOLVED,
    Basis.NOT_EVALUABLE: CaseState.NOT_EVALUABLE,
}


def answer_key(review: Review) -> tuple[Outcome, str]:
    """What two reviews must share to agree: the outcome kind and, for labels, the label —
    compared in JCS form, so a review stored before JCS (key ``1e-07``) agrees with one
    stored after (``1e-7``) on the same value."""
    label = same_label_key(review.label_key) if review.outcome is Outcome.LABEL else ""
    return (review.outcome, label)


def unanimous(reviews: Sequence[Review]) -> bool:
    """Two or more reviews with one identical answer."""
    return len(reviews) >= 2 and len({answer_key(r) for r in reviews}) == 1


def round_complete(snapshot: CaseSnapshot) -> bool:
    """The current round has all the reviews its case takes."""
    return len(snapshot.round_reviews) >= snapshot.case.required_reviews


def derive_state(snapshot: CaseSnapshot) -> CaseState:
    """The state of the case's current round (round = revisions + 1)."""
    if snapshot.round_resolution is not None:
        return _STATE_BY_BASIS[snapshot.round_resolution.basis]
    reviews = snapshot.round_reviews
    if not reviews:
        # A frozen case stays FROZEN until a review explicitly opens the next round.
        return CaseState.FROZEN if snapshot.revision_count > 0 else CaseState.AWAITING_REVIEW
    if len(reviews) == 1:
        return CaseState.AWAITING_SECOND_REVIEW
    if len(reviews) < snapshot.case.required_reviews:
        return CaseState.AWAITING_MORE_REVIEWS
    return CaseState.AGREED if unanimous(reviews) else CaseState.DISAGREED
