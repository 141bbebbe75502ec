"""What an exported record carries so an auditor can prove, offline, every field a consumer
reads, and name the one an edit changed.

The ledger's events commit to records through digests (a gold label's ``digest``, a review's
salted ``answer``, a case's ``content``), and a digest proves that *something* changed, not
what. So for each digest an export carries its *opening*, the text it was computed over; a
verifier that finds the opening hashes to the digest compares each exported field with it:
a gold-label revision's ``gold_digested`` (its digested fields in its ``digest_version``'s
form), a review's ``reviews.answer_opening``, a case's ``shown_field_digests``.

A case's ``content`` digest also covers its local verdict and lineage, which blinding hides
from an export, so it cannot be recomputed from one; CASE_ENQUEUED events therefore also
record ``shown`` (``shown_digest``), a digest over the shown fields' digests only. A field
digest reveals no more than the field beside it. Everything is RFC 8785 (JCS) or the legacy
form a record's own version names, so any JCS library recomputes it (docs/audit.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.services.adjudication.domain import gold
from assay.services.adjudication.domain.digests import canonical_json, digest, jcs, jcs_digest
from assay.services.adjudication.domain.model import BlindedCase, Case, GoldLabelRevision

SHOWN_VERSION = "assay.case.shown.v1"
# The SHOWN fields of ``blinding.FIELD_VISIBILITY`` (a test holds the two equal).
SHOWN_FIELDS = ("case_id", "subject", "predicate", "candidate_values", "evidence_refs", "context")
# The canonical text each gold digest version hashes (``gold._DIGEST_BY_VERSION``'s forms).
_GOLD_TEXT = {gold.DIGEST_V1: canonical_json, gold.DIGEST_V2: jcs}


def shown_values(case: Case | BlindedCase) -> dict[str, Any]:
    """The shown fields of ``case`` as JSON values, by name."""
    return {
        "case_id": case.case_id,
        "subject": case.subject,
        "predicate": case.predicate,
        "candidate_values": list(case.candidate_values),
        "evidence_refs": list(case.evidence_refs),
        "context": case.context,
    }


def field_digest(value: Any) -> str:
    """One shown field's digest: SHA-256 of its RFC 8785 form."""
    return jcs_digest(value)


def shown_field_digests(case: Case | BlindedCase) -> dict[str, str]:
    """Each shown field's digest, by name."""
    return {name: field_digest(value) for name, value in shown_values(case).items()}


def shown_digest(field_digests: Mapping[str, str]) -> str:
    """What CASE_ENQUEUED records as ``shown``: the RFC 8785 digest of the field digests'
    object with ``"v": "assay.case.shown.v1"``. Spelled through ``digest``, whose form of an
    object of ASCII keys and strings is byte for byte JCS (``canonical``) and is written
    directly, without the general encoder: every enqueued case computes it."""
    return digest({"v": SHOWN_VERSION, **field_digests})


def gold_digested(value: GoldLabelRevision) -> str:
    """The text ``value.digest`` is the SHA-256 of (KeyError for an unknown version)."""
    fields = gold.revision_fields(value)
    return _GOLD_TEXT[value.digest_version](fields)
