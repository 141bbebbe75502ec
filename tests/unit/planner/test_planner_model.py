"""The planner's domain enums carry the contract's names and numbers, so conversion is a cast."""

from __future__ import annotations

from enum import IntEnum

import pytest
from google.protobuf.descriptor import EnumDescriptor

from assay.services.planner.domain import model as m
from assay.v1 import plan_pb2, resolution_pb2

PAIRS: list[tuple[type[IntEnum], EnumDescriptor, str]] = [
    (m.SignalClass, plan_pb2.SignalClass.DESCRIPTOR, "SIGNAL_CLASS_"),
    (m.SignalAvailability, plan_pb2.SignalAvailability.DESCRIPTOR, "SIGNAL_AVAILABILITY_"),
    (m.SideEffect, plan_pb2.SideEffectClass.DESCRIPTOR, "SIDE_EFFECT_CLASS_"),
    (m.ProbeKind, plan_pb2.ProbeKind.DESCRIPTOR, "PROBE_KIND_"),
    (m.GapKind, plan_pb2.GapKind.DESCRIPTOR, "GAP_KIND_"),
    (m.GapSource, plan_pb2.GapSource.DESCRIPTOR, "GAP_SOURCE_"),
    (m.Availability, plan_pb2.Availability.DESCRIPTOR, "AVAILABILITY_"),
    (m.AvailabilityReason, plan_pb2.AvailabilityReason.DESCRIPTOR, "AVAILABILITY_REASON_"),
    (m.Independence, plan_pb2.Independence.DESCRIPTOR, "INDEPENDENCE_"),
    (m.Discrimination, plan_pb2.Discrimination.DESCRIPTOR, "DISCRIMINATION_"),
    (m.DiscriminationBasis, plan_pb2.DiscriminationBasis.DESCRIPTOR, "DISCRIMINATION_BASIS_"),
    (m.OutcomeAssumption, plan_pb2.OutcomeAssumption.DESCRIPTOR, "OUTCOME_ASSUMPTION_"),
    (m.Recency, plan_pb2.Recency.DESCRIPTOR, "RECENCY_"),
    (m.CostBand, plan_pb2.CostBand.DESCRIPTOR, "COST_BAND_"),
    (m.LatencyBand, plan_pb2.LatencyBand.DESCRIPTOR, "LATENCY_BAND_"),
    (m.MeasurementBasis, plan_pb2.MeasurementBasis.DESCRIPTOR, "MEASUREMENT_BASIS_"),
    (m.ActionRisk, plan_pb2.ActionRisk.DESCRIPTOR, "ACTION_RISK_"),
    (m.PrivacyExposure, plan_pb2.PrivacyExposure.DESCRIPTOR, "PRIVACY_EXPOSURE_"),
    (m.SupportBand, plan_pb2.SupportBand.DESCRIPTOR, "SUPPORT_BAND_"),
    (m.PlanOutcome, plan_pb2.PlanOutcome.DESCRIPTOR, "PLAN_OUTCOME_"),
    (m.ResolutionStatus, resolution_pb2.ResolutionStatus.DESCRIPTOR, "RESOLUTION_STATUS_"),
    (m.RationaleFlag, resolution_pb2.RationaleFlag.DESCRIPTOR, "RATIONALE_FLAG_"),
]


class TestEnumParity:
    @pytest.mark.parametrize(("domain", "descriptor", "prefix"), PAIRS, ids=lambda p: str(p))
    def test_names_and_numbers_match_the_contract(
        self, domain: type[IntEnum], descriptor: EnumDescriptor, prefix: str
    ) -> None:
        """Every domain member is the contract value of the same name and number, and vice versa."""
        contract = {v.name.removeprefix(prefix): v.number for v in descriptor.values}
        assert {member.name: member.value for member in domain} == contract
