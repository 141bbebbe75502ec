"""A proposed reliability table, with each entry's evidence, as canonical bytes.

What a proposal may change, and why:

- an entry changes only when its spot-check figure is ESTIMATED and its 95% interval
  excludes the declared value; agreeing data is no reason to churn the table, and the
  conflict-only figure, biased (``calibration``), never moves an entry;
- the new value is the posterior mean (it minimises expected squared error, the Brier
  score's loss, and is never 0 or 1), rounded, and at most ``PROPOSAL_CEILING``;
- ``human_review`` is never changed: measuring it against human gold labels is circular;
- every declared kind appears: the file is a whole table ``--reliability-table`` loads
  (ignoring its ``calibration`` member), and ``parse_table`` accepts it.

The same report and checkpoint render the same bytes: sorted keys, no spaces, evidence
rounded to ``DECIMALS`` places, every float in its shortest round-trip form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from assay.reliability_table import parse_table
from assay.services.adjudication.domain.calibration import CalibrationReport, SourceCalibration
from assay.services.adjudication.domain.calibration_figures import (
    INTERVAL_NAME,
    PRIOR_NAME,
    Figure,
    FigureStatus,
)
from assay.services.adjudication.domain.fields import bad

DECIMALS = 4
PROPOSAL_CEILING = 0.99
FIXED_KINDS = frozenset({"human_review"})
FORMAT_VERSION = "assay.calibration.v1"


class EntryReason(Enum):
    """Why an entry has the value it has."""

    CALIBRATED = "CALIBRATED"  # the interval excludes the declared value: posterior mean
    CONSISTENT = "CONSISTENT"  # the declared value lies inside the interval: kept
    INSUFFICIENT = "INSUFFICIENT"  # too few spot-checked claims: kept
    FIXED = "FIXED"  # the gold labels' own source kind: kept


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where the gold labels were read: the ledger's tree size and root hash then."""

    tree_size: int
    root_hash: str = ""


@dataclass(frozen=True, slots=True)
class ProposalEntry:
    source: str
    declared: float
    proposed: float
    reason: EntryReason
    evidence: SourceCalibration


@dataclass(frozen=True, slots=True)
class Proposal:
    entries: tuple[ProposalEntry, ...]
    checkpoint: Checkpoint
    report: CalibrationReport

    @property
    def table(self) -> dict[str, float]:
        """The proposed table, every declared kind in it."""
        return {e.source: e.proposed for e in self.entries}

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(e.source for e in self.entries if e.reason is EntryReason.CALIBRATED)


def propose(report: CalibrationReport, checkpoint: Checkpoint) -> Proposal:
    """The table the report supports; raises ``InvalidArgument`` for a bad checkpoint."""
    if checkpoint.tree_size < 0:
        raise bad("checkpoint.tree_size", "must not be negative")
    entries = tuple(_entry(found) for found in report.sources)
    proposal = Proposal(entries, checkpoint, report)
    # A guard, not a branch: every value is in [0, PROPOSAL_CEILING] by construction.
    parse_table({"sources": proposal.table}, "proposal")
    return proposal


def _entry(found: SourceCalibration) -> ProposalEntry:
    figure = found.spot_check
    kept = found.declared
    if found.source in FIXED_KINDS:
        return ProposalEntry(found.source, kept, kept, EntryReason.FIXED, found)
    if figure.status is FigureStatus.INSUFFICIENT or figure.posterior_mean is None:
        return ProposalEntry(found.source, kept, kept, EntryReason.INSUFFICIENT, found)
    if not figure.declared_outside:
        return ProposalEntry(found.source, kept, kept, EntryReason.CONSISTENT, found)
    value = round(min(figure.posterior_mean, PROPOSAL_CEILING), DECIMALS)
    return ProposalEntry(found.source, kept, value, EntryReason.CALIBRATED, found)


def render_proposal(proposal: Proposal) -> bytes:
    """The proposal file: ``{"sources": table, "calibration": evidence}``, canonical."""
    report = proposal.report
    document = {
        "sources": proposal.table,
        "calibration": {
            "format": FORMAT_VERSION,
            "checkpoint": {
                "tree_size": proposal.checkpoint.tree_size,
                "root_hash": proposal.checkpoint.root_hash,
            },
            "prior": PRIOR_NAME,
            "interval": INTERVAL_NAME,
            "min_count": report.min_count,
            "synthetic": report.synthetic,
            "labels": {
                "spot_check": report.spot_check_labels,
                "conflict": report.conflict_labels,
                "synthetic_left_out": report.synthetic_labels_left_out,
            },
            "entries": {e.source: _evidence(e) for e in proposal.entries},
        },
    }
    return (_encode(document) + "\n").encode("ascii")


def _evidence(entry: ProposalEntry) -> dict[str, object]:
    return {
        "declared": entry.declared,
        "proposed": entry.proposed,
        "reason": entry.reason.value,
        "spot_check": _figure(entry.evidence.spot_check),
        "conflict_only": _figure(entry.evidence.conflict_only),
    }


def _figure(figure: Figure) -> dict[str, object]:
    return {
        "status": figure.status.value,
        "count": figure.count,
        "labels": figure.labels,
        "effective_count": _rounded(figure.effective_count),
        "synthetic": figure.synthetic,
        "estimate": _rounded(figure.estimate),
        "posterior_mean": _rounded(figure.posterior_mean),
        "low": _rounded(figure.low),
        "high": _rounded(figure.high),
        "declared_outside": figure.declared_outside,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, DECIMALS)


def _encode(value: object) -> str:
    """Canonical JSON: sorted keys, no whitespace, floats in their shortest round-trip form.

    Evidence is rounded to ``DECIMALS`` places before it gets here; table values are not, so
    a kept declared value is written exactly as it was declared."""
    if value is None or isinstance(value, bool | int | str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a proposal holds only finite numbers")
        return repr(value + 0.0)  # + 0.0 turns -0.0 into 0.0
    if isinstance(value, Mapping):
        items = sorted(value.items())
        return "{" + ",".join(f"{_encode(str(k))}:{_encode(v)}" for k, v in items) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")
