"""Who may review, and what their kind means for the labels they touch.

Anti-fabrication is structural here: a HUMAN reviewer cannot exist without an
``attested_by`` (someone vouching that a person stands behind the id), and a
label is HUMAN_ADJUDICATED only when every contributor is HUMAN — a single
fixture anywhere makes it SYNTHETIC_MECHANISM_TEST.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from assay.errors import NotFound, Reason, Violations, invalid_field
from assay.services.adjudication.domain.fields import bad, bounded_text
from assay.services.adjudication.domain.model import Provenance, Reviewer, ReviewerKind

REVIEWER_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_ATTESTED_BY = 256


def check_reviewer_id(value: str, path: str) -> str:
    if not value:
        raise bad(path, "is required")
    if not REVIEWER_ID.match(value):
        raise bad(
            path,
            "must be 1-64 characters: lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        )
    return value


def check_registration(
    reviewer_id: str, kind: ReviewerKind | None, prefix: str = "reviewer"
) -> ReviewerKind:
    """The id and kind of a registration, both checked; returns the kind, known to be set."""
    found = Violations()
    found.check(check_reviewer_id, reviewer_id, f"{prefix}.reviewer_id")
    if kind is None:
        found.add(f"{prefix}.kind", "must be HUMAN or MECHANISM_TEST_FIXTURE")
        raise found.error()
    found.raise_if_any()
    return kind


def new_reviewer(
    reviewer_id: str,
    kind: ReviewerKind | None,
    attested_by: str,
    register_time: datetime,
    prefix: str = "reviewer",
    identity: tuple[str, str] = ("", ""),
) -> Reviewer:
    """Validate a registration; a HUMAN without ``attested_by`` is refused. ``identity``:
    the (issuer, subject) the reviewer is bound to (see ``permissions.bind_registration``)."""
    kind = check_registration(reviewer_id, kind, prefix)
    attested = bounded_text(attested_by.strip(), f"{prefix}.attested_by", MAX_ATTESTED_BY)
    if kind is ReviewerKind.HUMAN and not attested:
        raise invalid_field(
            Reason.HUMAN_REVIEWER_REQUIRES_ATTESTATION,
            f"{prefix}.attested_by",
            "a HUMAN reviewer needs attested_by: who vouches that a person stands behind it",
        )
    return Reviewer(reviewer_id, kind, attested, register_time, identity[0], identity[1])


def reviewer_not_found(reviewer_id: str, field: str = "reviewer_id") -> NotFound:
    return NotFound(
        Reason.REVIEWER_NOT_FOUND,
        f"no reviewer {reviewer_id} ({field})",
        metadata={"reviewer_id": reviewer_id, "field": field},
    )


def provenance_for(kinds: Iterable[ReviewerKind]) -> Provenance:
    """HUMAN_ADJUDICATED only when there is at least one contributor and all are HUMAN."""
    seen = list(kinds)
    if seen and all(kind is ReviewerKind.HUMAN for kind in seen):
        return Provenance.HUMAN_ADJUDICATED
    return Provenance.SYNTHETIC_MECHANISM_TEST
