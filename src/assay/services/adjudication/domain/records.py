"""What the ledger committed to for each stored record, recomputed from the record.

Each function gives the payload fields the record's ledger event must hold (a reviewer's
REVIEWER_REGISTERED, a case's CASE_ENQUEUED, a review's REVIEW_SUBMITTED, a resolution's
CASE_RESOLVED, a gold label's GOLD_LABEL_FROZEN), so a row edited in the file (a review's
label, a reviewer's kind, a gold label forged with a recomputed digest) disagrees with the
event written when it was stored. A field missing from an event counts as "". The freeze,
every read and ``VerifyAuditChain`` compare through ``mismatch`` and report through
``record_loss``, so they agree on what counts as tampering.

``LATER_FIELDS`` are committed only by events written since they were added (a reviewer's
attestation digest and registration time, a review's submit time, a resolution's resolve
time, a case's expiry and ``shown`` digest; payloads hold digests, never free text). An
older event holds none, so its record is not checked on them: a stored ``attested_by`` or
time of such a record can be edited unseen. Every other field is checked as always.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.errors import DataLoss, Reason
from assay.services.adjudication.domain import approvals, case_claims, cases, openings, reviews
from assay.services.adjudication.domain.approvals import Approval, Step
from assay.services.adjudication.domain.digests import digest, jcs, text_digest
from assay.services.adjudication.domain.model import (
    Case,
    GoldLabelRevision,
    RecordKind,
    Resolution,
    Review,
    Reviewer,
)
from assay.services.adjudication.domain.times import to_micros

Commitment = dict[str, str]

# Committed by events written since these fields were added; checked only when present.
LATER_FIELDS = frozenset(
    {"attestation", "register_time", "submit_time", "resolve_time", "expire_time", "shown"}
)

EVENT_KEYS = {
    "REVIEWER_REGISTERED": (RecordKind.REVIEWER, ("reviewer_id",)),
    "CASE_ENQUEUED": (RecordKind.CASE, ("case_id",)),
    "REVIEW_SUBMITTED": (RecordKind.REVIEW, ("review_id",)),
    "CASE_RESOLVED": (RecordKind.RESOLUTION, ("case_id", "round")),
    "GOLD_LABEL_FROZEN": (RecordKind.GOLD_LABEL, ("case_id", "revision")),
    "APPROVAL_REQUESTED": (RecordKind.APPROVAL, ("approval_id",)),
    "APPROVAL_DECIDED": (RecordKind.APPROVAL_STEP, ("approval_id", "step")),
    "APPROVAL_REVOKED": (RecordKind.APPROVAL_STEP, ("approval_id", "step")),
    "APPROVAL_CONSUMED": (RecordKind.APPROVAL_STEP, ("approval_id", "step")),
    "APPROVAL_EXPIRED": (RecordKind.APPROVAL_STEP, ("approval_id", "step")),
    "CASE_ASSIGNED": (RecordKind.CASE_ASSIGNMENT, ("case_id", "change")),
    "CASE_UNASSIGNED": (RecordKind.CASE_ASSIGNMENT, ("case_id", "change")),
    "CASE_REASSIGNED": (RecordKind.CASE_ASSIGNMENT, ("case_id", "change")),
}
# Kinds recorded by several event types whose payloads alone do not say which: what a
# record is compared with includes the event's type (``committed``).
_TYPED_KINDS = frozenset({RecordKind.CASE_ASSIGNMENT})


def record_key(event_type: str, payload: Mapping[str, str]) -> tuple[RecordKind, str] | None:
    """The record an event commits to, or None for events about no single record."""
    found = EVENT_KEYS.get(event_type)
    if found is None:
        return None
    kind, names = found
    return kind, "#".join(str(payload.get(name, "")) for name in names)


def committed(event_type: str, payload: Mapping[str, str]) -> Mapping[str, str]:
    """What an event commits its record to: its payload, with ``event_type`` added for the
    kinds whose payloads do not tell their event types apart (an assignment change)."""
    found = EVENT_KEYS.get(event_type)
    if found is None or found[0] not in _TYPED_KINDS:
        return payload
    return {**payload, "event_type": event_type}


def reviewer_commitment(value: Reviewer) -> Commitment:
    return {
        "reviewer_id": value.reviewer_id,
        "kind": value.kind.value,
        "identity_issuer": value.identity_issuer,
        "identity_subject": value.identity_subject,
        "attestation": digest(value.attested_by),
        "register_time": str(to_micros(value.register_time)),
    }


def case_commitment(value: Case) -> Commitment | None:
    """None when the row's content no longer has its stored digest."""
    if cases.case_digest(value) != value.content_digest:
        return None
    return enqueued_payload(value)


def enqueued_payload(value: Case) -> Commitment:
    """The CASE_ENQUEUED payload of a case whose ``content_digest`` is known to be its own
    (computed from the content just now): ``case_commitment`` without re-checking it.
    ``shown`` commits to the blinded view alone, so an export proves it without revealing
    what ``content`` also covers (``openings``)."""
    return {
        "case_id": value.case_id,
        "tenant": value.tenant,
        "content": value.content_digest,
        "expire_time": str(to_micros(value.expire_time)),
        "shown": openings.shown_digest(openings.shown_field_digests(value)),
        # Absent for a case without them (as in events written before cases carried them).
        **({"claims": case_claims.claims_digest(value.claims)} if value.claims else {}),
        **({"spot_check_rate": jcs(value.spot_check_rate)} if value.spot_check_rate else {}),
    }


