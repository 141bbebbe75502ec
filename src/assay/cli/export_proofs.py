"""Each record of an exported corpus checked against the export's signed checkpoint, offline.

A record carries its gold label, and the GOLD_LABEL_FROZEN event that recorded the label
with that event's RFC 6962 inclusion proof in the tree the manifest's checkpoint signs. So
an auditor holding only the ledger's public key checks, per record: the label's digest is
recomputed from its fields (``gold.checked_revision``, the server's own rule); the event
names this case and revision and holds this digest and provenance; the event's chain hash
is recomputed from its fields (``ledger.event_hash``); and that hash is leaf
``sequence - 1`` of the signed tree. A label edited in the file, a forged event, or an event
not in the signed ledger fails one of these, and the first failing record is named.

An export with reviews (``--reviews``, ``include_reviews``) carries every review of each
case. The server checked each against its REVIEW_SUBMITTED event before sending it, but
those events commit to the answer with a salted digest and are not in the export, so
offline a review's answer is not proven. What is checked is that the reviews fit the
proven label: they are of its case, in round order, and hold every review the label names
as contributing, in the label's round, by a reviewer it names.

The rules come from the pure domain modules (no storage, no grpc): the verifier is the
algorithm the server uses, not a second spelling of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from assay.errors import DataLoss
from assay.services.adjudication.domain import gold, ledger
from assay.services.adjudication.domain.canonical import DIGEST_PREFIX, rfc3339
from assay.services.adjudication.domain.model import Actor, AuditEventType
from assay.tlog.checkpoint import Checkpoint
from assay.tlog.merkle import verify_inclusion
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2

# Revisions exported before the digest was versioned carry no digest_version.
LEGACY_GOLD_VERSION = "assay.gold.v1"


class BadRecord(ValueError):
    """A record that fails a check; the message says which and why."""


def _enum(value: int, enum: Any, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix)


def gold_fields(revision: gold_pb2.GoldLabelRevision) -> dict[str, Any]:
    """The revision's digested fields (``gold.canonical_fields``' spelling) from its message."""
    return {
        "v": revision.digest_version or LEGACY_GOLD_VERSION,
        "case_id": revision.case_id,
        "revision": revision.revision,
        "previous_revision": revision.previous_revision,
        "round": revision.round,
        "tenant": revision.tenant,
        "basis": _enum(revision.basis, gold_pb2.ResolutionBasis, "RESOLUTION_BASIS_"),
        "label_key": revision.label_key,
        "contributing_review_ids": list(revision.contributing_review_ids),
        "contributing_reviewer_ids": list(revision.contributing_reviewer_ids),
        "adjudicator_reviewer_id": revision.adjudicator_reviewer_id,
        "provenance": _enum(
            revision.provenance, gold_pb2.LabelingProvenance, "LABELING_PROVENANCE_"
        ),
        "freeze_time": rfc3339(revision.freeze_time.ToDatetime(tzinfo=UTC)),
    }


def recomputed_hash(event: pb.AuditEvent) -> str:
    """The chain hash of ``event`` recomputed from its fields."""
    actor = Actor(event.actor.issuer, event.actor.subject) if event.HasField("actor") else None
    return ledger.event_hash(
        event.sequence,
        AuditEventType(_enum(event.event_type, pb.AuditEventType, "AUDIT_EVENT_TYPE_")),
        event.occur_time.ToDatetime(tzinfo=UTC),
        dict(event.payload),
        event.previous_hash,
        actor,
    )


def _expect(recorded: Mapping[str, str], field: str, value: str) -> None:
    if recorded.get(field) != value:
        raise BadRecord(f"its ledger event's {field} is {recorded.get(field)!r}, not {value!r}")


def check_reviews(record: pb.CorpusRecord) -> None:
    """``BadRecord`` unless the record's reviews (if any) fit its (proven) label."""
    if not record.reviews:
        return
    revision = record.revision
    if any(r.case_id != revision.case_id for r in record.reviews):
        raise BadRecord("one of its reviews is of another case")
    rounds = [r.round for r in record.reviews]
    if rounds != sorted(rounds):
        raise BadRecord("its reviews are not in round order")
    given = {r.review_id: r for r in record.reviews}
    for review_id in revision.contributing_review_ids:
        found = given.get(review_id)
        if found is None:
            raise BadRecord(f"its label names review {review_id}, which is not among its reviews")
        if found.round != revision.round or found.reviewer_id not in set(
            revision.contributing_reviewer_ids
        ):
            raise BadRecord(
                f"review {review_id} is not of round {revision.round} by a reviewer its label names"
            )


def check_record(record: pb.CorpusRecord, signed: Checkpoint) -> None:
    """``BadRecord`` unless the record is proven by the tree ``signed`` commits to (and its
    reviews, if any, fit its label: ``check_reviews``)."""
    revision = record.revision
    if record.case.case_id != revision.case_id:
        raise BadRecord(f"its case is {record.case.case_id!r}, its label's {revision.case_id!r}")
    try:
        gold.checked_revision(gold_fields(revision), revision.digest)
    except DataLoss as error:
        raise BadRecord(f"the label does not match its digest: {error.message}") from None
    except ValueError as error:
        raise BadRecord(f"the label is unreadable: {error}") from None
    if not record.HasField("inclusion"):
        raise BadRecord("it carries no inclusion proof")
    inclusion = record.inclusion
    event = inclusion.event
    if event.event_type != pb.AUDIT_EVENT_TYPE_GOLD_LABEL_FROZEN:
        raise BadRecord("its ledger event is not a GOLD_LABEL_FROZEN event")
    payload = dict(event.payload)
    _expect(payload, "case_id", revision.case_id)
    _expect(payload, "revision", str(revision.revision))
    _expect(payload, "digest", revision.digest)
    _expect(payload, "provenance", gold_fields(revision)["provenance"])
    try:
        expected = recomputed_hash(event)
    except ValueError as error:
        raise BadRecord(f"its ledger event is unreadable: {error}") from None
    if expected != event.hash:
        raise BadRecord(f"its ledger event {event.sequence} does not match its hash")
    if inclusion.leaf_index != event.sequence - 1:
        raise BadRecord(
            f"its proof is for leaf {inclusion.leaf_index}, event {event.sequence} is leaf "
            f"{event.sequence - 1}"
        )
    leaf = bytes.fromhex(event.hash.removeprefix(DIGEST_PREFIX))
    if not verify_inclusion(
        leaf, inclusion.leaf_index, signed.size, list(inclusion.inclusion_path), signed.root
    ):
        raise BadRecord(
            f"its ledger event {event.sequence} is not proven to be in the signed tree of "
            f"{signed.size} event(s)"
        )
    check_reviews(record)
