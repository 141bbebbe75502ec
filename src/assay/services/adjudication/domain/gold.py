"""Gold-label revisions: built once, digested, and re-verified on every read.

A revision is metadata only — ids, enums, the label's canonical JSON and a
digest; no free text — so it can outlive its case (tenant deletion) without
holding anyone's data. The digest covers every field and the previous
revision's number, so a row edited in place, or a revision renumbered into
another's place, no longer matches. ``checked_revision`` is the only way a
stored row becomes a ``GoldLabelRevision``: a mismatch raises ``DataLoss``,
so no caller can receive a forged row by forgetting to check.

The digest is versioned per row (``digest_version``, also the ``v`` member of
the digested object): ``assay.gold.v2`` is RFC 8785 (JCS), with the label key in
JCS form, for every revision frozen now; ``assay.gold.v1`` is the legacy
canonical JSON, kept so revisions frozen before still verify. A row is checked
in its own version's form only; an unknown version is ``DataLoss``. Relabelling
a v1 row as v2 changes the digested ``v`` member, so it no longer matches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from assay.errors import DataLoss, Reason
from assay.services.adjudication.domain.digests import digest, jcs_digest, same_label_key
from assay.services.adjudication.domain.model import (
    Basis,
    CaseSnapshot,
    GoldLabelRevision,
    Provenance,
    Resolution,
    ReviewerKind,
)
from assay.services.adjudication.domain.reviewers import provenance_for
from assay.services.adjudication.domain.times import rfc3339

DIGEST_V1 = "assay.gold.v1"
DIGEST_V2 = "assay.gold.v2"
DIGEST_VERSION = DIGEST_V2  # what new revisions get
_DIGEST_BY_VERSION = {DIGEST_V1: digest, DIGEST_V2: jcs_digest}


def versioned_digest(fields: Mapping[str, Any]) -> str:
    """The digest of ``canonical_fields`` (its ``v`` member picks the canonical form);
    KeyError for a version not known here."""
    return _DIGEST_BY_VERSION[fields["v"]](fields)


def canonical_fields(
    *,
    case_id: str,
    revision: int,
    previous_revision: int,
    round_: int,
    tenant: str,
    basis: Basis,
    label_key: str,
    contributing_review_ids: tuple[str, ...],
    contributing_reviewer_ids: tuple[str, ...],
    adjudicator_reviewer_id: str,
    provenance: Provenance,
    freeze_time: datetime,
    version: str = DIGEST_VERSION,
) -> dict[str, Any]:
    """The digested form; documented in docs/adjudication.md so auditors can recompute it."""
    return {
        "v": version,
        "case_id": case_id,
        "revision": revision,
        "previous_revision": previous_revision,
        "round": round_,
        "tenant": tenant,
        "basis": basis.value,
        "label_key": label_key,
        "contributing_review_ids": list(contributing_review_ids),
        "contributing_reviewer_ids": list(contributing_reviewer_ids),
        "adjudicator_reviewer_id": adjudicator_reviewer_id,
        "provenance": provenance.value,
        "freeze_time": rfc3339(freeze_time),
    }


def revision_fields(value: GoldLabelRevision) -> dict[str, Any]:
    """The digested form of a revision already built (stored, exported or re-checked)."""
    return canonical_fields(
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


def new_revision(
    snapshot: CaseSnapshot,
    resolution: Resolution,
    reviewer_kinds: Mapping[str, ReviewerKind],
    now: datetime,
) -> GoldLabelRevision:
    """The next revision of the case from its current round's resolution."""
    revision = snapshot.revision_count + 1
    by_id = {r.review_id: r for r in snapshot.round_reviews}
    review_ids = tuple(sorted(resolution.review_ids))
    reviewers = tuple(sorted({by_id[i].reviewer_id for i in review_ids}))
    contributors = set(reviewers)
    if resolution.adjudicator_reviewer_id:
        contributors.add(resolution.adjudicator_reviewer_id)
    # A contributor whose kind is unknown counts as not human: never upgrade provenance.
    kinds = [reviewer_kinds.get(c, ReviewerKind.MECHANISM_TEST_FIXTURE) for c in contributors]
    fields = canonical_fields(
        case_id=snapshot.case.case_id,
        revision=revision,
        previous_revision=revision - 1,
        round_=resolution.round,
        tenant=snapshot.case.tenant,
        basis=resolution.basis,
        # A round resolved before JCS holds a legacy key ("1e-07"); the revision spells it in
        # its own version's form.
        label_key=same_label_key(resolution.label_key),
        contributing_review_ids=review_ids,
        contributing_reviewer_ids=reviewers,
        adjudicator_reviewer_id=resolution.adjudicator_reviewer_id,
        provenance=provenance_for(kinds),
        freeze_time=now,
        version=DIGEST_VERSION,
    )
    return _build(fields, versioned_digest(fields))


