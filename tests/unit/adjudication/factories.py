"""Builders of adjudication domain values for the unit tests (explicit test data only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from assay.services.adjudication.domain import cases
from assay.services.adjudication.domain.model import (
    Case,
    CaseInput,
    CaseSnapshot,
    JsonValue,
    Lineage,
    Outcome,
    Resolution,
    Review,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def case_input(**overrides: object) -> CaseInput:
    fields: dict[str, object] = {
        "tenant": "tenant-a",
        "subject": "api:payments.create",
        "predicate": "idempotency.mode",
        "candidate_values": ("key", "none"),
        "evidence_refs": ("claim-1",),
        "context": "",
        "local_verdict": "key",
        "lineage": Lineage("planner", "plan-1"),
        "expire_time": NOW + timedelta(days=1),
    }
    fields.update(overrides)
    return CaseInput(**fields)  # type: ignore[arg-type]


def make_case(case_id: str = "case-1", **overrides: object) -> Case:
    return cases.new_case(case_id, case_input(**overrides), NOW)


def review(
    reviewer: str,
    label: JsonValue = "key",
    outcome: Outcome = Outcome.LABEL,
    round_: int = 1,
    case_id: str = "case-1",
) -> Review:
    from assay.services.adjudication.domain.digests import canonical_json

    is_label = outcome is Outcome.LABEL
    return Review(
        review_id=f"rev-{reviewer}-{round_}",
        case_id=case_id,
        reviewer_id=reviewer,
        round=round_,
        outcome=outcome,
        label=label if is_label else None,
        label_key=canonical_json(label) if is_label else "",
        reason="" if is_label else "cannot tell",
        submit_time=NOW,
    )


def snapshot(
    *reviews: Review,
    revisions: int = 0,
    resolution: Resolution | None = None,
    case: Case | None = None,
) -> CaseSnapshot:
    return CaseSnapshot(case or make_case(), revisions, tuple(reviews), resolution)
