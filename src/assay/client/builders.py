"""Requests built from plain Python values, shared by the sync and async clients.

Users think in dicts, strings and datetimes; the contract speaks protobuf.
These pure functions do the translation once, so ``ResolverClient.resolve``
and ``AsyncResolverClient.resolve`` cannot drift apart. Enum arguments accept
the enum's number, its full name (``SIDE_EFFECT_CLASS_VCS_READ``) or the short
name without the prefix (``VCS_READ``, case-insensitive), so shell-ish config
reads naturally.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypedDict, Unpack

from google.protobuf import json_format, struct_pb2

from assay.client.evidence import claim_from_dict, evidence_from_json
from assay.v1 import (
    adjudication_service_pb2 as adj,
)
from assay.v1 import (
    claim_pb2,
    gold_pb2,
    plan_pb2,
    planner_service_pb2,
    resolver_service_pb2,
)

# Evidence as a user holds it: a message, claims (messages or dicts), or decoded JSON.
EvidenceLike = (
    claim_pb2.Evidence | Sequence[claim_pb2.Claim | Mapping[str, Any]] | Mapping[str, Any]
)


class LegacyBundleWarning(UserWarning):
    """Evidence in the old ``{items, confidence}`` shape was loaded lossily (as the design says)."""


def to_value(data: Any) -> struct_pb2.Value:
    """A ``google.protobuf.Value`` from any JSON-compatible Python value."""
    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    return value


def from_value(value: struct_pb2.Value) -> Any:
    """The plain Python value of a ``google.protobuf.Value``."""
    return json_format.MessageToDict(value)


def enum_number(wrapper: Any, value: int | str, prefix: str) -> int:
    """An enum number from a number, a full name, or a short name (``prefix`` dropped)."""
    if isinstance(value, int):
        wrapper.Name(value)  # raises ValueError for an unknown number
        return value
    name = value.strip().upper()
    if not name.startswith(prefix):
        name = prefix + name
    try:
        return int(wrapper.Value(name))
    except ValueError:
        raise ValueError(f"{value!r} is not a {wrapper.DESCRIPTOR.name}") from None


def side_effect(value: int | str) -> plan_pb2.SideEffectClass.ValueType:
    """A ``SideEffectClass`` from a number or a (short) name."""
    number = enum_number(plan_pb2.SideEffectClass, value, "SIDE_EFFECT_CLASS_")
    return plan_pb2.SideEffectClass.ValueType(number)


def signal_class(value: int | str) -> plan_pb2.SignalClass.ValueType:
    """A ``SignalClass`` from a number or a (short) name."""
    return plan_pb2.SignalClass.ValueType(enum_number(plan_pb2.SignalClass, value, "SIGNAL_CLASS_"))


def signal_availability(value: int | str) -> plan_pb2.SignalAvailability.ValueType:
    """A ``SignalAvailability`` from a number or a (short) name."""
    return plan_pb2.SignalAvailability.ValueType(
        enum_number(plan_pb2.SignalAvailability, value, "SIGNAL_AVAILABILITY_")
    )


def probe_kind(value: int | str) -> plan_pb2.ProbeKind.ValueType:
    """A ``ProbeKind`` from a number or a (short) name."""
    return plan_pb2.ProbeKind.ValueType(enum_number(plan_pb2.ProbeKind, value, "PROBE_KIND_"))


def reviewer_kind(value: int | str) -> gold_pb2.ReviewerKind.ValueType:
    """A ``ReviewerKind`` from a number or a (short) name."""
    return gold_pb2.ReviewerKind.ValueType(
        enum_number(gold_pb2.ReviewerKind, value, "REVIEWER_KIND_")
    )


def as_evidence(evidence: EvidenceLike) -> claim_pb2.Evidence:
    """``Evidence`` from any ``EvidenceLike``; a legacy bundle warns (``LegacyBundleWarning``)."""
    if isinstance(evidence, claim_pb2.Evidence):
        return evidence
    if isinstance(evidence, Mapping):
        loaded = evidence_from_json(dict(evidence))
        for message in loaded.warnings:
            warnings.warn(message, LegacyBundleWarning, stacklevel=3)
        return loaded.evidence
    claims = [
        item if isinstance(item, claim_pb2.Claim) else claim_from_dict(item, f"claims[{i}]")
        for i, item in enumerate(evidence)
    ]
    return claim_pb2.Evidence(claims=claims)


def _staleness(request: Any, as_of: datetime | None, stale_after: timedelta | None) -> None:
    if as_of is not None:
        request.as_of.FromDatetime(as_of)
    if stale_after is not None:
        request.stale_after.FromTimedelta(stale_after)


def resolve_semantic_request(
    evidence: EvidenceLike,
    subject: str,
    predicate: str,
    as_of: datetime | None = None,
    stale_after: timedelta | None = None,
) -> resolver_service_pb2.ResolveSemanticRequest:
    """Resolve one (subject, predicate) of ``evidence``."""
    request = resolver_service_pb2.ResolveSemanticRequest(
        evidence=as_evidence(evidence), subject=subject, predicate=predicate
    )
    _staleness(request, as_of, stale_after)
    return request


def resolve_evidence_request(
    evidence: EvidenceLike, as_of: datetime | None = None, stale_after: timedelta | None = None
) -> resolver_service_pb2.ResolveEvidenceRequest:
    """Resolve every semantic of ``evidence``."""
    request = resolver_service_pb2.ResolveEvidenceRequest(evidence=as_evidence(evidence))
    _staleness(request, as_of, stale_after)
    return request


def acquisition_policy(
    granted: Iterable[int | str] = (),
    cloud_sync_allowed: bool = False,
    egress_allowed: bool = False,
) -> plan_pb2.AcquisitionPolicy:
    """An ``AcquisitionPolicy``; deny by default, like the contract."""
    return plan_pb2.AcquisitionPolicy(
        granted_side_effects=[side_effect(g) for g in granted],
        cloud_sync_allowed=cloud_sync_allowed,
        egress_allowed=egress_allowed,
    )


def plan_request(
    evidence: EvidenceLike,
    subject: str,
    predicate: str,
    *,
    policy: plan_pb2.AcquisitionPolicy | None = None,
    capabilities: Mapping[int | str, int | str] | None = None,
    missing_signals: Iterable[tuple[int | str, int | str, str]] = (),
    as_of: datetime | None = None,
    stale_after: timedelta | None = None,
) -> planner_service_pb2.PlanEvidenceRequest:
    """Plan for one target. ``capabilities`` maps signal class to availability;
    ``missing_signals`` are (signal class, availability, note) triples."""

    signal, availability = signal_class, signal_availability
    request = planner_service_pb2.PlanEvidenceRequest(
        subject=subject,
        predicate=predicate,
        evidence=as_evidence(evidence),
        policy=policy or plan_pb2.AcquisitionPolicy(),
        capabilities=plan_pb2.RuntimeCapabilities(
            signals=[
                plan_pb2.SignalCapability(signal_class=signal(c), availability=availability(a))
                for c, a in (capabilities or {}).items()
            ]
        ),
        missing_signals=[
            plan_pb2.MissingSignalNote(
                signal_class=signal(c), availability=availability(a), note=note
            )
            for c, a, note in missing_signals
        ],
    )
    _staleness(request, as_of, stale_after)
    return request


def register_reviewer_request(
    reviewer_id: str, kind: int | str, attested_by: str = ""
) -> adj.RegisterReviewerRequest:
    """Register a reviewer; ``kind`` is ``HUMAN`` or ``MECHANISM_TEST_FIXTURE``."""
    return adj.RegisterReviewerRequest(
        reviewer=adj.Reviewer(
            reviewer_id=reviewer_id,
            kind=reviewer_kind(kind),
            attested_by=attested_by,
        )
    )


def check_keywords(name: str, shape: Any, given: Mapping[str, object]) -> None:
    """TypeError for a keyword ``given`` lacks or ``shape`` (a TypedDict) does not name, as
    a written-out signature would raise, for callers mypy does not check: a misspelt
    keyword is refused, not dropped."""
    if missing := shape.__required_keys__ - given.keys():
        raise TypeError(f"{name}() missing keywords: {', '.join(sorted(missing))}")
    if unknown := given.keys() - shape.__required_keys__ - shape.__optional_keys__:
        raise TypeError(f"{name}() unknown keywords: {', '.join(sorted(unknown))}")


class _NewCaseRequired(TypedDict):
    tenant: str
    subject: str
    predicate: str
    candidate_values: Sequence[Any]
    local_verdict: Any


class NewCase(_NewCaseRequired, total=False):
    """A case to enqueue, as keywords: what ``enqueue_case_request`` and the clients'
    ``enqueue`` take, stated once so the two cannot drift apart.

    ``candidate_values`` and ``local_verdict`` are plain JSON values. Left out,
    ``evidence_refs``, ``context`` and ``origin_ref`` are empty, ``origin`` is
    ``"client"`` and the case does not expire. (The required keys live in a base class:
    under postponed annotations, Python 3.11 cannot see ``NotRequired``.)
    """

    evidence_refs: Sequence[str]
    context: str
    origin: str
    origin_ref: str
    expire_time: datetime | None


def enqueue_case_request(**case: Unpack[NewCase]) -> adj.EnqueueCaseRequest:
    """Enqueue a case; values are plain JSON values (the keywords: ``NewCase``; a
    missing or unknown one is a TypeError, ``check_keywords``)."""
    check_keywords("enqueue_case_request", NewCase, case)
    message = adj.Case(
        tenant=case["tenant"],
        subject=case["subject"],
        predicate=case["predicate"],
        candidate_values=[to_value(v) for v in case["candidate_values"]],
        evidence_refs=list(case.get("evidence_refs", ())),
        context=case.get("context", ""),
        local_verdict=to_value(case["local_verdict"]),
        lineage=adj.CaseLineage(
            origin=case.get("origin", "client"), origin_ref=case.get("origin_ref", "")
        ),
    )
    expire_time = case.get("expire_time")
    if expire_time is not None:
        message.expire_time.FromDatetime(expire_time)
    return adj.EnqueueCaseRequest(case=message)


def label_review_request(
    case_id: str, reviewer_id: str, label: Any, round: int = 0, rationale: str = ""
) -> adj.SubmitReviewRequest:
    """A review choosing ``label`` (one of the case's candidate values)."""
    return adj.SubmitReviewRequest(
        case_id=case_id,
        reviewer_id=reviewer_id,
        round=round,
        outcome=adj.REVIEW_OUTCOME_LABEL,
        label=to_value(label),
        rationale=rationale,
    )


def no_label_review_request(
    case_id: str, reviewer_id: str, reason: str, not_evaluable: bool = False, round: int = 0
) -> adj.SubmitReviewRequest:
    """A review that declines to label: unresolved, or not evaluable, with a reason."""
    outcome = adj.REVIEW_OUTCOME_NOT_EVALUABLE if not_evaluable else adj.REVIEW_OUTCOME_UNRESOLVED
    return adj.SubmitReviewRequest(
        case_id=case_id, reviewer_id=reviewer_id, round=round, outcome=outcome, reason=reason
    )


def adjudicate_request(
    case_id: str, adjudicator_id: str, label: Any, rationale: str = ""
) -> adj.ResolveCaseRequest:
    """An adjudicator (not one of the round's reviewers) decides a disagreement."""
    return adj.ResolveCaseRequest(
        case_id=case_id,
        basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
        label=to_value(label),
        adjudicator_reviewer_id=adjudicator_id,
        rationale=rationale,
    )


def unanimous_request(case_id: str) -> adj.ResolveCaseRequest:
    """Close a round on which every reviewer chose the same label."""
    return adj.ResolveCaseRequest(
        case_id=case_id, basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
    )
