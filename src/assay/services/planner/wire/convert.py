"""Proto <-> domain for the planner: requests read into domain values, plans written back.

Reading a request also validates the planner's own fields, so every problem
is reported at once with its path in the planner's request (the evidence is
the resolver's to validate). Enum numbers are checked against the domain
enums: proto3 enums are open, and an unknown number is bad input, not a crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any, TypeVar

from google.protobuf import json_format, struct_pb2

from assay.candidate_digest import candidate_digest
from assay.errors import Violations
from assay.prototime import duration_problem, timestamp_problem
from assay.protowire import LEN, delimited, key_of, read_varint, split_key, tag_of
from assay.services.planner.domain import model as m
from assay.services.planner.domain.measured import (
    MINIMUM_ACQUISITIONS,
    DiscriminationCheck,
    MeasuredCost,
)
from assay.services.planner.domain.probes import action_risk
from assay.v1 import claim_pb2, plan_pb2, planner_service_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as rpb

E = TypeVar("E", bound=IntEnum)


def _n(member: IntEnum) -> Any:
    """A domain enum as the generated enum's value (same numbers, pinned by a unit test)."""
    return int(member)


# Classes a request may not name: only HUMAN_REVIEW observes a person's judgement.
NOT_A_RUNTIME_SIGNAL = frozenset({m.SignalClass.HUMAN_JUDGEMENT})


class _Problems(Violations):
    """The shared collector of bad fields (every one, capped: ``assay.errors.Violations``)
    with the two readings the planner's request needs: a required enum, a well-known time."""

    def enum(self, enum: type[E], number: int, path: str) -> E | None:
        """The domain member for ``number``, or None after recording why it is invalid."""
        try:
            member = enum(number)
        except ValueError:
            self.add(path, f"unknown {enum.__name__} value {number}")
            return None
        if member.value == 0:
            self.add(path, "required")
            return None
        return member

    def time(self, problem: str | None, path: str) -> None:
        if problem is not None:
            self.add(path, problem)


def _signal_class(problems: _Problems, number: int, path: str) -> m.SignalClass | None:
    cls = problems.enum(m.SignalClass, number, path)
    if cls in NOT_A_RUNTIME_SIGNAL:
        problems.add(path, "HUMAN_JUDGEMENT is not a runtime signal class")
        return None
    return cls


def read_request(
    request: planner_service_pb2.PlanEvidenceRequest,
) -> tuple[
    tuple[m.MissingSignalNote, ...],
    dict[m.SignalClass, m.SignalAvailability],
    m.AcquisitionPolicy,
]:
    """The notes, capabilities and policy of a request; InvalidArgument names every bad field."""
    problems = _Problems()
    if not request.subject:
        problems.add("subject", "required")
    if not request.predicate:
        problems.add("predicate", "required")
    # The resolver checks these too, but the planner copies as_of into its own hypothetical
    # claims, so it reads them first: a bad one is the caller's field, named as such.
    if request.HasField("as_of"):
        problems.time(timestamp_problem(request.as_of.seconds, request.as_of.nanos), "as_of")
    if request.HasField("stale_after"):
        after = request.stale_after
        problems.time(duration_problem(after.seconds, after.nanos), "stale_after")
    notes = []
    for i, note in enumerate(request.missing_signals):
        path = f"missing_signals[{i}]"
        cls = _signal_class(problems, note.signal_class, f"{path}.signal_class")
        state = problems.enum(m.SignalAvailability, note.availability, f"{path}.availability")
        if cls is not None and state is not None:
            notes.append(m.MissingSignalNote(cls, state, note.note))
    capabilities: dict[m.SignalClass, m.SignalAvailability] = {}
    for i, row in enumerate(request.capabilities.signals):
        path = f"capabilities.signals[{i}]"
        cls = _signal_class(problems, row.signal_class, f"{path}.signal_class")
        state = problems.enum(m.SignalAvailability, row.availability, f"{path}.availability")
        if cls is not None and cls in capabilities:
            problems.add(f"{path}.signal_class", f"{cls.name} is listed more than once")
        elif cls is not None and state is not None:
            capabilities[cls] = state
    granted = set()
    for i, number in enumerate(request.policy.granted_side_effects):
        effect = problems.enum(m.SideEffect, number, f"policy.granted_side_effects[{i}]")
        if effect is not None:
            granted.add(effect)
    problems.raise_if_any()
    policy = m.AcquisitionPolicy(
        granted=frozenset(granted),
        cloud_sync_allowed=request.policy.cloud_sync_allowed,
        egress_allowed=request.policy.egress_allowed,
    )
    return tuple(notes), capabilities, policy


