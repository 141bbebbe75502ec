"""A case's claims between the contract (``CaseClaim``) and the domain."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from assay.errors import FieldViolation
from assay.protovalues import json_to_value, value_to_json
from assay.services.adjudication.domain.model import CaseClaim
from assay.services.adjudication.wire.scalars import from_timestamp, timestamp
from assay.v1 import adjudication_service_pb2 as pb


def claims_in(
    messages: Iterable[pb.CaseClaim], path: str
) -> tuple[tuple[CaseClaim, ...], tuple[FieldViolation, ...]]:
    """The request's claims (an unset value reads as null, which validation refuses), and a
    violation for each time no datetime holds (``path``: where the claims are)."""
    found: list[CaseClaim] = []
    unreadable: list[FieldViolation] = []
    for i, m in enumerate(messages):
        observed = None
        if m.HasField("observe_time"):
            try:
                observed = from_timestamp(m.observe_time)
            except (OverflowError, ValueError, OSError):
                unreadable.append(
                    FieldViolation(f"{path}[{i}].observe_time", "is not a valid timestamp")
                )
        found.append(
            CaseClaim(
                source_kind=m.source_kind,
                value=value_to_json(m.value) if m.HasField("value") else None,
                confidence=m.confidence,
                correlation_group=m.correlation_group,
                claim_id=m.claim_id,
                observe_time=observed,
            )
        )
    return tuple(found), tuple(unreadable)


def claims_out(claims: Sequence[CaseClaim]) -> list[pb.CaseClaim]:
    found = []
    for c in claims:
        message = pb.CaseClaim(
            claim_id=c.claim_id,
            source_kind=c.source_kind,
            confidence=c.confidence,
            correlation_group=c.correlation_group,
        )
        json_to_value(c.value, message.value)
        if c.observe_time is not None:
            message.observe_time.CopyFrom(timestamp(c.observe_time))
        found.append(message)
    return found
