"""Each source kind's reliability, estimated from claims checked against frozen gold labels.

The input is one ``Observation`` per claim on a gold-labelled semantic: its source kind,
whether its value matched the label, the label's provenance, and how the semantic came to
be reviewed. Two honest figures come out per source kind (``calibration_figures``):

- the spot-check figure, from semantics sampled at random for review, each weighted by
  the inverse of its sampling rate: unbiased for the population the sample was drawn from;
- the conflict-only figure, from cases raised because sources disagreed, unweighted. It is
  biased: a conflict needs a source to be wrong, so it under-represents easy semantics and
  understates reliability. It is shown beside the other so the gap is visible.

Only HUMAN_ADJUDICATED labels count unless synthetic ones are asked for; once any is used,
every figure is marked synthetic. Input is checked whole: every bad observation is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from assay.errors import Reason, Violations
from assay.reliability_table import TableError, parse_table
from assay.services.adjudication.domain.calibration_figures import Figure, Tally, figures_of
from assay.services.adjudication.domain.fields import bad
from assay.services.adjudication.domain.model import Provenance
from assay.services.resolver.domain.claim_rules import KNOWN_SOURCES_KEY

# Fewer effective trials than this and a figure is INSUFFICIENT: at ten the 95% interval is
# still about 0.4 wide, which says "we do not know yet" in a number; below, say it in words.
DEFAULT_MIN_COUNT = 10


class LabelOrigin(Enum):
    """Why a semantic was reviewed: sampled at random, or raised from a conflict."""

    SPOT_CHECK = "SPOT_CHECK"
    CONFLICT = "CONFLICT"


@dataclass(frozen=True, slots=True)
class Observation:
    """One claim on a gold-labelled semantic, checked against the label.

    ``label_id`` names the gold label (or its case): a label and all its claims share one
    origin and sampling rate. ``sampling_rate`` is the probability with which a semantic
    like this one was sent to review, in (0, 1]; the conflict-only figure ignores it.
    """

    label_id: str
    source: str
    matched: bool
    provenance: Provenance
    origin: LabelOrigin
    sampling_rate: float = 1.0


@dataclass(frozen=True, slots=True)
class CalibrationOptions:
    include_synthetic: bool = False
    min_count: int = DEFAULT_MIN_COUNT


@dataclass(frozen=True, slots=True)
class SourceCalibration:
    """One source kind: its declared reliability and both figures."""

    source: str
    declared: float
    spot_check: Figure
    conflict_only: Figure


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """Every declared source kind (sorted), whether observed or not, and the label counts.

    ``spot_check_labels`` and ``conflict_labels`` count the labels used by origin;
    ``synthetic_labels_left_out`` those ignored because synthetic labels were not asked for;
    ``synthetic`` says that synthetic labels were used, and then marks every figure.
    """

    sources: tuple[SourceCalibration, ...]
    declared: Mapping[str, float]
    synthetic: bool
    min_count: int
    spot_check_labels: int
    conflict_labels: int
    synthetic_labels_left_out: int

    @property
    def conflict_share(self) -> float | None:
        """The share of the labels used that were raised from conflicts (None without labels)."""
        total = self.spot_check_labels + self.conflict_labels
        return self.conflict_labels / total if total else None


def calibrate(
    observations: Iterable[Observation],
    declared: Mapping[str, float],
    options: CalibrationOptions = CalibrationOptions(),
) -> CalibrationReport:
    """The report over ``observations`` against the ``declared`` reliability table.

    Raises ``InvalidArgument`` naming every bad field: a declared table the resolver would
    refuse, a source kind not in it (reason UNKNOWN_SOURCE, the known kinds in the error's
    metadata), a sampling rate outside (0, 1], a missing label id, a label seen with two
    origins, rates or provenances, a minimum count below one."""
    table = _checked_table(declared)
    if options.min_count < 1:
        raise bad("min_count", "must be at least 1")
    spot = {kind: Tally() for kind in table}
    conflict = {kind: Tally() for kind in table}
    design: dict[str, tuple[LabelOrigin, float, Provenance]] = {}
    left_out: set[str] = set()
    problems = Violations()
    unknown = synthetic = False
    human = Provenance.HUMAN_ADJUDICATED
    spot_origin = LabelOrigin.SPOT_CHECK
    for i, seen in enumerate(observations):
        label, rate, origin = seen.label_id, seen.sampling_rate, seen.origin
        if seen.source not in table:
            unknown = True
            problems.add(f"observations[{i}].source", "is not a source kind of the table")
            continue
        if not 0.0 < rate <= 1.0:
            problems.add(f"observations[{i}].sampling_rate", "must be in (0, 1]")
            continue
        if not label:
            problems.add(f"observations[{i}].label_id", "is required")
            continue
        found = (origin, rate, seen.provenance)
        if design.setdefault(label, found) != found:
            problems.add(
                f"observations[{i}]",
                "its label was seen with another origin, sampling rate or provenance",
            )
            continue
        if seen.provenance is not human:
            if not options.include_synthetic:
                left_out.add(label)
                continue
            synthetic = True
        if origin is spot_origin:
            spot[seen.source].add(label, seen.matched, 1.0 / rate)
        else:
            conflict[seen.source].add(label, seen.matched, 1.0)
    if problems:
        reason = Reason.UNKNOWN_SOURCE if unknown else None
        metadata = {KNOWN_SOURCES_KEY: ",".join(sorted(table))} if unknown else None
        problems.raise_if_any(reason=reason, metadata=metadata)
    kinds = sorted(table)
    values = [table[k] for k in kinds]
    spot_figures = figures_of([spot[k] for k in kinds], values, options.min_count, synthetic)
    conflict_figures = figures_of(
        [conflict[k] for k in kinds], values, options.min_count, synthetic
    )
    used = {label for label in design if label not in left_out}
    spot_labels = sum(1 for label in used if design[label][0] is spot_origin)
    return CalibrationReport(
        sources=tuple(
            SourceCalibration(k, table[k], s, c)
            for k, s, c in zip(kinds, spot_figures, conflict_figures, strict=True)
        ),
        declared=table,
        synthetic=synthetic,
        min_count=options.min_count,
        spot_check_labels=spot_labels,
        conflict_labels=len(used) - spot_labels,
        synthetic_labels_left_out=len(left_out),
    )


def _checked_table(declared: Mapping[str, float]) -> dict[str, float]:
    """The declared table as the resolver would load it, or InvalidArgument naming why not."""
    try:
        return parse_table({"sources": dict(declared)}, "declared")
    except TableError as error:
        raise bad("declared", str(error).removeprefix("declared: ")) from None
