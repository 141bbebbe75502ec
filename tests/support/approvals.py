"""An acquisition candidate that needs approval, as the planner writes it.

The approval tests (service and console) each ask for approval of the same kind of
candidate: a probe the plan blocked for want of a side-effect grant. ``candidate`` builds it
with its ``candidate_digest`` bound to the subject and predicate it is asked under, so the
service accepts it; the keyword arguments vary it for the refusals a test wants to see.
"""

from __future__ import annotations

from assay.candidate_digest import candidate_digest
from assay.v1 import plan_pb2

SUBJECT, PREDICATE = "payments-api", "idempotency.mode"


def candidate(
    subject: str = SUBJECT,
    predicate: str = PREDICATE,
    *,
    probe: int = plan_pb2.PROBE_KIND_QUERY_CI_STATUS,
    effects: tuple[int, ...] = (plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL,),
    availability: int = plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
    blocking: tuple[int, ...] = (plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED,),
) -> plan_pb2.AcquisitionCandidate:
    """A candidate whose ``effects`` are required and not granted, its digest included."""
    message = plan_pb2.AcquisitionCandidate(
        candidate_id="query_ci_status/process_result",
        probe=probe,  # type: ignore[arg-type]
        target_signal_class=plan_pb2.SIGNAL_CLASS_PROCESS_RESULT,
        availability=availability,  # type: ignore[arg-type]
        required_side_effects=effects,  # type: ignore[arg-type]
        missing_grants=effects,  # type: ignore[arg-type]
        blocking_reasons=blocking,  # type: ignore[arg-type]
    )
    message.candidate_digest = candidate_digest(subject, predicate, message)
    return message
