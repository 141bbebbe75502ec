"""A refused call said in plain words: what the person reads instead of a status code.

Each reason the services send maps to a sentence; anything else falls back to the
service's own message (already written for people) with the status name, never a
traceback. The request id is shown so an operator can find the server's log line.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from assay.client.errors import AssayCallError

_BY_REASON = {
    "ERROR_REASON_ROLE_REQUIRED": "Your account does not have the role this page needs.",
    "ERROR_REASON_TENANT_NOT_PERMITTED": "That belongs to a tenant your account cannot see.",
    "ERROR_REASON_IDENTITY_MISMATCH": "You can only act as yourself.",
    "ERROR_REASON_CREDENTIALS_EXPIRED": "Your sign-in has expired. Sign in again.",
    "ERROR_REASON_CREDENTIALS_INVALID": "Your sign-in is not accepted by the services.",
    "ERROR_REASON_CASE_NOT_FOUND": "There is no such case, or it is not yours to see.",
    "ERROR_REASON_REVIEWER_NOT_FOUND": "You are not registered as a reviewer yet: ask an operator.",
    "ERROR_REASON_REVIEW_ALREADY_SUBMITTED": "You have already reviewed this case in this round.",
    "ERROR_REASON_ROUND_COMPLETE": "This case has all the reviews it needs for now.",
    "ERROR_REASON_CASE_EXPIRED": "This case has expired.",
    "ERROR_REASON_ROUND_ALREADY_RESOLVED": "This round is decided already: nothing in it changes.",
    "ERROR_REASON_CASE_FROZEN": "This case is frozen into a gold label.",
    "ERROR_REASON_CASE_NOT_ASSIGNED": "This case is assigned to other reviewers.",
    "ERROR_REASON_REVIEW_NOT_FOUND": "There is no such review, or it is not yours.",
    "ERROR_REASON_REVIEW_SUPERSEDED": (
        "That review has been amended or withdrawn since: only the latest can change."
    ),
    "ERROR_REASON_REVIEW_WITHDRAWN": "That review is withdrawn: answer the case again instead.",
    "ERROR_REASON_APPROVER_IS_REQUESTER": (
        "You asked for this approval yourself, so someone else has to decide it."
    ),
    "ERROR_REASON_APPROVER_ALREADY_DECIDED": "You have already decided on this approval.",
    "ERROR_REASON_APPROVAL_NOT_PENDING": "This approval is no longer waiting for a decision.",
    "ERROR_REASON_APPROVAL_NOT_FOUND": "There is no such approval, or it is not yours to see.",
    "ERROR_REASON_OVERLOADED": "The service is busy. Try again in a moment.",
    "ERROR_REASON_STORAGE_UNAVAILABLE": "The database is unavailable. Try again in a moment.",
}
_BY_CODE = {
    grpc.StatusCode.UNAVAILABLE: "The service cannot be reached right now.",
    grpc.StatusCode.DEADLINE_EXCEEDED: "The service took too long to answer.",
    grpc.StatusCode.PERMISSION_DENIED: "Your account may not do this.",
    grpc.StatusCode.UNAUTHENTICATED: "Your sign-in is not accepted. Sign in again.",
}


@dataclass(frozen=True)
class Refusal:
    """What a page shows of a failed call."""

    headline: str
    detail: str
    request_id: str
    signed_out: bool = False


def refusal(error: AssayCallError) -> Refusal:
    headline = _BY_REASON.get(error.reason) or _BY_CODE.get(error.code, "The service refused this.")
    return Refusal(
        headline,
        error.message,
        error.request_id,
        signed_out=error.code is grpc.StatusCode.UNAUTHENTICATED,
    )
