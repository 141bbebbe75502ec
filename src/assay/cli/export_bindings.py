"""An exported record's fields compared with the openings of the ledger digests that commit to
them (``openings`` on the server side), each named by its path in the file.

Each function is given what is already proven (a payload ``export_events`` proved, a digest
that payload holds) and checks one opening against it, then every field against the
opening: a gold label's fields against ``revisionDigested``, a blinded case's against
``caseBinding.fieldDigests``, a review's answer against ``reviewBindings[i].answerOpening``.
So a field edited in the file is named as that field, and an edited opening as the opening.

Field names are the file's (proto JSON, ``labelKey``); the rules are the server's pure domain
modules (``gold``, ``openings``, ``canonical``), so the verifier is the algorithm the server
uses, not a second spelling of it.
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any

from assay.cli.export_events import BadRecord, enum_name
from assay.protovalues import value_to_json
from assay.services.adjudication.domain import case_claims, openings
from assay.services.adjudication.domain.digests import jcs, same_label_key, text_digest
from assay.services.adjudication.domain.model import CaseClaim
from assay.services.adjudication.domain.times import rfc3339
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2

# Revisions exported before the digest was versioned carry no digest_version.
LEGACY_GOLD_VERSION = "assay.gold.v1"
# The blinded case's JSON names of the shown fields.
CASE_NAMES = {
    "case_id": "caseId",
    "subject": "subject",
    "predicate": "predicate",
    "candidate_values": "candidateValues",
    "evidence_refs": "evidenceRefs",
    "context": "context",
}


def camel(name: str) -> str:
    """A proto field name as proto JSON spells it: ``label_key`` -> ``labelKey``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def gold_fields(revision: gold_pb2.GoldLabelRevision) -> dict[str, Any]:
    """The revision's digested fields (``gold.canonical_fields``' spelling) from its message."""
    return {
        "v": revision.digest_version or LEGACY_GOLD_VERSION,
        "case_id": revision.case_id,
        "revision": revision.revision,
        "previous_revision": revision.previous_revision,
        "round": revision.round,
        "tenant": revision.tenant,
        "basis": enum_name(revision.basis, gold_pb2.ResolutionBasis, "RESOLUTION_BASIS_"),
        "label_key": revision.label_key,
        "contributing_review_ids": list(revision.contributing_review_ids),
        "contributing_reviewer_ids": list(revision.contributing_reviewer_ids),
        "adjudicator_reviewer_id": revision.adjudicator_reviewer_id,
        "provenance": enum_name(
            revision.provenance, gold_pb2.LabelingProvenance, "LABELING_PROVENANCE_"
        ),
        # Finer than the microseconds the ledger keeps: spelled so that it cannot match.
        "freeze_time": rfc3339(revision.freeze_time.ToDatetime(tzinfo=UTC))
        if revision.freeze_time.nanos % 1000 == 0
        else revision.freeze_time.ToJsonString(),
    }


def check_label(where: str, has_label: bool, label: Any, label_key: str) -> None:
    """``BadRecord`` (``where.label``) unless the label is the one its (proven) key spells."""
    if not label_key:
        if has_label:
            raise BadRecord(f"{where}.label", "is set, but labelKey says there is no label")
        return
    try:
        spelled = jcs(value_to_json(label)) if has_label else None
    except (TypeError, ValueError):
        spelled = None
    if spelled != same_label_key(label_key):
        raise BadRecord(f"{where}.label", f"is not the label its labelKey {label_key} spells")


def check_revision(record: pb.CorpusRecord) -> None:
    """Each field of ``record.revision`` against ``revisionDigested``, whose SHA-256 must be
    the revision's digest (already proven against its GOLD_LABEL_FROZEN event)."""
    revision = record.revision
    text = record.revision_digested
    if text_digest(text) != revision.digest:
        raise BadRecord("revisionDigested", "does not hash to revision.digest: it was altered")
    try:
        digested = json.loads(text)
    except json.JSONDecodeError:
        raise BadRecord("revisionDigested", "is not JSON") from None
    exported = gold_fields(revision)
    if not isinstance(digested, dict) or set(digested) != set(exported):
        raise BadRecord("revisionDigested", "does not hold the digested fields of a revision")
    for name, value in exported.items():
        if digested[name] != value:
            field = "digestVersion" if name == "v" else camel(name)
            raise BadRecord(f"revision.{field}", f"is not what the ledger recorded ({value!r})")
    check_label("revision", revision.HasField("label"), revision.label, revision.label_key)


