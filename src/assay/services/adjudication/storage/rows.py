"""Rows to domain values and back. Every read of a stored row goes through here.

A row that cannot be decoded is ``DataLoss``, never a half-built value; a
gold-label row is handed to ``gold.checked_revision``, which re-checks its
digest before the value exists. Rows are read by column name, so both engines'
rows decode here unchanged (a ``sqlite3.Row``, an ``asyncpg.Record``, a dict
from ``named``) and a query may select its columns in any order or add its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from assay.errors import DataLoss, Reason
from assay.services.adjudication.domain import case_claims, cases, gold
from assay.services.adjudication.domain.agreement import RatedRound, Rating, category_of
from assay.services.adjudication.domain.digests import canonical_json
from assay.services.adjudication.domain.gold_agreement import GoldAnswer, gold_category
from assay.services.adjudication.domain.model import (
    Actor,
    AuditEvent,
    AuditEventType,
    Basis,
    Case,
    CaseClaim,
    GoldLabelRevision,
    Lineage,
    Outcome,
    Provenance,
    Resolution,
    Review,
    Reviewer,
    ReviewerKind,
)
from assay.services.adjudication.domain.times import (
    from_micros,
    from_rfc3339,
    rfc3339,
    to_micros,
)

if TYPE_CHECKING:
    from datetime import datetime

    from assay.services.adjudication.storage.interface import StoredResponse


class Row(Protocol):
    """A stored row, addressable by column name."""

    def __getitem__(self, column: str, /) -> Any: ...


REVIEWER_COLUMNS = (
    "reviewer_id, kind, attested_by, register_time, identity_issuer, identity_subject"
)
CASE_COLUMNS = (
    "case_id, tenant, subject, predicate, candidate_values, evidence_refs, context, "
    "local_verdict, lineage_origin, lineage_ref, create_time, expire_time, content_digest, "
    "digest_version, required_reviews, claims, spot_check_rate"
)
REVIEW_COLUMNS = (
    "review_id, case_id, reviewer_id, round, outcome, label_key, reason, submit_time, salt, "
    "rationale, supersedes"
)
RESOLUTION_COLUMNS = (
    "case_id, round, basis, label_key, adjudicator_reviewer_id, review_ids, resolve_time, rationale"
)
GOLD_COLUMNS = (
    "case_id, revision, previous_revision, round, tenant, basis, label_key, "
    "contributing_review_ids, contributing_reviewer_ids, adjudicator_reviewer_id, "
    "provenance, freeze_time, digest, digest_version"
)
AUDIT_COLUMNS = (
    "sequence, event_type, occur_time, payload, previous_hash, hash, actor_issuer, actor_subject"
)
# Written with each event, not read back into it: which tenant may see the event.
AUDIT_INSERT_COLUMNS = f"{AUDIT_COLUMNS}, tenant"
IDEMPOTENCY_COLUMNS = (
    "caller_issuer, caller_subject, request_id, method, request_digest, response, "
    "tenant, case_id, create_time"
)


def names(columns: str) -> tuple[str, ...]:
    """The column names of one of the ``*_COLUMNS`` lists above."""
    return tuple(column.strip() for column in columns.split(","))


def named(columns: str, values: Iterable[Any]) -> dict[str, Any]:
    """A row from ``values`` in the order of ``columns`` (say ``*_params``' tuples): for a
    caller holding values rather than a row."""
    return dict(zip(names(columns), values, strict=True))


def _corrupt(what: str, key: object, error: Exception) -> DataLoss:
    return DataLoss(
        Reason.STORED_RECORD_INVALID,
        f"stored {what} {key} cannot be read: {error}",
        metadata={"record": what, "key": str(key)},
    )


def _label(label_key: str) -> Any:
    return json.loads(label_key) if label_key else None


def _claims(text: str) -> tuple[CaseClaim, ...]:
    """A case's stored claims (``case_claims.claims_json``); ValueError when malformed."""
    found = json.loads(text)
    if not isinstance(found, list):
        raise ValueError("claims: expected a JSON array")
    return tuple(
        CaseClaim(
            source_kind=str(c["source_kind"]),
            value=c["value"],
            confidence=float(c["confidence"]),
            correlation_group=str(c["correlation_group"]),
            claim_id=str(c["claim_id"]),
            observe_time=from_rfc3339(c["observe_time"]) if c["observe_time"] else None,
        )
        for c in found
    )


def reviewer(row: Row) -> Reviewer:
    try:
        return Reviewer(
            row["reviewer_id"],
            ReviewerKind(row["kind"]),
            row["attested_by"],
            from_micros(row["register_time"]),
            row["identity_issuer"],
            row["identity_subject"],
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("reviewer", row["reviewer_id"], error) from None


def reviewer_params(value: Reviewer) -> tuple[Any, ...]:
    return (
        value.reviewer_id,
        value.kind.value,
        value.attested_by,
        to_micros(value.register_time),
        value.identity_issuer,
        value.identity_subject,
    )


def case(row: Row, check: bool = True) -> Case:
    """A stored case; ``check``: its content re-digested against its stored
    ``content_digest`` (DataLoss when they differ — the row was edited)."""
    try:
        value = Case(
            case_id=row["case_id"],
            tenant=row["tenant"],
            subject=row["subject"],
            predicate=row["predicate"],
            candidate_values=tuple(json.loads(row["candidate_values"])),
            evidence_refs=tuple(json.loads(row["evidence_refs"])),
            context=row["context"],
            local_verdict=json.loads(row["local_verdict"]),
            lineage=Lineage(row["lineage_origin"], row["lineage_ref"]),
            create_time=from_micros(row["create_time"]),
            expire_time=from_micros(row["expire_time"]),
            content_digest=row["content_digest"],
            content_digest_version=row["digest_version"],
            required_reviews=int(row["required_reviews"]),
            claims=_claims(row["claims"]),
            spot_check_rate=float(row["spot_check_rate"]),
        )
        if value.content_digest_version not in (cases.DIGEST_V1, cases.DIGEST_V2):
            raise ValueError(f"unknown digest version {value.content_digest_version!r}")
    except (ValueError, TypeError, KeyError) as error:
        raise _corrupt("case", row["case_id"], error) from None
    if check and cases.case_digest(value) != value.content_digest:
        raise _corrupt(
            "case", value.case_id, ValueError("its content does not match content_digest")
        )
    return value


def case_params(value: Case) -> tuple[Any, ...]:
    return (
        value.case_id,
        value.tenant,
        value.subject,
        value.predicate,
        canonical_json(list(value.candidate_values)),
        json.dumps(list(value.evidence_refs)),
        value.context,
        canonical_json(value.local_verdict),
        value.lineage.origin,
        value.lineage.origin_ref,
        to_micros(value.create_time),
        to_micros(value.expire_time),
        value.content_digest,
        value.content_digest_version,
        value.required_reviews,
        canonical_json(case_claims.claims_json(value.claims)),
        value.spot_check_rate,
    )


def review(row: Row) -> Review:
    try:
        return Review(
            review_id=row["review_id"],
            case_id=row["case_id"],
            reviewer_id=row["reviewer_id"],
            round=row["round"],
            outcome=Outcome(row["outcome"]),
            label=_label(label_key := row["label_key"]),
            label_key=label_key,
            reason=row["reason"],
            submit_time=from_micros(row["submit_time"]),
            salt=row["salt"],
            rationale=row["rationale"],
            supersedes=row["supersedes"] or "",
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("review", row["review_id"], error) from None


def review_params(value: Review) -> tuple[Any, ...]:
    return (
        value.review_id,
        value.case_id,
        value.reviewer_id,
        value.round,
        value.outcome.value,
        value.label_key,
        value.reason,
        to_micros(value.submit_time),
        value.salt,
        value.rationale,
        value.supersedes or None,  # NULL: a first submission (the column is unique)
    )


def resolution(row: Row) -> Resolution:
    try:
        return Resolution(
            case_id=row["case_id"],
            round=row["round"],
            basis=Basis(row["basis"]),
            label=_label(label_key := row["label_key"]),
            label_key=label_key,
            adjudicator_reviewer_id=row["adjudicator_reviewer_id"],
            review_ids=tuple(json.loads(row["review_ids"])),
            resolve_time=from_micros(row["resolve_time"]),
            rationale=row["rationale"],
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("resolution", f"{row['case_id']}#{row['round']}", error) from None


def resolution_params(value: Resolution) -> tuple[Any, ...]:
    return (
        value.case_id,
        value.round,
        value.basis.value,
        value.label_key,
        value.adjudicator_reviewer_id,
        json.dumps(list(value.review_ids)),
        to_micros(value.resolve_time),
        value.rationale,
    )


def gold_fields(row: Row) -> dict[str, Any]:
    """The digested fields of a stored revision, as ``gold.canonical_fields`` spells them."""
    try:
        return {
            "case_id": row["case_id"],
            "revision": row["revision"],
            "previous_revision": row["previous_revision"],
            "round": row["round"],
            "tenant": row["tenant"],
            "basis": row["basis"],
            "label_key": row["label_key"],
            "contributing_review_ids": json.loads(row["contributing_review_ids"]),
            "contributing_reviewer_ids": json.loads(row["contributing_reviewer_ids"]),
            "adjudicator_reviewer_id": row["adjudicator_reviewer_id"],
            "provenance": row["provenance"],
            "freeze_time": row["freeze_time"],
            "v": row["digest_version"],
        }
    except (ValueError, TypeError) as error:
        case_id, revision = row["case_id"], row["revision"]
        raise DataLoss(
            Reason.GOLD_LABEL_INVALID,
            f"stored gold label {case_id}#{revision} cannot be read: {error}",
            metadata={"case_id": str(case_id), "revision": str(revision)},
        ) from None


def gold_label(row: Row) -> GoldLabelRevision:
    """A stored revision, digest re-checked (DataLoss on mismatch)."""
    return gold.checked_revision(gold_fields(row), row["digest"])


def gold_params(value: GoldLabelRevision) -> tuple[Any, ...]:
    fields = gold.revision_fields(value)
    return (
        fields["case_id"],
        fields["revision"],
        fields["previous_revision"],
        fields["round"],
        fields["tenant"],
        fields["basis"],
        fields["label_key"],
        json.dumps(fields["contributing_review_ids"]),
        json.dumps(fields["contributing_reviewer_ids"]),
        fields["adjudicator_reviewer_id"],
        fields["provenance"],
        fields["freeze_time"],
        value.digest,
        fields["v"],
    )


def audit_event(row: Row) -> AuditEvent:
    from datetime import datetime

    try:
        payload = json.loads(row["payload"])
        if not isinstance(payload, dict):
            raise TypeError("payload is not an object")
        issuer, subject = row["actor_issuer"], row["actor_subject"]
        return AuditEvent(
            sequence=row["sequence"],
            event_type=AuditEventType(row["event_type"]),
            occur_time=datetime.fromisoformat(str(row["occur_time"]).replace("Z", "+00:00")),
            payload=payload,
            previous_hash=row["previous_hash"],
            hash=row["hash"],
            # Either column set makes an actor, so clearing or forging one breaks the hash.
            actor=(
                Actor(issuer or "", subject or "")
                if issuer is not None or subject is not None
                else None
            ),
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("audit event", row["sequence"], error) from None


def audit_params(value: AuditEvent, payload_json: str, tenant: str) -> tuple[Any, ...]:
    """``payload_json``: the payload's canonical JSON, as ``ledger.extend`` hashed it;
    ``tenant``: who may see the event ("" for principals granted every tenant only)."""
    actor = value.actor
    return (
        value.sequence,
        value.event_type.value,
        rfc3339(value.occur_time),
        payload_json,
        value.previous_hash,
        value.hash,
        actor.issuer if actor is not None else None,
        actor.subject if actor is not None else None,
        tenant,
    )


def idempotency_params(
    owner: tuple[str, str],
    request_id: str,
    stored: StoredResponse,
    tenant: str,
    case_id: str,
    at: datetime,
) -> tuple[Any, ...]:
    """An ``idempotency`` row in ``IDEMPOTENCY_COLUMNS`` order: a caller's (issuer, subject)
    and request id, the response stored for it, and when (``at``) it was stored."""
    return (
        *owner,
        request_id,
        stored.method,
        stored.request_digest,
        stored.response,
        tenant,
        case_id,
        to_micros(at),
    )


def rated_rounds(found: Iterable[Row]) -> list[RatedRound]:
    """The rounds of ``found`` (``predicates.rated_reviews``' rows: reviews by case, round,
    then submit order) that have at least two reviews, each as a unit of agreement."""
    units: list[RatedRound] = []
    key: tuple[str, int] | None = None
    held: list[Rating] = []
    for row in found:
        if (row["case_id"], row["round"]) != key:
            if len(held) >= 2:
                units.append(RatedRound(tuple(held)))
            key, held = (row["case_id"], row["round"]), []
        category = category_of(Outcome(row["outcome"]), row["label_key"])
        fixture = row["kind"] != ReviewerKind.HUMAN.value
        held.append(Rating(row["reviewer_id"], category, fixture))
    if len(held) >= 2:
        units.append(RatedRound(tuple(held)))
    return units


def gold_answers(found: Iterable[Row]) -> list[GoldAnswer]:
    """``predicates.gold_answers``' rows as answers beside their gold labels; a fixture
    reviewer, or a gold label frozen from a fixture's work, flags the answer."""
    answers: list[GoldAnswer] = []
    for row in found:
        try:
            fixture = row["kind"] != ReviewerKind.HUMAN.value or (
                Provenance(row["gold_provenance"]) is Provenance.SYNTHETIC_MECHANISM_TEST
            )
            answer = GoldAnswer(
                row["reviewer_id"],
                category_of(Outcome(row["outcome"]), row["label_key"]),
                gold_category(Basis(row["gold_basis"]), row["gold_label_key"]),
                fixture,
            )
        except (ValueError, TypeError) as error:
            raise _corrupt("gold label", row["case_id"], error) from None
        answers.append(answer)
    return answers
