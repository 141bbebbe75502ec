"""Claims and requests for the resolver's unit tests, and ways to run them without a server.

Rules are exercised on the same path the service uses (the intake that turns
wire claims into rows, then the domain), so a rule is tested as served: each RPC is
called as the servicer runs it (``adapters.rpcs.ResolverRpcs``: the request read into its
ask, the use case, the response written), with no grpc and no loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from google.protobuf import struct_pb2

from assay import errors
from assay.protovalues import json_to_value
from assay.services.resolver.adapters.rpcs import ResolverRpcs
from assay.services.resolver.domain.policy import DEFAULT_POLICY, Policy
from assay.services.resolver.use_cases.resolve import Resolver
from assay.v1 import claim_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as pb

SUBJECT = "api:payments.create"
SAFE = "http.method"  # not safety-sensitive
UNSAFE = "idempotency.mode"  # safety-sensitive

# Statuses and rationale flags, by the names the tests use.
RESOLVED = resolution_pb2.RESOLUTION_STATUS_RESOLVED
CONFLICTED = resolution_pb2.RESOLUTION_STATUS_CONFLICTED
INSUFFICIENT = resolution_pb2.RESOLUTION_STATUS_INSUFFICIENT
DISCOUNTED = resolution_pb2.RATIONALE_FLAG_ALL_SUPPORT_DISCOUNTED
SINGLE = resolution_pb2.RATIONALE_FLAG_SINGLE_SOURCE_CORROBORATION
UNVERIFIED = resolution_pb2.RATIONALE_FLAG_INDEPENDENCE_UNVERIFIED
STALE = resolution_pb2.RATIONALE_FLAG_STALE_SUPPORT


def value(data: Any) -> struct_pb2.Value:
    out = struct_pb2.Value()
    json_to_value(data, out)
    return out


def claim(
    data: Any = "a",
    *,
    id: str = "",
    subject: str = SUBJECT,
    predicate: str = SAFE,
    source: str = "human_review",
    source_ref: str = "",
    confidence: float = 0.9,
    reliability: float | None = None,
    group: str | None = None,
    supersedes: str | None = None,
    relation: tuple[int, str] | None = None,
    status: int = 0,
    observed: int | None = None,
    method: str = "",
) -> claim_pb2.Claim:
    """A claim; ``data`` is its JSON value (``None`` leaves the value unset)."""
    out = claim_pb2.Claim(
        id=id,
        subject=subject,
        predicate=predicate,
        source=source,
        source_ref=source_ref,
        confidence=confidence,
        review_status=claim_pb2.ReviewStatus.ValueType(status),
        method=method,
    )
    if data is not None:
        out.value.CopyFrom(value(data))
    if reliability is not None:
        out.reliability = reliability
    if group is not None:
        out.correlation_group = group
    if supersedes is not None:
        out.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
        out.relation.target_claim_id = supersedes
    if relation is not None:
        out.relation.kind = claim_pb2.RelationKind.ValueType(relation[0])
        out.relation.target_claim_id = relation[1]
    if observed is not None:
        out.observe_time.seconds = observed
    return out


def evidence(claims: Iterable[claim_pb2.Claim]) -> claim_pb2.Evidence:
    return claim_pb2.Evidence(claims=list(claims))


def calls(policy: Policy = DEFAULT_POLICY) -> ResolverRpcs:
    """The resolver's RPCs over ``policy``, with the runtime's message limit."""
    return ResolverRpcs(Resolver(policy))


def resolve_evidence(
    claims: Iterable[claim_pb2.Claim], policy: Policy = DEFAULT_POLICY, **request: Any
) -> pb.ResolveEvidenceResponse:
    return calls(policy).resolve_evidence(
        pb.ResolveEvidenceRequest(evidence=evidence(claims), **request)
    )


def resolve(
    claims: Iterable[claim_pb2.Claim],
    predicate: str = SAFE,
    subject: str = SUBJECT,
    policy: Policy = DEFAULT_POLICY,
    **request: Any,
) -> resolution_pb2.SemanticResolution:
    """ResolveSemantic's resolution of (subject, predicate)."""
    response = calls(policy).resolve_semantic(
        pb.ResolveSemanticRequest(
            evidence=evidence(claims), subject=subject, predicate=predicate, **request
        )
    )
    return response.resolution


def support_of(resolution: resolution_pb2.SemanticResolution) -> Mapping[str, float]:
    """value_key -> support."""
    return {v.value_key: v.support for v in resolution.values}


def invalid(call: Any, *args: Any, **kwargs: Any) -> errors.InvalidArgument:
    """The InvalidArgument ``call`` raises (fails the test if it raises nothing)."""
    with pytest.raises(errors.InvalidArgument) as caught:
        call(*args, **kwargs)
    return caught.value


def fields(error: errors.AssayError) -> list[str]:
    return [v.field for v in error.violations]