# --- The resolver's side -----------------------------------------------------------------


def semantic_request(
    request: planner_service_pb2.PlanEvidenceRequest,
) -> rpb.ResolveSemanticRequest:
    """The ResolveSemantic call for the plan's target. Field names match the planner's."""
    out = rpb.ResolveSemanticRequest(subject=request.subject, predicate=request.predicate)
    out.evidence.CopyFrom(request.evidence)
    if request.HasField("as_of"):
        out.as_of.CopyFrom(request.as_of)
    if request.HasField("stale_after"):
        out.stale_after.CopyFrom(request.stale_after)
    return out


# Ids of the planner's own hypothetical claims (only those that supersede need one).
OUTCOME_ID_PREFIX = "assay:planner-outcome/"


def outcome_claims(
    request: planner_service_pb2.PlanEvidenceRequest, outcome: m.Outcome, label: str
) -> list[claim_pb2.Claim]:
    """The claims of one outcome's hypothesis: its claim, and for a fresh observation that
    replaces older claims of its source and group, one claim per replaced claim (a claim
    has one relation). The copies are identical and share the group, where only the
    strongest member counts, so they supersede without adding support."""
    if not outcome.supersedes:
        return [outcome_claim(request, outcome)]
    claims = []
    for i, target in enumerate(outcome.supersedes):
        claim = outcome_claim(request, outcome)
        claim.id = f"{OUTCOME_ID_PREFIX}{label}/{i}"
        claim.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
        claim.relation.target_claim_id = target
        claims.append(claim)
    return claims


def outcome_claim(
    request: planner_service_pb2.PlanEvidenceRequest, outcome: m.Outcome
) -> claim_pb2.Claim:
    """The hypothetical claim of an outcome; observed at ``as_of`` when staleness applies."""
    claim = claim_pb2.Claim(
        subject=request.subject,
        predicate=request.predicate,
        source=outcome.source,
        method="planner-hypothesis",
        confidence=outcome.confidence,
    )
    claim.value.CopyFrom(json_format.ParseDict(outcome.value, struct_pb2.Value()))
    if outcome.declared:
        claim.correlation_group = outcome.correlation_group
    else:
        # Join the defaulted group ``source|source_ref`` the resolver already counted.
        claim.source_ref = outcome.correlation_group[len(outcome.source) + 1 :]
    if request.HasField("as_of"):
        claim.observe_time.CopyFrom(request.as_of)
    return claim


def hypotheses_request(
    request: planner_service_pb2.PlanEvidenceRequest,
    outcomes: Sequence[m.Outcome],
    evidence: claim_pb2.Evidence | None = None,
    base_detail: rpb.ResolutionDetail.ValueType = rpb.RESOLUTION_DETAIL_UNSPECIFIED,
) -> rpb.ResolveHypothesesRequest:
    """One ResolveHypotheses call carrying one hypothesis per distinct outcome, in order,
    over ``evidence`` (the request's own by default), at SUMMARY detail: a hypothesis is
    judged on status, leader, supports and flags, never on per-claim weights. The base
    comes at ``base_detail`` (FULL when the plan echoes it; UNSPECIFIED: as the rest)."""
    out = _hypotheses_without_evidence(request, outcomes, base_detail)
    out.evidence.CopyFrom(request.evidence if evidence is None else evidence)
    return out


# --- The same calls as bytes, sharing one serialization of the evidence -----------------
#
# A plan sends the caller's evidence to the resolver once or twice (one ResolveHypotheses
# that also returns the base; or ResolveSemantic, then ResolveHypotheses when something is
# scoped out or the guessed outcomes missed one). Both requests hold it as field 1, and a
# serialized message is the concatenation of its serialized fields, so the evidence is
# serialized once and each request is that field followed by its other (small) fields:
# no copy of the evidence into any request message, no second serialization.


# ``evidence`` starts both ResolveSemanticRequest and ResolveHypothesesRequest with the same
# key; ``resolution`` of ResolveSemanticResponse shares its key with ``base`` of
# ResolveHypothesesResponse, and is re-keyed as PlanEvidenceResponse's ``resolution``
# (the keys come from the descriptors; a unit test pins that each pair agrees).
_EVIDENCE_TAG = tag_of(rpb.ResolveSemanticRequest, "evidence")
_RESOLVER_RESOLUTION_KEY = key_of(rpb.ResolveSemanticResponse, "resolution")
_PLAN_RESOLUTION_TAG = tag_of(planner_service_pb2.PlanEvidenceResponse, "resolution")


