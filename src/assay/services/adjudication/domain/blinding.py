"""What a reviewer may see of a case, decided field by field.

``FIELD_VISIBILITY`` classifies every field of ``Case``; ``blind`` builds the
reviewer view from the SHOWN fields only, and a unit test plus a contract test
fail as soon as ``Case`` (or the proto ``Case``) gains a field nobody has
classified. That is the real guarantee: the rendered view has no verdict field
at all. Who may call which view is sealed in ``permissions``: with
authentication on, only operators get ``GetCase`` with ``local_verdict``, and a
reviewer gets even the blinded view only of a case waiting for their review.
An operator with the database file can still read everything (ADR 0014).
"""

from __future__ import annotations

from enum import Enum

from assay.services.adjudication.domain.model import BlindedCase, Case


class Visibility(Enum):
    SHOWN = "shown"
    HIDDEN = "hidden"


FIELD_VISIBILITY: dict[str, Visibility] = {
    "case_id": Visibility.SHOWN,
    "subject": Visibility.SHOWN,
    "predicate": Visibility.SHOWN,
    "candidate_values": Visibility.SHOWN,
    "evidence_refs": Visibility.SHOWN,
    "context": Visibility.SHOWN,
    # The system's own judgment: the one thing blinding exists to hide.
    "local_verdict": Visibility.HIDDEN,
    # Lineage names the mining origin, which hints at what the system suspected.
    "lineage": Visibility.HIDDEN,
    # Operator metadata with no bearing on the judgment.
    "tenant": Visibility.HIDDEN,
    "create_time": Visibility.HIDDEN,
    "expire_time": Visibility.HIDDEN,
    "content_digest": Visibility.HIDDEN,
    "content_digest_version": Visibility.HIDDEN,
    # How many reviews a round takes: a predicate's overlap hints at how risky the system
    # judged it (safety predicates take more), so a reviewer is not told.
    "required_reviews": Visibility.HIDDEN,
    # What each source asserted, with its confidence: a reviewer who saw which kind of source
    # said what would anchor on the reliabilities the gold labels are meant to check.
    "claims": Visibility.HIDDEN,
    # Whether the case is a random spot-check of a resolved semantic (an easy one, likely).
    "spot_check_rate": Visibility.HIDDEN,
}


def shown_fields() -> frozenset[str]:
    return frozenset(name for name, v in FIELD_VISIBILITY.items() if v is Visibility.SHOWN)


def blind(case: Case, round_: int) -> BlindedCase:
    """The reviewer view: SHOWN fields by name, plus the round to review in."""
    return BlindedCase(
        case_id=case.case_id,
        subject=case.subject,
        predicate=case.predicate,
        candidate_values=case.candidate_values,
        evidence_refs=case.evidence_refs,
        context=case.context,
        round=round_,
    )
