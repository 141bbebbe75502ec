"""Validating a case for the queue and fixing its content digest.

A case is the unit reviewers judge. Its candidate values bound what a label
may be (so a gold label can never be a value nobody proposed), and its content
digest is what the audit ledger records instead of the content itself, so
deleting the case later leaves the ledger intact.

The content digest is versioned per case (``Case.content_digest_version``): new
cases get ``assay.case.v2``, RFC 8785 over the documented object with a
``"v": "assay.case.v2"`` member; cases enqueued before keep ``assay.case.v1``, the
legacy canonical JSON of the same object without ``v``. A case is checked in its
own version's form, and an unknown version is an unreadable row. A case that
needs other than two reviews per round (``required_reviews``) has that number in
its digested object too, so an edited overlap is tampering; a case of two has
none, which keeps every older case's digest as it was. Likewise its claims and
spot-check rate (``case_claims``), digested only when present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from assay.errors import (
    FieldViolation,
    InvalidArgument,
    NotFound,
    Reason,
    Violations,
    invalid_field,
)
from assay.services.adjudication.domain import case_claims
from assay.services.adjudication.domain.digests import digest, jcs, jcs_digest
from assay.services.adjudication.domain.fields import (
    bad,
    bounded_text,
    require_tenant,
    require_text,
)
from assay.services.adjudication.domain.model import Case, CaseInput, JsonValue
from assay.services.adjudication.domain.state import (
    DEFAULT_REQUIRED_REVIEWS,
    REQUIRED_REVIEWS_RANGE,
    required_reviews_allowed,
)
from assay.services.adjudication.domain.times import rfc3339

DEFAULT_TTL = timedelta(days=90)
MAX_TTL = timedelta(days=3660)
MAX_CANDIDATES = 64
MAX_EVIDENCE_REFS = 256
MAX_TEXT = 512
MAX_REF = 1024
MAX_CONTEXT = 4096
DIGEST_V1 = "assay.case.v1"
DIGEST_V2 = "assay.case.v2"
DIGEST_VERSION = DIGEST_V2  # what new cases get
# A refused label's description lists the candidates within the runtime's bound on a
# description (status.MAX_DESCRIPTION_BYTES, 256), each clipped to a readable length.
CANDIDATES_SHOWN_BYTES = 180
CANDIDATE_SHOWN_BYTES = 48


def _check_json(value: JsonValue, path: str) -> str:
    try:
        return jcs(value)
    except (TypeError, ValueError) as error:
        raise bad(path, f"is not a representable JSON value ({error})") from None


def validate_case(
    data: CaseInput, now: datetime, prefix: str = "case", found: Violations | None = None
) -> None:
    """Every field rule of a new case: each violation recorded in ``found``, or, without
    one, raised together as one InvalidArgument."""
    into = Violations() if found is None else found
    into.extend(case_violations(data, now, prefix))
    if found is None:
        into.raise_if_any()


def _broken(check: Callable[..., object], *args: Any) -> list[FieldViolation]:
    """The violations the raising field check ``check(*args)`` reports ([] when it passes)."""
    try:
        check(*args)
    except InvalidArgument as error:
        return list(error.violations)
    return []


def case_violations(
    data: CaseInput, now: datetime, prefix: str = "case"
) -> Iterator[FieldViolation]:
    """Every broken field rule of a new case, in field order, lazily (``validate_case`` and
    a batch, ``batches``, list them all). Lists too long to accept are reported
    without checking their items, so a huge list costs one violation, not one per item."""
    yield from _broken(require_tenant, data.tenant, f"{prefix}.tenant")
    yield from _broken(require_text, data.subject, f"{prefix}.subject", MAX_TEXT)
    yield from _broken(require_text, data.predicate, f"{prefix}.predicate", MAX_TEXT)
    candidates = f"{prefix}.candidate_values"
    if not data.candidate_values:
        yield FieldViolation(candidates, "at least one candidate value is required")
    elif len(data.candidate_values) > MAX_CANDIDATES:
        yield FieldViolation(candidates, f"at most {MAX_CANDIDATES} candidate values")
    else:
        seen: dict[str, int] = {}
        for i, value in enumerate(data.candidate_values):
            path = f"{candidates}[{i}]"
            if value is None:
                yield FieldViolation(path, "must not be null")
                continue
            try:
                key = jcs(value)
            except (TypeError, ValueError) as error:
                yield FieldViolation(path, f"is not a representable JSON value ({error})")
                continue
            earlier = seen.setdefault(key, i)
            if earlier != i:
                # Named by position, never quoted: a candidate value may be arbitrarily large.
                yield FieldViolation(path, f"duplicates {candidates}[{earlier}]")
    if len(data.evidence_refs) > MAX_EVIDENCE_REFS:
        yield FieldViolation(f"{prefix}.evidence_refs", f"at most {MAX_EVIDENCE_REFS} references")
    else:
        for i, ref in enumerate(data.evidence_refs):
            yield from _broken(require_text, ref, f"{prefix}.evidence_refs[{i}]", MAX_REF)
    yield from _broken(bounded_text, data.context, f"{prefix}.context", MAX_CONTEXT)
    if data.local_verdict is None:
        yield FieldViolation(f"{prefix}.local_verdict", "is required (the system's own verdict)")
    else:
        yield from _broken(_check_json, data.local_verdict, f"{prefix}.local_verdict")
    origin, ref = data.lineage.origin, data.lineage.origin_ref
    yield from _broken(require_text, origin, f"{prefix}.lineage.origin", MAX_TEXT)
    yield from _broken(bounded_text, ref, f"{prefix}.lineage.origin_ref", MAX_REF)
    if data.expire_time is not None:
        if data.expire_time <= now:
            yield FieldViolation(f"{prefix}.expire_time", "must be in the future")
        elif data.expire_time - now > MAX_TTL:
            yield FieldViolation(f"{prefix}.expire_time", "must be within 10 years")
    yield from required_reviews_violations(data.required_reviews, f"{prefix}.required_reviews")
    yield from case_claims.claim_violations(data.claims, f"{prefix}.claims")
    yield from case_claims.spot_check_violations(data.spot_check_rate, f"{prefix}.spot_check_rate")


def required_reviews_violations(value: int, path: str) -> Iterator[FieldViolation]:
    """0 (the default) or a count ``required_reviews_allowed`` allows."""
    if value != 0 and not required_reviews_allowed(value):
        yield FieldViolation(
            path, f"must be 0 (the default) or {REQUIRED_REVIEWS_RANGE} (it is {value})"
        )


def content_digest(
    case_id: str,
    data: CaseInput | Case,
    create: datetime,
    expire: datetime,
    version: str,
) -> str:
    """The content digest in ``version``'s form (ValueError for a version not known here).
    ``data``: the content as supplied (``CaseInput``) or as stored (``Case``), read alike, so
    a stored case is re-checked by the rule that digested it.

    v2: sha256 of the JCS form of the object below plus ``"v": "assay.case.v2"``;
    v1: sha256 of the legacy canonical JSON of the object below (no ``v``)."""
    fields: dict[str, Any] = {
        "case_id": case_id,
        "tenant": data.tenant,
        "subject": data.subject,
        "predicate": data.predicate,
        "candidate_values": list(data.candidate_values),
        "evidence_refs": list(data.evidence_refs),
        "context": data.context,
        "local_verdict": data.local_verdict,
        "lineage": {"origin": data.lineage.origin, "origin_ref": data.lineage.origin_ref},
        "create_time": rfc3339(create),
        "expire_time": rfc3339(expire),
    }
    if data.required_reviews not in (0, DEFAULT_REQUIRED_REVIEWS):
        fields["required_reviews"] = data.required_reviews
    if data.claims:
        fields["claims"] = case_claims.claims_json(data.claims)
    if data.spot_check_rate:
        fields["spot_check_rate"] = data.spot_check_rate
    if version == DIGEST_V2:
        return jcs_digest({"v": DIGEST_V2, **fields})
    if version == DIGEST_V1:
        return digest(fields)
    raise ValueError(f"unknown case digest version {version!r}")


def new_case(
    case_id: str,
    data: CaseInput,
    now: datetime,
    prefix: str = "case",
    default_reviews: int = DEFAULT_REQUIRED_REVIEWS,
) -> Case:
    """A validated case with its expiry, overlap and content digest fixed (``prefix``: where
    the case is in its request, for the field paths of a violation; ``default_reviews``:
    the reviews per round when the case does not say)."""
    validate_case(data, now, prefix)
    data = replace(data, required_reviews=data.required_reviews or default_reviews)
    expire = data.expire_time if data.expire_time is not None else now + DEFAULT_TTL
    return Case(
        case_id=case_id,
        tenant=data.tenant,
        subject=data.subject,
        predicate=data.predicate,
        candidate_values=tuple(data.candidate_values),
        evidence_refs=tuple(data.evidence_refs),
        context=data.context,
        local_verdict=data.local_verdict,
        lineage=data.lineage,
        create_time=now,
        expire_time=expire,
        content_digest=content_digest(case_id, data, now, expire, DIGEST_VERSION),
        content_digest_version=DIGEST_VERSION,
        required_reviews=data.required_reviews,
        claims=data.claims,
        spot_check_rate=data.spot_check_rate,
    )


def candidate_key(case: Case, label: JsonValue) -> str | None:
    """The label's key (its JCS form) when it is one of the case's candidates, else None."""
    try:
        key = jcs(label)
    except (TypeError, ValueError):
        return None
    return key if key in {jcs(v) for v in case.candidate_values} else None


def not_a_candidate(case: Case, path: str = "label") -> InvalidArgument:
    """LABEL_NOT_A_CANDIDATE naming the candidates (in JCS form, each clipped, as many as fit
    in what the runtime sends of a description, then how many more). Only callers who are
    shown the candidates reach it: a reviewer's blinded view and an adjudicator's both
    show them, so the list reveals nothing hidden."""
    shown: list[str] = []
    used = 0
    for value in case.candidate_values:
        text = _clip(jcs(value), CANDIDATE_SHOWN_BYTES)
        size = len(text.encode()) + 2
        if used + size > CANDIDATES_SHOWN_BYTES:
            break
        shown.append(text)
        used += size
    rest = len(case.candidate_values) - len(shown)
    listed = ", ".join(shown) + (f" and {rest} more" if rest else "")
    return invalid_field(
        Reason.LABEL_NOT_A_CANDIDATE, path, f"is not one of the case's candidate values: {listed}"
    )


def _clip(text: str, limit: int) -> str:
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode("utf-8", "ignore") + "\u2026"


def is_expired(case: Case, now: datetime) -> bool:
    return now >= case.expire_time


def case_not_found(case_id: str) -> NotFound:
    """The one answer for a case that does not exist and for one in a tenant not granted."""
    return NotFound(Reason.CASE_NOT_FOUND, f"no case {case_id}", metadata={"case_id": case_id})


def case_digest(case: Case) -> str:
    """The content digest a stored case really has (``content_digest`` recomputed in the
    case's own ``content_digest_version``); ValueError for an unknown version."""
    return content_digest(
        case.case_id, case, case.create_time, case.expire_time, case.content_digest_version
    )
