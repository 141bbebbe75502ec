"""What CalibrateReliability answers: the report, the proposal and its file, what was left
out, and the root hash of the checkpoint the labels were read at."""

from __future__ import annotations

from dataclasses import dataclass

from assay.services.adjudication.domain.calibration import CalibrationReport
from assay.services.adjudication.domain.calibration_inputs import LeftOut
from assay.services.adjudication.domain.calibration_proposal import Proposal


@dataclass(frozen=True)
class Calibrated:
    report: CalibrationReport
    proposal: Proposal
    rendered: bytes
    left: LeftOut
    root_hash: bytes