def evidence_field(evidence: claim_pb2.Evidence) -> bytes:
    """``evidence`` serialized as field 1 of a resolver request."""
    payload = evidence.SerializeToString()
    return delimited(_EVIDENCE_TAG, payload)


def semantic_request_bytes(
    request: planner_service_pb2.PlanEvidenceRequest, evidence: bytes
) -> bytes:
    """``semantic_request(request)`` serialized, with ``evidence`` from ``evidence_field``."""
    rest = rpb.ResolveSemanticRequest(subject=request.subject, predicate=request.predicate)
    if request.HasField("as_of"):
        rest.as_of.CopyFrom(request.as_of)
    if request.HasField("stale_after"):
        rest.stale_after.CopyFrom(request.stale_after)
    return evidence + rest.SerializeToString()


def hypotheses_request_bytes(
    request: planner_service_pb2.PlanEvidenceRequest,
    outcomes: Sequence[m.Outcome],
    evidence: bytes,
    base_detail: rpb.ResolutionDetail.ValueType = rpb.RESOLUTION_DETAIL_UNSPECIFIED,
) -> bytes:
    """``hypotheses_request`` serialized, with ``evidence`` from ``evidence_field``."""
    rest = _hypotheses_without_evidence(request, outcomes, base_detail)
    return evidence + rest.SerializeToString()


def plan_response_bytes(plan_message: plan_pb2.EvidencePlan, resolver_answer: bytes) -> bytes:
    """The PlanEvidenceResponse of ``plan_message`` and the resolution the resolver sent in
    ``resolver_answer`` (a serialized ResolveSemanticResponse, or a ResolveHypothesesResponse
    whose ``base`` is it), without parsing that resolution into the response and
    serializing it again: its bytes are re-tagged from field 1 to field 2. The result is
    byte for byte what serializing the response message deterministically gives (fields
    in number order; the resolver serializes deterministically too). Raises ValueError
    when the answer does not start with the resolution field, or holds it more than
    once (the caller then builds the message)."""
    key, at = read_varint(resolver_answer, 0)
    length, body = read_varint(resolver_answer, at)
    end = body + length
    if key != _RESOLVER_RESOLUTION_KEY or end > len(resolver_answer):
        raise ValueError("the resolver's answer does not start with one resolution field")
    if end < len(resolver_answer) and _tags_after(resolver_answer, end, _RESOLVER_RESOLUTION_KEY):
        raise ValueError("the resolver's answer holds the resolution field more than once")
    head = planner_service_pb2.PlanEvidenceResponse(plan=plan_message).SerializeToString(
        deterministic=True
    )
    return b"".join((head, _PLAN_RESOLUTION_TAG, memoryview(resolver_answer)[at:end]))


def _tags_after(data: bytes, at: int, wanted: int) -> bool:
    """Whether a length-delimited field tagged ``wanted`` follows ``at`` (top level only:
    a ResolveHypothesesResponse's hypotheses are skipped over, not read)."""
    while at < len(data):
        key, at = read_varint(data, at)
        if split_key(key)[1] != LEN:
            raise ValueError("unexpected wire type in the resolver's answer")
        length, at = read_varint(data, at)
        if key == wanted:
            return True
        at += length
    if at != len(data):
        raise ValueError("truncated field in the resolver's answer")
    return False


def _hypotheses_without_evidence(
    request: planner_service_pb2.PlanEvidenceRequest,
    outcomes: Sequence[m.Outcome],
    base_detail: rpb.ResolutionDetail.ValueType,
) -> rpb.ResolveHypothesesRequest:
    out = rpb.ResolveHypothesesRequest(
        subject=request.subject,
        predicate=request.predicate,
        detail=rpb.RESOLUTION_DETAIL_SUMMARY,
        base_detail=base_detail,
    )
    if request.HasField("as_of"):
        out.as_of.CopyFrom(request.as_of)
    if request.HasField("stale_after"):
        out.stale_after.CopyFrom(request.stale_after)
    for i, outcome in enumerate(outcomes):
        hypothesis = out.hypotheses.add(label=f"outcome-{i}")
        hypothesis.claims.extend(outcome_claims(request, outcome, f"outcome-{i}"))
    return out


