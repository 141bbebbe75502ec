"""Gold labels returned to the resolver as claims, without lying about where they came from.

The loop closes when a frozen gold label becomes a claim the resolver can weigh. The label's
provenance decides its trust class (``source_for``):

- ``HUMAN_ADJUDICATED`` (every contributor a human) -> ``human_review``, the table's 1.0: a
  person's adjudicated decision is the strongest evidence Assay knows.
- ``SYNTHETIC_MECHANISM_TEST`` (a fixture contributed) -> ``mechanism_test_fixture``
  (``SYNTHETIC_SOURCE``), never ``human_review``: a fixture's answer is scripted, and fed back
  as a human decision it would be fabricated ground truth at the top reliability. The
  resolver must list that kind in its table (at a low value); when it does not, it rejects
  the claim as an unknown source, which is the honest failure.

Labels without a value (UNRESOLVED, NOT_EVALUABLE) yield no claim: "people could not decide"
is not evidence for any value. The claim itself shows its provenance (``gold_label_claim``).
"""

from __future__ import annotations

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import claim_pb2, gold_pb2

HUMAN_SOURCE = "human_review"
SYNTHETIC_SOURCE = "mechanism_test_fixture"


def source_for(provenance: gold_pb2.LabelingProvenance.ValueType) -> str:
    """The source kind a gold label of this provenance is reported under."""
    if provenance == gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED:
        return HUMAN_SOURCE
    # UNSPECIFIED is treated as synthetic: anything not proven human is not human.
    return SYNTHETIC_SOURCE


def gold_label_claim(
    revision: gold_pb2.GoldLabelRevision, case: adj.BlindedCase
) -> claim_pb2.Claim | None:
    """The claim a frozen gold label makes about its case's (subject, predicate), if any.

    Its provenance stays visible: ``method`` names the provenance and the resolution basis,
    ``source_ref`` the case, ``source_revision`` the revision and its digest, and the case
    is the claim's declared correlation group (revisions of one case are one line of
    evidence)."""
    if not revision.HasField("label"):
        return None
    provenance = gold_pb2.LabelingProvenance.Name(revision.provenance).removeprefix(
        "LABELING_PROVENANCE_"
    )
    basis = gold_pb2.ResolutionBasis.Name(revision.basis).removeprefix("RESOLUTION_BASIS_")
    claim = claim_pb2.Claim(
        id=f"gold:{revision.case_id}:r{revision.revision}",
        subject=case.subject,
        predicate=case.predicate,
        source=source_for(revision.provenance),
        source_ref=f"adjudication:case/{revision.case_id}",
        source_revision=f"r{revision.revision} {revision.digest}",
        method=f"gold-label/{provenance}/{basis}".lower(),
        confidence=1.0,
        correlation_group=f"adjudication:{revision.case_id}",
    )
    claim.value.CopyFrom(revision.label)
    if revision.HasField("freeze_time"):
        claim.observe_time.CopyFrom(revision.freeze_time)
    return claim


def is_synthetic(claim: claim_pb2.Claim) -> bool:
    """Whether a claim is a fixture's gold label (for display: never call it human)."""
    return claim.source == SYNTHETIC_SOURCE
