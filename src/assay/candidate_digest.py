"""The digest that names one planned acquisition: what an approval is granted for.

The planner writes it on every candidate (``AcquisitionCandidate.candidate_digest``), and
the approval service recomputes it from the candidate a request carries, refuses a
request whose digest is not its candidate's, and lets a grant be consumed only with the
digest it was granted for. Both derive it here, so "the same action" means one thing.

The action is what would be done to the world: the subject and predicate planned for, the
probe, the signal class it targets and every side effect it needs. Ranking dimensions
(discrimination, independence, cost) and the policy's verdict are left out: the same
action planned again, after new evidence or under another policy, keeps its digest.
"""

from __future__ import annotations

import hashlib

import rfc8785

from assay.v1 import plan_pb2

PREFIX = "sha256:"


def candidate_digest(subject: str, predicate: str, candidate: plan_pb2.AcquisitionCandidate) -> str:
    """``sha256:`` + hex SHA-256 of the RFC 8785 JSON of the candidate's action (enum values
    by name, side effects ascending by number, as the plan lists them)."""
    action = {
        "subject": subject,
        "predicate": predicate,
        "probe": plan_pb2.ProbeKind.Name(candidate.probe),
        "target_signal_class": plan_pb2.SignalClass.Name(candidate.target_signal_class),
        "required_side_effects": [
            plan_pb2.SideEffectClass.Name(effect)
            for effect in sorted(candidate.required_side_effects)
        ],
    }
    return PREFIX + hashlib.sha256(rfc8785.dumps(action)).hexdigest()