def resolution(
    pb: resolution_pb2.SemanticResolution, with_counted: bool = True, with_members: bool = True
) -> m.Resolution:
    """The parts of a resolution the planner reads. ``with_counted`` also reads the counted
    claims and the values themselves (needed for the base; a hypothesis is compared on
    status, leader, supports and flags only, so reading it stays cheap for large evidence).
    ``with_members`` also reads which claim ids each (source, group) holds, which only a
    plan with stale claims needs (a fresh observation supersedes them).

    Counted claims are read as their distinct (source, group) pairs: everything the
    planner asks of them (independence, the group a new claim joins, declared groups)
    depends on which pairs were counted, not on how many claims each holds, and a large
    evidence has many claims per pair; of the defaulted pairs only each source's first is
    kept (``_counted``)."""
    values = []
    members: dict[tuple[str, str], list[str]] = {}
    for view in pb.values:
        counted: tuple[m.CountedClaim, ...] = ()
        value: m.JsonValue = None
        if with_counted:
            declared = {g.correlation_group for g in view.groups if g.declared}
            if with_members:
                pairs: set[tuple[str, str]] = set()
                for c in view.claims:
                    source, group = c.source, c.correlation_group
                    if c.counted:
                        pairs.add((source, group))
                    ref = c.claim_ref
                    if not ref.startswith(UNNAMED_REF_PREFIX):
                        members.setdefault((source, group), []).append(ref)
            else:
                pairs = {(c.source, c.correlation_group) for c in view.claims if c.counted}
            counted = _counted(pairs, declared)
            value = json_format.MessageToDict(view.value)
        values.append(m.ValueView(view.value_key, value, view.support, counted))
    return m.Resolution(
        status=m.ResolutionStatus(pb.status),
        leader_key=pb.leader.value_key if pb.HasField("leader") else "",
        values=tuple(values),
        flags=frozenset(m.RationaleFlag(f) for f in pb.rationale),
        excluded_count=len(pb.excluded),
        requires_review=pb.requires_review,
        members={key: tuple(sorted(refs)) for key, refs in members.items()},
    )


def _counted(pairs: set[tuple[str, str]], declared: set[str]) -> tuple[m.CountedClaim, ...]:
    """The counted (source, group) pairs the planner asks about: every declared one, and
    per source only the first defaulted group by name.

    Independence asks whether a source was counted in a declared group or only in
    defaulted ones, the group a new claim joins is the source's first declared group,
    else its first defaulted one, and corroboration counts declared groups: nothing reads
    a source's other defaulted groups. A large evidence has hundreds of those (one per
    ``source|source_ref``), so they are dropped here rather than carried through the plan.
    """
    kept = []
    first_defaulted: dict[str, str] = {}
    for source, group in pairs:
        if group in declared:
            kept.append(m.CountedClaim(source, group, True))
        else:
            first = first_defaulted.get(source)
            if first is None or group < first:
                first_defaulted[source] = group
    # One pass with a minimum per source, not a sort of every defaulted pair (hundreds).
    kept.extend(m.CountedClaim(s, g, False) for s, g in first_defaulted.items())
    return tuple(sorted(kept))


# How the resolver refers to a claim without an ``id`` (such a claim cannot be superseded).
UNNAMED_REF_PREFIX = "sha256:"


def stale_refs(request: planner_service_pb2.PlanEvidenceRequest) -> frozenset[str]:
    """Ids of the target's claims the resolver would find stale: observed before
    ``as_of - stale_after``, or never (as the resolver's STALE_SUPPORT rule reads them).
    Empty without both fields: then nothing is stale."""
    if not (request.HasField("as_of") and request.HasField("stale_after")):
        return frozenset()
    horizon = request.as_of.ToNanoseconds() - request.stale_after.ToNanoseconds()
    return frozenset(
        c.id
        for c in request.evidence.claims
        if c.id
        and c.subject == request.subject
        and c.predicate == request.predicate
        and (not c.HasField("observe_time") or c.observe_time.ToNanoseconds() < horizon)
    )


# --- The planner's answer ------------------------------------------------------------------


def observed_cost(cost: MeasuredCost) -> plan_pb2.ObservedCost:
    """A kind's observed figures; the figures only once it is measured."""
    message = plan_pb2.ObservedCost(
        acquisitions=cost.acquisitions,
        minimum_acquisitions=MINIMUM_ACQUISITIONS,
        measured=cost.measured,
        observed_latency=_n(cost.observed_band),
        declared_latency=_n(cost.declared),
        latency_disagrees=cost.disagrees,
    )
    if cost.measured and cost.median_seconds is not None and cost.p90_seconds is not None:
        message.median_latency.FromNanoseconds(round(cost.median_seconds * 1e9))
        message.p90_latency.FromNanoseconds(round(cost.p90_seconds * 1e9))
        if cost.success_rate is not None:
            message.success_rate = cost.success_rate
    return message


