"""No numeric score ever crosses the wire: nothing reachable from EvidencePlan is a number.

The ranking behind the order of candidates is an authored heuristic; exposing
its score would invite callers to read it as a probability. This walks the
descriptors of EvidencePlan and of every message reachable from it, so a new
numeric field anywhere in the plan fails here until someone decides otherwise.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from assay.v1 import plan_pb2, planner_service_pb2

NUMERIC = {
    FieldDescriptor.TYPE_DOUBLE,
    FieldDescriptor.TYPE_FLOAT,
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}


def reachable(root: Descriptor) -> dict[str, Descriptor]:
    """Every message type reachable from ``root`` through its fields (root included)."""
    seen: dict[str, Descriptor] = {}
    stack = [root]
    while stack:
        message = stack.pop()
        if message.full_name in seen:
            continue
        seen[message.full_name] = message
        stack.extend(f.message_type for f in message.fields if f.message_type is not None)
    return seen


def numeric_fields(root: Descriptor) -> list[str]:
    return sorted(
        f"{m.full_name}.{f.name}"
        for m in reachable(root).values()
        for f in m.fields
        if f.type in NUMERIC
    )


class TestPlanHasNoNumbers:
    def test_no_field_reachable_from_evidence_plan_is_numeric(self) -> None:
        """EvidencePlan and everything it contains carries enums, strings and bools only."""
        assert numeric_fields(plan_pb2.EvidencePlan.DESCRIPTOR) == []

    def test_the_walk_reaches_candidates_and_gaps(self) -> None:
        """The walk covers the candidate and gap messages (it is not vacuous)."""
        names = set(reachable(plan_pb2.EvidencePlan.DESCRIPTOR))
        assert {"assay.v1.AcquisitionCandidate", "assay.v1.EvidenceGap"} <= names

    def test_the_walk_would_catch_a_number(self) -> None:
        """The same walk finds the display-only doubles of the resolution in the response."""
        found = numeric_fields(planner_service_pb2.PlanEvidenceResponse.DESCRIPTOR)
        assert "assay.v1.SemanticResolution.confidence" in found
