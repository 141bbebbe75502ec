"""Rows to domain values and back. Every read of a stored row goes through here.

A row that cannot be decoded is ``DataLoss``, never a half-built value; a
gold-label row is handed to ``gold.checked_revision``, which re-checks its
digest before the value exists.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from assay.errors import DataLoss, Reason
from assay.services.adjudication import cases, gold
from assay.services.adjudication.canonical import canonical_json, from_micros, rfc3339, to_micros
from assay.services.adjudication.model import (
    Actor,
    AuditEvent,
    AuditEventType,
    Basis,
    Case,
    GoldLabelRevision,
    Lineage,
    Outcome,
    Resolution,
    Review,
    Reviewer,
    ReviewerKind,
)

Row = Sequence[Any]

REVIEWER_COLUMNS = (
    "reviewer_id, kind, attested_by, register_time, identity_issuer, identity_subject"
)
CASE_COLUMNS = (
    "case_id, tenant, subject, predicate, candidate_values, evidence_refs, context, "
    "local_verdict, lineage_origin, lineage_ref, create_time, expire_time, content_digest, "
    "digest_version"
)
REVIEW_COLUMNS = (
    "review_id, case_id, reviewer_id, round, outcome, label_key, reason, submit_time, salt"
)
RESOLUTION_COLUMNS = (
    "case_id, round, basis, label_key, adjudicator_reviewer_id, review_ids, resolve_time"
)
GOLD_COLUMNS = (
    "case_id, revision, previous_revision, round, tenant, basis, label_key, "
    "contributing_review_ids, contributing_reviewer_ids, adjudicator_reviewer_id, "
    "provenance, freeze_time, digest, digest_version"
)
# How many columns a case / gold-label row has: where what a query selects after them begins.
CASE_WIDTH = CASE_COLUMNS.count(",") + 1
GOLD_WIDTH = GOLD_COLUMNS.count(",") + 1
AUDIT_COLUMNS = (
    "sequence, event_type, occur_time, payload, previous_hash, hash, actor_issuer, actor_subject"
)
# Written with each event, not read back into it: which tenant may see the event.
AUDIT_INSERT_COLUMNS = f"{AUDIT_COLUMNS}, tenant"


def _corrupt(what: str, key: object, error: Exception) -> DataLoss:
    return DataLoss(
        Reason.STORED_RECORD_INVALID,
        f"stored {what} {key} cannot be read: {error}",
        metadata={"record": what, "key": str(key)},
    )


def _label(label_key: str) -> Any:
    return json.loads(label_key) if label_key else None


def reviewer(row: Row) -> Reviewer:
    try:
        return Reviewer(row[0], ReviewerKind(row[1]), row[2], from_micros(row[3]), row[4], row[5])
    except (ValueError, TypeError) as error:
        raise _corrupt("reviewer", row[0], error) from None


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
            case_id=row[0],
            tenant=row[1],
            subject=row[2],
            predicate=row[3],
            candidate_values=tuple(json.loads(row[4])),
            evidence_refs=tuple(json.loads(row[5])),
            context=row[6],
            local_verdict=json.loads(row[7]),
            lineage=Lineage(row[8], row[9]),
            create_time=from_micros(row[10]),
            expire_time=from_micros(row[11]),
            content_digest=row[12],
            content_digest_version=row[13],
        )
        if value.content_digest_version not in (cases.DIGEST_V1, cases.DIGEST_V2):
            raise ValueError(f"unknown digest version {value.content_digest_version!r}")
    except (ValueError, TypeError) as error:
        raise _corrupt("case", row[0], error) from None
    if check and cases.case_digest(value) != value.content_digest:
        raise _corrupt("case", row[0], ValueError("its content does not match content_digest"))
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
    )


def review(row: Row) -> Review:
    try:
        return Review(
            review_id=row[0],
            case_id=row[1],
            reviewer_id=row[2],
            round=row[3],
            outcome=Outcome(row[4]),
            label=_label(row[5]),
            label_key=row[5],
            reason=row[6],
            submit_time=from_micros(row[7]),
            salt=row[8],
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("review", row[0], error) from None


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
    )


def resolution(row: Row) -> Resolution:
    try:
        return Resolution(
            case_id=row[0],
            round=row[1],
            basis=Basis(row[2]),
            label=_label(row[3]),
            label_key=row[3],
            adjudicator_reviewer_id=row[4],
            review_ids=tuple(json.loads(row[5])),
            resolve_time=from_micros(row[6]),
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("resolution", f"{row[0]}#{row[1]}", error) from None


def resolution_params(value: Resolution) -> tuple[Any, ...]:
    return (
        value.case_id,
        value.round,
        value.basis.value,
        value.label_key,
        value.adjudicator_reviewer_id,
        json.dumps(list(value.review_ids)),
        to_micros(value.resolve_time),
    )


def gold_fields(row: Row) -> dict[str, Any]:
    """The digested fields of a stored revision, as ``gold.canonical_fields`` spells them."""
    try:
        return {
            "case_id": row[0],
            "revision": row[1],
            "previous_revision": row[2],
            "round": row[3],
            "tenant": row[4],
            "basis": row[5],
            "label_key": row[6],
            "contributing_review_ids": json.loads(row[7]),
            "contributing_reviewer_ids": json.loads(row[8]),
            "adjudicator_reviewer_id": row[9],
            "provenance": row[10],
            "freeze_time": row[11],
            "v": row[13],
        }
    except (ValueError, TypeError) as error:
        raise DataLoss(
            Reason.GOLD_LABEL_INVALID,
            f"stored gold label {row[0]}#{row[1]} cannot be read: {error}",
            metadata={"case_id": str(row[0]), "revision": str(row[1])},
        ) from None


def gold_label(row: Row) -> GoldLabelRevision:
    """A stored revision, digest re-checked (DataLoss on mismatch)."""
    return gold.checked_revision(gold_fields(row), row[12])


def gold_params(value: GoldLabelRevision) -> tuple[Any, ...]:
    fields = gold.canonical_fields(
        case_id=value.case_id,
        revision=value.revision,
        previous_revision=value.previous_revision,
        round_=value.round,
        tenant=value.tenant,
        basis=value.basis,
        label_key=value.label_key,
        contributing_review_ids=value.contributing_review_ids,
        contributing_reviewer_ids=value.contributing_reviewer_ids,
        adjudicator_reviewer_id=value.adjudicator_reviewer_id,
        provenance=value.provenance,
        freeze_time=value.freeze_time,
        version=value.digest_version,
    )
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
        payload = json.loads(row[3])
        if not isinstance(payload, dict):
            raise TypeError("payload is not an object")
        return AuditEvent(
            sequence=row[0],
            event_type=AuditEventType(row[1]),
            occur_time=datetime.fromisoformat(str(row[2]).replace("Z", "+00:00")),
            payload=payload,
            previous_hash=row[4],
            hash=row[5],
            # Either column set makes an actor, so clearing or forging one breaks the hash.
            actor=(
                Actor(row[6] or "", row[7] or "")
                if row[6] is not None or row[7] is not None
                else None
            ),
        )
    except (ValueError, TypeError) as error:
        raise _corrupt("audit event", row[0], error) from None


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