def discrimination_check(check: DiscriminationCheck) -> plan_pb2.DiscriminationCheck:
    message = plan_pb2.DiscriminationCheck(
        predicted=_n(check.predicted),
        acquisitions=check.acquisitions,
        decision_changes=check.changes,
        minimum_acquisitions=MINIMUM_ACQUISITIONS,
    )
    if check.rate is not None:
        message.decision_change_rate = check.rate
    return message


def probe_spec(
    probe: m.Probe,
    cost: MeasuredCost | None = None,
    checks: Sequence[DiscriminationCheck] = (),
) -> plan_pb2.ProbeSpec:
    """A catalogue entry, with its observed figures and judgement when there are any."""
    spec = _probe_spec(probe)
    if cost is not None:
        spec.observed_cost.CopyFrom(observed_cost(cost))
    spec.discrimination_checks.extend(discrimination_check(c) for c in checks)
    return spec


def _probe_spec(probe: m.Probe) -> plan_pb2.ProbeSpec:
    return plan_pb2.ProbeSpec(
        kind=_n(probe.kind),
        target_signal_classes=[_n(c) for c in probe.targets],
        required_side_effects=[_n(e) for e in sorted(probe.side_effects)],
        expected_source_kind=probe.expected_source,
        cost=_n(probe.cost),
        latency=_n(probe.latency),
        action_risk=_n(action_risk(probe)),
        privacy=_n(probe.privacy),
        recency=_n(probe.recency),
        needs_egress=probe.needs_egress,
        needs_cloud_sync=probe.needs_cloud_sync,
        observes_via_runtime=probe.observes_via_runtime,
        description=probe.description,
    )


def _gap(gap: m.Gap) -> plan_pb2.EvidenceGap:
    return plan_pb2.EvidenceGap(
        gap_id=gap.gap_id,
        kind=_n(gap.kind),
        source=_n(gap.source),
        signal_class=_n(gap.signal_class),
        signal_availability=_n(gap.signal_availability),
        notes=list(gap.notes),
    )


def _candidate(plan: m.EvidencePlan, candidate: m.Candidate) -> plan_pb2.AcquisitionCandidate:
    probe, verdict = candidate.probe, candidate.verdict
    message = plan_pb2.AcquisitionCandidate(
        candidate_id=candidate.candidate_id,
        probe=_n(probe.kind),
        target_signal_class=_n(candidate.target),
        expected_source_kind=probe.expected_source,
        addresses_gap_ids=list(candidate.gap_ids),
        availability=_n(verdict.availability),
        availability_reason=_n(verdict.reason),
        missing_grants=[_n(e) for e in verdict.missing_grants],
        forbidden_side_effects=[_n(e) for e in verdict.forbidden],
        target_signal_availability=_n(verdict.signal_availability),
        required_side_effects=[_n(e) for e in sorted(probe.side_effects)],
        discrimination=_n(candidate.discrimination),
        discrimination_basis=_n(candidate.basis),
        outcome_assumption=_n(candidate.outcome.assumption),
        outcome_value_key=candidate.outcome.value_key,
        independence=_n(candidate.independence),
        recency=_n(probe.recency),
        cost=_n(probe.cost),
        latency=_n(probe.latency),
        action_risk=_n(action_risk(probe)),
        privacy=_n(probe.privacy),
        blocking_reasons=[_n(r) for r in verdict.blocking_reasons],
    )
    measured = candidate.measured
    if measured is not None:
        message.measurement_basis = _n(measured.basis)
        message.observed_latency = _n(measured.observed_band)
        message.latency_disagrees = measured.disagrees
    message.candidate_digest = candidate_digest(plan.subject, plan.predicate, message)
    return message


def plan(plan: m.EvidencePlan) -> plan_pb2.EvidencePlan:
    return plan_pb2.EvidencePlan(
        subject=plan.subject,
        predicate=plan.predicate,
        outcome=_n(plan.outcome),
        resolution_status=_n(plan.resolution_status),
        leader_value_key=plan.leader_key,
        leader_support_band=_n(plan.leader_band),
        requires_review=plan.requires_review,
        gaps=[_gap(g) for g in plan.gaps],
        candidates=[_candidate(plan, c) for c in plan.candidates],
        unavailable=[_candidate(plan, c) for c in plan.unavailable],
    )
