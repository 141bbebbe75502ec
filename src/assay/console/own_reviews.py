"""The reviews a person gave in this sign-in, kept in their session so they can amend or
withdraw them in the console.

The contract gives a reviewer no listing of their own reviews, and once a case leaves
their queue GetBlindedCase no longer shows it to them. So when SubmitReview (or an
amendment) answers, the console keeps, per case, the review as stored and the blinded
case it answered: at most ``MAX_KEPT`` cases of at most ``MAX_BYTES`` each, oldest
forgotten first. A case too large is kept without its context and evidence (the
candidate values are what an amendment needs); one still too large is not kept, and the
CLI's ``assay amend`` covers it. The page after a
review says once that it is recorded (``just_kept``). Signing out forgets them with the
session. Only the person's own answers are ever kept here.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from assay.v1 import adjudication_service_pb2 as adj

MAX_KEPT = 20
MAX_BYTES = 16 * 1024


@dataclass
class OwnReview:
    """One case the person reviewed in this sign-in: the case as they were shown it and
    their latest review of it."""

    case: adj.BlindedCase
    review: adj.Review


class OwnReviews:
    """A session's own reviews by case id, newest last, bounded (see the module)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, OwnReview] = OrderedDict()
        self._just: str = ""

    def keep(self, case: adj.BlindedCase, review: adj.Review) -> bool:
        """Remember ``review`` as the latest for ``case``; False when it is too large."""
        self._kept.pop(case.case_id, None)
        copy = adj.BlindedCase()
        copy.CopyFrom(case)
        if copy.ByteSize() + review.ByteSize() > MAX_BYTES:
            copy.ClearField("context")
            copy.ClearField("evidence_refs")
        if copy.ByteSize() + review.ByteSize() > MAX_BYTES:
            return False
        self._kept[case.case_id] = OwnReview(copy, adj.Review())
        self._kept[case.case_id].review.CopyFrom(review)
        while len(self._kept) > MAX_KEPT:
            self._kept.popitem(last=False)
        self._just = case.case_id
        return True

    def just_kept(self) -> OwnReview | None:
        """The review kept last, once: the next page says it is recorded, and no other."""
        found, self._just = self._kept.get(self._just), ""
        return found

    def get(self, case_id: str) -> OwnReview | None:
        return self._kept.get(case_id)

    def forget(self, case_id: str) -> None:
        self._kept.pop(case_id, None)

    def newest_first(self) -> list[OwnReview]:
        return list(reversed(self._kept.values()))
