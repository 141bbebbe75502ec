"""Proto ⇄ domain for the resolver (the hot proto → rows loop lives in ``intake``).

Inbound: the slow, complete reading of claims that validation explains
problems from, JSON ⇄ ``google.protobuf.Value``, content references, and the
lookup of a claim by its request-wide index. Outbound: response messages,
built once per value and per semantic with one ``add()`` per claim weight;
each value is emitted from its canonical key, so equal values always
serialize to the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2

from assay.protovalues import json_to_value, value_to_json
from assay.services.resolver.domain import value_keys as vk
from assay.services.resolver.domain.model import (
    INDEX,
    REF,
    Excluded,
    Resolution,
    Warning,
)
from assay.services.resolver.domain.validation import ClaimFacts, Violation, check_claims
from assay.v1 import claim_pb2, resolution_pb2

# Canonical Value messages by key, so equal values are emitted from one representative.
_VALUES: dict[str, struct_pb2.Value] = {}
_CACHE_LIMIT = 65536
# Longer keys are cached per request only (``ResolutionWriter``): this cache is bounded in entries,
# and a few large values (one request's 4 MiB string) would otherwise stay in memory until
# 65,536 others came.
MAX_CACHED_KEY_CHARS = 256

ClaimList = Sequence[claim_pb2.Claim]


def claim_ref(claim: claim_pb2.Claim) -> str:
    """The claim's id, or a content reference that does not depend on its position."""
    if claim.id:
        return claim.id
    digest = hashlib.sha256(claim.SerializeToString(deterministic=True)).hexdigest()
    return "sha256:" + digest[:16]


def facts_of(claim: claim_pb2.Claim) -> ClaimFacts:
    """The slow, complete reading of one claim for validation."""
    problem: tuple[str, str] | None = None
    kind = claim.value.WhichOneof("kind") if claim.HasField("value") else None
    if kind is not None:
        try:
            vk.top_level_key(value_to_json(claim.value))
        except vk.UnkeyableValue as error:
            problem = (error.path, error.description)
    relation = None
    if claim.HasField("relation"):
        relation = (int(claim.relation.kind), claim.relation.target_claim_id)
    return ClaimFacts(
        id=claim.id,
        subject=claim.subject,
        predicate=claim.predicate,
        source=claim.source,
        confidence=claim.confidence,
        reliability=claim.reliability if claim.HasField("reliability") else None,
        value_problem=problem,
        value_absent=kind is None,
        review_status=int(claim.review_status),
        relation=relation,
        observed=(
            (claim.observe_time.seconds, claim.observe_time.nanos)
            if claim.HasField("observe_time")
            else None
        ),
    )


def violations(
    claims: ClaimList,
    path: str,
    table: Mapping[str, float],
    seen: dict[str, str],
    offset: int = 0,
) -> list[Violation]:
    """Every violation in ``claims``, at ``{path}[offset + i]``.

    ``seen`` maps the ids already taken (by the base evidence) to their paths.
    """
    return check_claims(
        ((f"{path}[{offset + i}]", facts_of(c)) for i, c in enumerate(claims)), table, seen
    )


class ClaimIndex:
    """Finds a claim by its request-wide index across the base and hypothesis lists."""

    def __init__(self) -> None:
        self._parts: list[tuple[int, ClaimList]] = []
        self.size = 0

    def add(self, claims: ClaimList) -> int:
        """Register a list; returns the index its first claim gets."""
        start = self.size
        self._parts.append((start, claims))
        self.size += len(claims)
        return start

    def __getitem__(self, index: int) -> claim_pb2.Claim:
        for start, claims in reversed(self._parts):
            if index >= start:
                return claims[index - start]
        raise IndexError(index)


def seconds_of(message: timestamp_pb2.Timestamp | duration_pb2.Duration) -> float:
    """A Timestamp (since the epoch) or a Duration, in seconds."""
    return message.seconds + message.nanos / 1e9