def _build(fields: Mapping[str, Any], stored_digest: str) -> GoldLabelRevision:
    label_key: str = fields["label_key"]
    return GoldLabelRevision(
        case_id=fields["case_id"],
        revision=fields["revision"],
        previous_revision=fields["previous_revision"],
        round=fields["round"],
        tenant=fields["tenant"],
        basis=Basis(fields["basis"]),
        label=json.loads(label_key) if label_key else None,
        label_key=label_key,
        contributing_review_ids=tuple(fields["contributing_review_ids"]),
        contributing_reviewer_ids=tuple(fields["contributing_reviewer_ids"]),
        adjudicator_reviewer_id=fields["adjudicator_reviewer_id"],
        provenance=Provenance(fields["provenance"]),
        freeze_time=datetime.fromisoformat(fields["freeze_time"].replace("Z", "+00:00")),
        digest=stored_digest,
        digest_version=fields["v"],
    )


def _invalid(case_id: str, revision: object, why: str) -> DataLoss:
    return DataLoss(
        Reason.GOLD_LABEL_INVALID,
        f"stored gold label {case_id}#{revision} is invalid: {why}",
        metadata={"case_id": case_id, "revision": str(revision)},
    )


def checked_revision(fields: Mapping[str, Any], stored_digest: str) -> GoldLabelRevision:
    """Re-validate a stored row (``fields`` as ``canonical_fields`` spells them, ``v`` the
    row's digest version) and recompute its digest in that version's form; DataLoss on any
    mismatch or an unknown version."""
    case_id = str(fields.get("case_id", ""))
    revision = fields.get("revision")
    try:
        if not isinstance(revision, int) or revision < 1:
            raise _invalid(case_id, revision, "revision must be >= 1")
        if fields["previous_revision"] != revision - 1 or fields["round"] != revision:
            raise _invalid(case_id, revision, "revision, previous revision and round disagree")
        if not fields["contributing_review_ids"]:
            raise _invalid(case_id, revision, "no contributing reviews")
        basis = Basis(fields["basis"])
        Provenance(fields["provenance"])
        if basis.has_label != bool(fields["label_key"]):
            need = "needs" if basis.has_label else "forbids"
            raise _invalid(case_id, revision, f"basis {basis.value} {need} a label")
        version = fields["v"]
        if version not in _DIGEST_BY_VERSION:
            raise _invalid(case_id, revision, f"unknown digest version {version!r}")
        recomputed = versioned_digest({"v": version, **{k: fields[k] for k in _DIGESTED}})
    except DataLoss:
        raise
    except (KeyError, ValueError, TypeError) as error:
        raise _invalid(case_id, revision, f"unreadable ({error})") from None
    if recomputed != stored_digest:
        raise DataLoss(
            Reason.GOLD_LABEL_DIGEST_MISMATCH,
            f"gold label {case_id}#{revision} does not match its digest: it was altered",
            metadata={"case_id": case_id, "revision": str(revision)},
        )
    return _build(fields, stored_digest)


_DIGESTED = (
    "case_id",
    "revision",
    "previous_revision",
    "round",
    "tenant",
    "basis",
    "label_key",
    "contributing_review_ids",
    "contributing_reviewer_ids",
    "adjudicator_reviewer_id",
    "provenance",
    "freeze_time",
)
