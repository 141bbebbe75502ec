"""The claims a case was raised from: their rules, and the one JSON form they are digested in.

A case can carry the claims behind it (source kind, asserted value, confidence,
correlation group, time), so a frozen gold label can later be compared with what each
source said (calibration). They are part of the case's content digest and of its
CASE_ENQUEUED event (``claims``, the digest of ``claims_json``), so an export proves
them offline, and they are never in the reviewer's view (``blinding``): a gold label
judges the evidence, not which kind of source asserted what.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from assay.errors import FieldViolation
from assay.services.adjudication.domain.digests import jcs, jcs_digest
from assay.services.adjudication.domain.model import CaseClaim
from assay.services.adjudication.domain.times import rfc3339

MAX_CLAIMS = 256
MAX_SOURCE_KIND = 64
MAX_CLAIM_TEXT = 128


def claims_json(claims: Sequence[CaseClaim]) -> list[dict[str, Any]]:
    """The claims as JSON objects, every member present: what is digested and exported."""
    return [
        {
            "claim_id": c.claim_id,
            "source_kind": c.source_kind,
            "value": c.value,
            "confidence": c.confidence,
            "correlation_group": c.correlation_group,
            "observe_time": rfc3339(c.observe_time) if c.observe_time is not None else "",
        }
        for c in claims
    ]


def claims_digest(claims: Sequence[CaseClaim]) -> str:
    """CASE_ENQUEUED's ``claims``: sha256 of the RFC 8785 form of ``claims_json``."""
    return jcs_digest(claims_json(claims))


def claim_violations(claims: Sequence[CaseClaim], path: str) -> Iterator[FieldViolation]:
    """Every broken rule of a case's claims, by position (``case.claims[3].source_kind``)."""
    if len(claims) > MAX_CLAIMS:
        yield FieldViolation(path, f"at most {MAX_CLAIMS} claims")
        return
    for i, claim in enumerate(claims):
        at = f"{path}[{i}]"
        kind = claim.source_kind
        if not kind or len(kind) > MAX_SOURCE_KIND or kind != kind.strip() or " " in kind:
            yield FieldViolation(
                f"{at}.source_kind", f"must be 1-{MAX_SOURCE_KIND} characters without spaces"
            )
        if claim.value is None:
            yield FieldViolation(f"{at}.value", "is required (not null)")
        else:
            try:
                jcs(claim.value)
            except (TypeError, ValueError) as error:
                yield FieldViolation(f"{at}.value", f"is not a representable JSON value ({error})")
        if not math.isfinite(claim.confidence) or not 0.0 <= claim.confidence <= 1.0:
            yield FieldViolation(f"{at}.confidence", "must be a number in [0, 1]")
        for name in ("claim_id", "correlation_group"):
            if len(getattr(claim, name)) > MAX_CLAIM_TEXT:
                yield FieldViolation(f"{at}.{name}", f"must be at most {MAX_CLAIM_TEXT} characters")


def spot_check_violations(rate: float, path: str) -> Iterator[FieldViolation]:
    """0 (raised from a conflict) or a sampling probability in (0, 1]."""
    if not math.isfinite(rate) or not 0.0 <= rate <= 1.0:
        yield FieldViolation(path, "must be 0 (raised from a conflict) or a rate in (0, 1]")
