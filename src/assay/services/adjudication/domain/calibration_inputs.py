"""From exported gold-label records to calibration observations: one per claim, checked.

A record is a case's latest gold-label revision with the claims the case was raised from
(``Case.claims``). Each claim of a labelled revision becomes an ``Observation``: did its
value (in RFC 8785 form) equal the label's? A label with no value (UNRESOLVED,
NOT_EVALUABLE), a case with no claims, a revision frozen after the checkpoint read at, and
a claim of a source kind the declared table lacks are left out and counted, so the report
says what it did not use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

from assay.services.adjudication.domain.calibration import LabelOrigin, Observation
from assay.services.adjudication.domain.digests import jcs, same_label_key
from assay.services.adjudication.domain.model import ExportRecord


@dataclass
class LeftOut:
    """What the observations do not include, counted."""

    without_claims: int = 0
    without_value: int = 0
    frozen_later: int = 0
    unknown_kinds: Counter[str] = field(default_factory=Counter)


def observations(
    records: Iterable[ExportRecord], tree_size: int, known: Collection[str], left: LeftOut
) -> Iterator[Observation]:
    """Each claim of each record labelled by an event within ``tree_size`` (the label's
    GOLD_LABEL_FROZEN sequence), of a source kind in ``known``; the rest counted in
    ``left``."""
    for record in records:
        revision = record.revision
        if record.event is None or record.event.sequence > tree_size:
            left.frozen_later += 1
            continue
        if not revision.basis.has_label:
            left.without_value += 1
            continue
        if not record.claims:
            left.without_claims += 1
            continue
        label = same_label_key(revision.label_key)
        rate = record.spot_check_rate
        origin = LabelOrigin.SPOT_CHECK if rate else LabelOrigin.CONFLICT
        for claim in record.claims:
            if claim.source_kind not in known:
                left.unknown_kinds[claim.source_kind] += 1
                continue
            yield Observation(
                label_id=revision.case_id,
                source=claim.source_kind,
                matched=jcs(claim.value) == label,
                provenance=revision.provenance,
                origin=origin,
                sampling_rate=rate or 1.0,
            )