class ResolutionWriter:
    """Builds response messages from domain resolutions, reusing one Value per value key."""

    def __init__(self, claims: ClaimIndex, table_digest: str = "") -> None:
        """``table_digest``: the digest of the reliability table the resolutions were computed
        with, which each resolution names."""
        self._claims = claims
        self._table_digest = table_digest
        self._large: dict[str, struct_pb2.Value] = {}  # this request's long keys

    def value(self, key: str) -> struct_pb2.Value:
        """The canonical ``Value`` for a key (shared: callers copy it, never mutate it)."""
        cached = _VALUES.get(key)
        if cached is None:
            cached = self._large.get(key)
            if cached is None:
                cached = struct_pb2.Value()
                json_to_value(vk.from_key(key), cached)
                if len(key) > MAX_CACHED_KEY_CHARS:
                    self._large[key] = cached
                else:
                    if len(_VALUES) > _CACHE_LIMIT:
                        _VALUES.clear()
                    _VALUES[key] = cached
        return cached

    def resolution(
        self, res: Resolution, out: resolution_pb2.SemanticResolution, full: bool = True
    ) -> None:
        """Fill ``out`` (a fresh message, often a repeated field's ``add()``) from ``res``.

        ``full=False`` is ``RESOLUTION_DETAIL_SUMMARY``: no claim weights, groups,
        counted refs, excluded claim bodies or warnings. Those are the per-claim part of
        a resolution, so leaving them out makes the cost per value, not per claim.
        """
        out.subject, out.predicate = res.sem
        out.reliability_table_digest = self._table_digest
        out.status = resolution_pb2.ResolutionStatus.ValueType(res.status)
        out.safety_sensitive = res.safety_sensitive
        out.requires_review = res.requires_review
        if res.values:
            lead = res.values[0]
            out.confidence = lead.support
            leader = out.leader
            leader.value.CopyFrom(self.value(lead.value_key))
            leader.value_key = lead.value_key
            leader.support = lead.support
            if res.rationale:
                out.rationale.extend(
                    [resolution_pb2.RationaleFlag.ValueType(f) for f in res.rationale]
                )
        add_value = out.values.add
        value = self.value
        if not full:
            for support in res.values:
                msg = add_value()
                key = support.value_key
                msg.value.CopyFrom(value(key))
                msg.value_key = key
                msg.support = support.support
            for excluded in res.excluded:
                self.excluded(excluded, out.excluded.add(), with_claim=False)
            return
        for support in res.values:
            msg = add_value()
            key = support.value_key
            msg.value.CopyFrom(value(key))
            msg.value_key = key
            msg.support = support.support
            # Usually every claim is its group's only member, so all count and no lookup is needed.
            every = len(support.claims) == len(support.counted)
            counted = () if every else {row[INDEX] for row in support.counted}
            # add() then plain attribute sets is the cheapest way to fill a message in upb
            # (cheaper than keyword arguments); rows are unpacked, not indexed, for the same
            # reason; defaults are left unset.
            add_claim = msg.claims.add
            for neg_weight, ref, source, reliability, group, _, index, _, _ in support.claims:
                weight = add_claim()
                weight.claim_ref = ref
                weight.source = source
                weight.reliability = reliability
                weight.effective_weight = -neg_weight
                weight.correlation_group = group
                if every or index in counted:
                    weight.counted = True
            add_group = msg.groups.add
            for neg_weight, ref, _, _, group, declared, _, _, _ in support.counted:
                out_group = add_group()
                out_group.correlation_group = group
                if declared:
                    out_group.declared = True
                out_group.weight = -neg_weight
                out_group.counted_claim_ref = ref
            msg.counted_claim_refs.extend([row[REF] for row in support.counted])
        if res.excluded:
            for excluded in res.excluded:
                self.excluded(excluded, out.excluded.add())
        if res.warnings:
            for warning in res.warnings:
                self.warning(warning, out.warnings.add())

    def excluded(
        self, excluded: Excluded, out: resolution_pb2.ExcludedClaim, with_claim: bool = True
    ) -> None:
        out.claim_ref = excluded.row[REF]
        out.reason = resolution_pb2.ExclusionReason.ValueType(excluded.reason)
        out.superseded_by.extend(excluded.superseded_by)
        if with_claim:
            out.claim.CopyFrom(self._claims[excluded.row[INDEX]])

    @staticmethod
    def warning(warning: Warning, out: resolution_pb2.Warning) -> None:
        out.code = resolution_pb2.WarningCode.ValueType(warning.code)
        out.claim_ref = warning.claim_ref
        out.message = warning.message
