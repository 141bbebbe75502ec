"""CalibrateReliability's answer from the domain's report and proposal."""

from __future__ import annotations

from assay.services.adjudication.domain.calibration_figures import Figure, FigureStatus
from assay.services.adjudication.domain.calibration_result import Calibrated
from assay.v1 import adjudication_service_pb2 as pb


def figure(value: Figure) -> pb.CalibrationFigure:
    computed = value.status is FigureStatus.ESTIMATED
    message = pb.CalibrationFigure(
        status=pb.AGREEMENT_STATUS_COMPUTED if computed else pb.AGREEMENT_STATUS_INSUFFICIENT,
        count=value.count,
        labels=value.labels,
        effective_count=value.effective_count,
        declared_outside=bool(value.declared_outside),
        synthetic=value.synthetic,
    )
    if computed:
        for name, number in (
            ("estimate", value.estimate),
            ("posterior_mean", value.posterior_mean),
            ("ci_lower", value.low),
            ("ci_upper", value.high),
        ):
            if number is not None:
                setattr(message, name, number)
    return message


def response(found: Calibrated) -> pb.CalibrateReliabilityResponse:
    report, left = found.report, found.left
    entries = {e.source: e for e in found.proposal.entries}
    return pb.CalibrateReliabilityResponse(
        sources=[
            pb.SourceCalibration(
                source_kind=s.source,
                declared=s.declared,
                spot_check=figure(s.spot_check),
                conflict_only=figure(s.conflict_only),
                proposed=entries[s.source].proposed,
                proposal_reason=entries[s.source].reason.value,
            )
            for s in report.sources
        ],
        tree_size=found.proposal.checkpoint.tree_size,
        root_hash=found.root_hash,
        spot_check_labels=report.spot_check_labels,
        conflict_labels=report.conflict_labels,
        synthetic_labels_left_out=report.synthetic_labels_left_out,
        synthetic=report.synthetic,
        labels_without_claims=left.without_claims,
        labels_without_value=left.without_value,
        labels_frozen_later=left.frozen_later,
        unknown_source_kinds=dict(left.unknown_kinds),
        proposal=found.rendered,
    )
