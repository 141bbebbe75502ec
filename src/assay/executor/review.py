"""The HUMAN_REVIEW probe: put a conflict to reviewers, and later take their gold label back.

Asking people is asynchronous: enqueueing a case is the whole acquisition for
now, and the run stops there (``AWAITING_REVIEW``). A later run given the case
id collects the case's latest frozen gold label as a claim (see
``assay.client.gold`` for how provenance decides its source kind).

The case shows reviewers the competing values and references to the claims
behind them; the system's own verdict (the resolver's leader) goes to
``local_verdict``, and the claims as the resolver weighed them go to
``claims`` (for calibration), neither of which the blinded reviewer view has. Its
``context`` deliberately names no value, so it cannot leak the verdict.
The enqueue's ``request_id`` is derived from the case content, so running the
executor twice on the same conflict enqueues one case, not two.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.builders import enqueue_case_request, from_value
from assay.client.gold import gold_label_claim
from assay.executor.model import Outcome, ProbeResult, Settings
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2, resolution_pb2

MAX_EVIDENCE_REFS = 256


def case_request(
    resolution: resolution_pb2.SemanticResolution,
    settings: Settings,
    origin_ref: str,
    spot_check_rate: float = 0.0,
) -> adj.EnqueueCaseRequest | None:
    """The case for a conflict (or, with ``spot_check_rate``, for a resolved semantic sampled
    at that rate), or None when there are no values to choose between."""
    values = [from_value(v.value) for v in resolution.values]
    if not values:
        return None
    refs = sorted({w.claim_ref for v in resolution.values for w in v.claims})[:MAX_EVIDENCE_REFS]
    verdict = from_value(resolution.leader.value) if resolution.HasField("leader") else values[0]
    request = enqueue_case_request(
        tenant=settings.tenant,
        subject=settings.subject,
        predicate=settings.predicate,
        candidate_values=values,
        local_verdict=verdict,
        evidence_refs=refs,
        context=(
            f"{len(values)} values are asserted for {settings.predicate} of "
            f"{settings.subject}; the evidence references name the claims behind them."
        ),
        origin="executor",
        origin_ref=origin_ref,
    )
    request.case.claims.extend(case_claims(resolution))
    request.case.spot_check_rate = spot_check_rate
    content = json.dumps(
        [settings.tenant, settings.subject, settings.predicate, sorted(map(str, values)), refs]
        + ([spot_check_rate] if spot_check_rate else []),
        sort_keys=True,
    )
    request.request_id = "executor-" + hashlib.sha256(content.encode()).hexdigest()[:40]
    return request


def case_claims(resolution: resolution_pb2.SemanticResolution) -> list[adj.CaseClaim]:
    """The claims behind each competing value, as the resolver weighed them (the confidence
    recovered from weight = confidence x reliability), for calibration against the label
    reviewers give; at most ``MAX_EVIDENCE_REFS``, by claim reference."""
    found = []
    for support in resolution.values:
        for weight in support.claims:
            confidence = weight.effective_weight / weight.reliability if weight.reliability else 0.0
            found.append(
                adj.CaseClaim(
                    claim_id=weight.claim_ref[:128],
                    source_kind=weight.source,
                    value=support.value,
                    confidence=min(max(confidence, 0.0), 1.0),
                    correlation_group=weight.correlation_group[:128],
                )
            )
    found.sort(key=lambda c: c.claim_id)
    return found[:MAX_EVIDENCE_REFS]


async def enqueue_review(
    client: AsyncAdjudicationClient,
    resolution: resolution_pb2.SemanticResolution,
    settings: Settings,
    origin_ref: str,
    spot_check_rate: float = 0.0,
) -> ProbeResult:
    """Enqueue the conflict (or the sampled resolved semantic) as a case; reviewers see it
    blinded."""
    request = case_request(resolution, settings, origin_ref, spot_check_rate)
    if request is None:
        return ProbeResult(Outcome.FAILED, "no competing values to put to reviewers")
    case = (await client.enqueue_case(request)).case
    shown = ", ".join(json.dumps(from_value(v)) for v in case.candidate_values)
    return ProbeResult(
        Outcome.CASE_ENQUEUED,
        f"case {case.case_id} enqueued for tenant {case.tenant}: reviewers choose among {shown}",
        case_id=case.case_id,
    )


async def collect_gold_label(
    client: AsyncAdjudicationClient,
    case_id: str,
    settings: Settings,
    accepted_sources: Collection[str],
) -> tuple[ProbeResult, float]:
    """The case's latest gold label as a claim, and the enqueue-to-freeze latency in seconds."""
    operator = await client.get_case(adj.GetCaseRequest(case_id=case_id))
    case = operator.case
    if (case.subject, case.predicate) != (settings.subject, settings.predicate):
        about = f"{case.predicate} of {case.subject}"
        return ProbeResult(Outcome.FAILED, f"case {case_id} is about {about}", case_id=case_id), 0
    revision = await client.latest_gold_label(case_id)
    if revision is None:
        state = adj.CaseState.Name(operator.state).removeprefix("CASE_STATE_")
        detail = f"case {case_id} has no frozen gold label yet ({state})"
        return ProbeResult(Outcome.AWAITING_REVIEW, detail, case_id=case_id), 0.0
    latency = max(
        0.0,
        (revision.freeze_time.ToDatetime() - case.create_time.ToDatetime()).total_seconds(),
    )
    blinded = adj.BlindedCase(case_id=case_id, subject=case.subject, predicate=case.predicate)
    claim = gold_label_claim(revision, blinded)
    if claim is None:
        basis = gold_pb2.ResolutionBasis.Name(revision.basis).removeprefix("RESOLUTION_BASIS_")
        detail = f"gold label r{revision.revision} of case {case_id} has no value ({basis})"
        return ProbeResult(Outcome.NO_LABEL, detail, case_id=case_id), latency
    provenance = claim.method.split("/")[1].upper()
    if claim.source not in accepted_sources:
        detail = (
            f"gold label r{revision.revision} is {provenance}; the resolver's reliability table "
            f"has no {claim.source!r} kind, so it cannot count here"
        )
        return ProbeResult(Outcome.SOURCE_NOT_ACCEPTED, detail, case_id=case_id), latency
    detail = (
        f"gold label r{revision.revision} of case {case_id}: "
        f"{json.dumps(from_value(claim.value))}, provenance {provenance}, source {claim.source}"
    )
    return ProbeResult(Outcome.GOLD_LABEL_RETURNED, detail, (claim,), case_id), latency