def review_commitment(value: Review) -> Commitment:
    return {
        "review_id": value.review_id,
        "case_id": value.case_id,
        "reviewer_id": value.reviewer_id,
        "round": str(value.round),
        "answer": reviews.answer_commitment(value),
        "submit_time": str(to_micros(value.submit_time)),
        # "" for a first submission (an event that holds none counts as "").
        "supersedes": value.supersedes,
    }


def resolution_commitment(value: Resolution) -> Commitment:
    return {
        "case_id": value.case_id,
        "round": str(value.round),
        "basis": value.basis.value,
        "label": digest(value.label_key) if value.label_key else "",
        "adjudicator_reviewer_id": value.adjudicator_reviewer_id,
        "review_ids": ",".join(value.review_ids),
        "resolve_time": str(to_micros(value.resolve_time)),
        "rationale": rationale_digest(value.rationale),
    }


def rationale_digest(rationale: str) -> str:
    """What CASE_RESOLVED commits to for a rationale: ``sha256:`` + hex SHA-256 of its UTF-8
    text ("" when there is none, as events written before rationales hold none)."""
    return text_digest(rationale) if rationale else ""


def resolution_id(value: Resolution) -> str:
    return f"{value.case_id}#{value.round}"


def gold_commitment(value: GoldLabelRevision) -> Commitment:
    """The revision's digest (already re-checked against its fields when the row was read)
    and provenance: a row forged with a recomputed digest differs from the frozen one."""
    return {
        "case_id": value.case_id,
        "revision": str(value.revision),
        "digest": value.digest,
        "provenance": value.provenance.value,
    }


def gold_id(value: GoldLabelRevision) -> str:
    return f"{value.case_id}#{value.revision}"


def approval_commitment(value: Approval) -> Commitment | None:
    """None when the row's content no longer has its stored digest."""
    if approvals.approval_digest(value) != value.content_digest:
        return None
    return requested_payload(value)


def requested_payload(value: Approval) -> Commitment:
    """The APPROVAL_REQUESTED payload of an approval whose ``content_digest`` is its own."""
    return {
        "approval_id": value.approval_id,
        "tenant": value.tenant,
        "content": value.content_digest,
        "candidate_digest": value.candidate.candidate_digest,
        "quorum": str(value.quorum),
        "expire_time": str(to_micros(value.expire_time)),
    }


def step_commitment(value: Step) -> Commitment:
    """A step's event payload: the reason by digest (payloads hold no free text), the
    actor in the event's own ``actor``."""
    actor = value.actor
    return {
        "approval_id": value.approval_id,
        "step": str(value.seq),
        "kind": value.kind.value,
        "reason": digest(value.reason) if value.reason else "",
        "candidate_digest": value.candidate_digest,
        "occur_time": str(to_micros(value.occur_time)),
        "actor": "" if actor is None else f"{actor.issuer} {actor.subject}",
    }


def step_id(value: Step) -> str:
    return f"{value.approval_id}#{value.seq}"


def kind_name(kind: RecordKind) -> str:
    """How messages and ``ErrorInfo`` metadata name a kind: "gold label", "review"."""
    return kind.value.lower().replace("_", " ")


def disagreement(expected: Commitment | None, recorded: Mapping[str, str]) -> str:
    """ "" when ``recorded`` holds every field of ``expected`` (a ``LATER_FIELDS`` one only
    if the event has it), else what differs."""
    if expected is None:
        return "its content does not match its stored digest"
    wrong = sorted(
        k
        for k, v in expected.items()
        if str(recorded.get(k, "")) != v and (k in recorded or k not in LATER_FIELDS)
    )
    return f"{', '.join(wrong)} differ(s) from the ledger" if wrong else ""


def mismatch(expected: Commitment | None, recorded: Mapping[str, str] | None) -> str:
    """``disagreement``, or "has no ledger event" when nothing recorded the record."""
    return "has no ledger event" if recorded is None else disagreement(expected, recorded)


def record_loss(kind: RecordKind, key: str, why: str, doing: str = "") -> DataLoss:
    """DATA_LOSS naming the record (``ErrorInfo`` metadata ``record`` and ``key``) whose row
    disagrees with its ledger event; ``doing``: what is refused because of it."""
    name = kind_name(kind)
    tail = f"; {doing}" if doing else ""
    return DataLoss(
        Reason.STORED_RECORD_INVALID,
        f"stored {name} {key} does not match the ledger ({why}){tail}",
        metadata={"record": name, "key": key},
    )


def event_loss(sequence: int, why: str) -> DataLoss:
    """DATA_LOSS naming an audit event that fails its re-check on read (``ErrorInfo``
    metadata ``sequence``)."""
    return DataLoss(
        Reason.STORED_RECORD_INVALID,
        f"audit event {sequence} is not what the ledger recorded ({why})",
        metadata={"record": "audit event", "sequence": str(sequence)},
    )
