"""Assignment's messages: requests to domain values, assignments and queue items back."""

from __future__ import annotations

from collections.abc import Sequence

from assay.services.adjudication.domain.assignment import Assigned, AssignmentRule, QueueItem
from assay.services.adjudication.domain.assignment_requests import AssignRequest, UnassignRequest
from assay.services.adjudication.wire import convert
from assay.v1 import adjudication_service_pb2 as pb

_RULES = {
    pb.ASSIGNMENT_RULE_EACH: AssignmentRule.EACH,
    pb.ASSIGNMENT_RULE_ROUND_ROBIN: AssignmentRule.ROUND_ROBIN,
    pb.ASSIGNMENT_RULE_LEAST_LOADED: AssignmentRule.LEAST_LOADED,
}


def assign_request(request: pb.AssignCasesRequest) -> AssignRequest:
    return AssignRequest(
        tuple(request.case_ids),
        tuple(request.reviewer_ids),
        _RULES.get(request.rule),
        request.reviewers_per_case,
    )


def unassign_request(request: pb.UnassignCaseRequest) -> UnassignRequest:
    return UnassignRequest(
        request.case_id, tuple(request.reviewer_ids), tuple(request.to_reviewer_ids)
    )


def case_assignment(value: Assigned) -> pb.CaseAssignment:
    return pb.CaseAssignment(case_id=value[0], reviewer_ids=value[1])


def assignments(values: Sequence[Assigned]) -> pb.AssignCasesResponse:
    return pb.AssignCasesResponse(assignments=[case_assignment(v) for v in values])


def queue_item(value: QueueItem) -> pb.BlindedCase:
    """The blinded case, marked when it is assigned to the reviewer (never to whom else)."""
    message = convert.blinded(value.case)
    message.assigned = value.assigned
    return message
