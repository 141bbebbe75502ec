"""AssignCases and UnassignCase requests from plain values: the rule by name (``"each"``,
``"round-robin"``, ``"least-loaded"``) or by number, for the client and the CLI alike."""

from __future__ import annotations

from collections.abc import Iterable

from assay.v1 import adjudication_service_pb2 as adj

RULES = {
    "each": adj.ASSIGNMENT_RULE_EACH,
    "round-robin": adj.ASSIGNMENT_RULE_ROUND_ROBIN,
    "least-loaded": adj.ASSIGNMENT_RULE_LEAST_LOADED,
}


def rule_value(rule: str | int) -> adj.AssignmentRule.ValueType:
    """The contract's number for ``rule``; ValueError naming the choices for an unknown one."""
    if isinstance(rule, int):
        return adj.AssignmentRule.ValueType(rule)
    key = rule.strip().lower().replace("_", "-")
    if key not in RULES:
        raise ValueError(f"unknown assignment rule {rule!r}: one of {', '.join(RULES)}")
    return RULES[key]


def assign_request(
    case_ids: Iterable[str],
    reviewer_ids: Iterable[str],
    rule: str | int = "each",
    per_case: int = 0,
    request_id: str = "",
) -> adj.AssignCasesRequest:
    return adj.AssignCasesRequest(
        request_id=request_id,
        case_ids=list(case_ids),
        reviewer_ids=list(reviewer_ids),
        rule=rule_value(rule),
        reviewers_per_case=per_case,
    )


def unassign_request(
    case_id: str, reviewer_ids: Iterable[str], to: Iterable[str] = (), request_id: str = ""
) -> adj.UnassignCaseRequest:
    return adj.UnassignCaseRequest(
        request_id=request_id,
        case_id=case_id,
        reviewer_ids=list(reviewer_ids),
        to_reviewer_ids=list(to),
    )