def shown_values(case: pb.BlindedCase) -> dict[str, Any]:
    """The shown fields of an exported case as JSON values, by name."""
    return {
        "case_id": case.case_id,
        "subject": case.subject,
        "predicate": case.predicate,
        "candidate_values": [value_to_json(v) for v in case.candidate_values],
        "evidence_refs": list(case.evidence_refs),
        "context": case.context,
    }


def shown_digests(case: pb.BlindedCase) -> dict[str, str]:
    """Each shown field's digest as the exported case spells it ("" when unreadable)."""
    found: dict[str, str] = {}
    for name, value in shown_values(case).items():
        try:
            found[name] = openings.field_digest(value)
        except (TypeError, ValueError):
            found[name] = ""
    return found


def check_case(case: pb.BlindedCase, binding: pb.CaseBinding, shown: str) -> None:
    """Each shown field of ``case`` against ``binding.fieldDigests``, whose object must hash
    to ``shown`` (from the case's proven CASE_ENQUEUED event)."""
    digests = dict(binding.field_digests)
    found = shown_digests(case)
    if set(digests) != set(openings.SHOWN_FIELDS) or openings.shown_digest(digests) != shown:
        altered = [name for name in openings.SHOWN_FIELDS if digests.get(name) != found[name]]
        raise BadRecord(
            "caseBinding.fieldDigests",
            "does not hash to the shown digest its CASE_ENQUEUED event recorded: "
            + (f"its {', '.join(altered)} was altered" if altered else "it was altered"),
        )
    for name in openings.SHOWN_FIELDS:
        if found[name] != digests[name]:
            raise BadRecord(f"case.{CASE_NAMES[name]}", "is not what the ledger recorded")


def check_answer(where: str, review: pb.Review, opening_at: str, opening: str, answer: str) -> None:
    """``review``'s outcome, label key, reason and rationale (``where``: its path) against
    ``opening`` (found at ``opening_at``), which must hash to the ``answer`` its proven
    REVIEW_SUBMITTED event holds: [salt, outcome, label_key, reason] (no salt before answers
    were salted), with the rationale appended when there is one (salted reviews only)."""
    if text_digest(opening) != answer:
        raise BadRecord(
            opening_at, "does not hash to its REVIEW_SUBMITTED event's answer: it was altered"
        )
    try:
        opened = json.loads(opening)
    except json.JSONDecodeError:
        raise BadRecord(opening_at, "is not JSON") from None
    if not isinstance(opened, list) or len(opened) not in (3, 4, 5):
        raise BadRecord(opening_at, "is not [salt, outcome, label_key, reason(, rationale)]")
    answered = opened[-4:] if len(opened) == 5 else [*opened[-3:], ""]
    exported = (
        enum_name(review.outcome, pb.ReviewOutcome, "REVIEW_OUTCOME_"),
        review.label_key,
        review.reason,
        review.rationale,
    )
    for name, recorded, value in zip(
        ("outcome", "labelKey", "reason", "rationale"), answered, exported, strict=True
    ):
        if recorded != value:
            raise BadRecord(f"{where}.{name}", f"is not what the ledger recorded ({recorded!r})")
    check_label(where, review.HasField("label"), review.label, review.label_key)


def evidence_digests(record: pb.CorpusRecord) -> dict[str, str]:
    """What the case's CASE_ENQUEUED event holds for the record's claims and spot-check rate
    (``records.enqueued_payload``): each key only when there is something to commit to."""
    found: dict[str, str] = {}
    if record.claims:
        claims = [
            CaseClaim(
                source_kind=c.source_kind,
                value=value_to_json(c.value) if c.HasField("value") else None,
                confidence=c.confidence,
                correlation_group=c.correlation_group,
                claim_id=c.claim_id,
                observe_time=(
                    c.observe_time.ToDatetime(UTC) if c.HasField("observe_time") else None
                ),
            )
            for c in record.claims
        ]
        found["claims"] = case_claims.claims_digest(claims)
    if record.spot_check_rate:
        found["spot_check_rate"] = jcs(record.spot_check_rate)
    return found
