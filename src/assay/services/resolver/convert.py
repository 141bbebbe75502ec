"""Proto ⇄ domain for the resolver, including the one hot loop over claims.

``intake`` is where a request's claims become rows. It runs once per claim,
so it is written for speed on purpose: each field is read once, scalar value
keys come from a cache, ``HasField`` is asked only when the cheap read is
ambiguous, and the only per-claim allocation is the row tuple. It only
*detects* invalid claims; when it does, ``violations`` re-reads the request
slowly and lets ``validation`` explain every problem with its field path.

The other direction builds response messages once per value and per semantic,
with one ``add()`` per claim weight, and emits each value from its canonical
key, so equal values always serialize to the same bytes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence

from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2

from assay.services.resolver import values as vk
from assay.services.resolver.model import (
    DECLARED,
    GROUP,
    INDEX,
    NEG_W,
    REF,
    RELIABILITY,
    SOURCE,
    Excluded,
    Intake,
    Relation,
    RelationKind,
    Resolution,
    Row,
    Warning,
)
from assay.services.resolver.validation import ClaimFacts, Violation, check_claims
from assay.v1 import claim_pb2, resolution_pb2

_REJECTED = 3
_MAX_STATUS = 3
_MAX_KIND = 3

# Value keys of scalars seen before. Bounded: cleared when it grows past the limit, since
# a long-running server sees an unbounded variety of strings.
_STRING_KEYS: dict[str, str] = {}
_NUMBER_KEYS: dict[float, str] = {}
_CACHE_LIMIT = 65536

ClaimList = Sequence[claim_pb2.Claim]


def _string_key(value: str) -> str:
    if len(_STRING_KEYS) > _CACHE_LIMIT:
        _STRING_KEYS.clear()
    key = _STRING_KEYS[value] = vk.string_key(value)
    return key


def value_to_json(value: struct_pb2.Value) -> vk.JsonValue:
    """A ``google.protobuf.Value`` as a plain JSON value (None for null or a missing kind)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return {k: value_to_json(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [value_to_json(v) for v in value.list_value.values]
    return None


def json_to_value(data: vk.JsonValue, out: struct_pb2.Value) -> None:
    """Fill ``out`` from a plain JSON value (the inverse of ``value_to_json``)."""
    if data is None:
        out.null_value = struct_pb2.NULL_VALUE
    elif isinstance(data, bool):
        out.bool_value = data
    elif isinstance(data, int | float):
        out.number_value = float(data)
    elif isinstance(data, str):
        out.string_value = data
    elif isinstance(data, Mapping):
        fields = out.struct_value.fields
        for name, item in data.items():
            json_to_value(item, fields[name])
    else:
        values = out.list_value
        for item in data:
            json_to_value(item, values.values.add())


def _other_key(value: struct_pb2.Value) -> str | None:
    """The key of a value that is not a non-empty string, or None when it cannot be keyed."""
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        key = _NUMBER_KEYS.get(number)
        if key is None:
            if not math.isfinite(number):
                return None
            if len(_NUMBER_KEYS) > _CACHE_LIMIT:
                _NUMBER_KEYS.clear()
            key = _NUMBER_KEYS[number] = vk.number_key(number)
        return key
    if kind == "bool_value":
        return vk.TRUE_KEY if value.bool_value else vk.FALSE_KEY
    if kind == "string_value":
        return '""'
    if kind is None or kind == "null_value":
        return None
    try:
        return vk.canonical_key(value_to_json(value))
    except vk.UnkeyableValue:
        return None


def claim_ref(claim: claim_pb2.Claim) -> str:
    """The claim's id, or a content reference that does not depend on its position."""
    if claim.id:
        return claim.id
    digest = hashlib.sha256(claim.SerializeToString(deterministic=True)).hexdigest()
    return "sha256:" + digest[:16]


def intake(
    claims: ClaimList,
    table: Mapping[str, float],
    start: int = 0,
    known_ids: Mapping[str, Row] | None = None,
) -> Intake | None:
    """Rows for every claim, grouped by semantic and value; None if any claim is invalid.

    ``start`` numbers the claims (hypothesis claims continue after the base);
    ``known_ids`` are ids already taken by the base evidence.
    """
    out = Intake(count=len(claims))
    by_sem = out.values
    ids = out.ids
    rejected = out.rejected
    string_keys = _STRING_KEYS
    sha256 = hashlib.sha256
    index = start - 1
    for claim in claims:
        index += 1
        subject = claim.subject
        predicate = claim.predicate
        source = claim.source
        confidence = claim.confidence
        ceiling = table.get(source)
        if ceiling is None or not subject or not predicate or not 0.0 <= confidence <= 1.0:
            return None
        reliability = claim.reliability
        if reliability:
            if not 0.0 < reliability <= 1.0:
                return None
            if reliability > ceiling:
                stated = reliability
                reliability = ceiling
            else:
                stated = -1.0
        else:
            stated = -1.0
            if not claim.HasField("reliability"):
                reliability = ceiling
        value = claim.value
        text = value.string_value
        if text:
            key = string_keys.get(text)
            if key is None:
                key = _string_key(text)
        else:
            other = _other_key(value)
            if other is None:
                return None
            key = other
        claim_id = claim.id
        if claim_id:
            ref = claim_id
        else:
            ref = "sha256:" + sha256(claim.SerializeToString(deterministic=True)).hexdigest()[:16]
        group = claim.correlation_group
        if group:
            declared = True
        else:
            group = source + "|" + claim.source_ref
            declared = False
        sem = (subject, predicate)
        weight = confidence * reliability
        row = (-weight, ref, source, reliability, group, declared, index, sem, key)
        if claim_id:
            if claim_id in ids or (known_ids is not None and claim_id in known_ids):
                return None
            ids[claim_id] = row
        if stated >= 0.0:
            out.capped.append((row, stated))
        status = claim.review_status
        has_relation = claim.HasField("relation")
        if has_relation:
            relation = claim.relation
            kind = relation.kind
            target = relation.target_claim_id
            if not claim_id or not 0 < kind <= _MAX_KIND or not target:
                return None
        if status == _REJECTED:
            rejected.append(row)
            continue
        if status > _MAX_STATUS or status < 0:
            return None
        if has_relation:
            out.relations.append(Relation(row, RelationKind(kind), target))
        values = by_sem.get(sem)
        if values is None:
            by_sem[sem] = {key: [row]}
        else:
            rows = values.get(key)
            if rows is None:
                values[key] = [row]
            else:
                rows.append(row)
    return out


def facts_of(claim: claim_pb2.Claim) -> ClaimFacts:
    """The slow, complete reading of one claim for validation."""
    problem: tuple[str, str] | None = None
    kind = claim.value.WhichOneof("kind") if claim.HasField("value") else None
    if kind is None:
        problem = ("", "required: the claim must assert a value")
    else:
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
        review_status=int(claim.review_status),
        relation=relation,
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

    def observed(self, index: int) -> float | None:
        claim = self[index]
        if not claim.HasField("observe_time"):
            return None
        return seconds_of(claim.observe_time)


def seconds_of(message: timestamp_pb2.Timestamp | duration_pb2.Duration) -> float:
    """A Timestamp (since the epoch) or a Duration, in seconds."""
    return message.seconds + message.nanos / 1e9


class Emitter:
    """Builds response messages from domain resolutions, reusing one Value per value key."""

    def __init__(self, claims: ClaimIndex) -> None:
        self._claims = claims
        self._values: dict[str, struct_pb2.Value] = {}

    def value(self, key: str) -> struct_pb2.Value:
        cached = self._values.get(key)
        if cached is None:
            cached = struct_pb2.Value()
            json_to_value(vk.from_key(key), cached)
            self._values[key] = cached
        return cached

    def resolution(self, res: Resolution, out: resolution_pb2.SemanticResolution) -> None:
        """Fill ``out`` (a fresh message, often a repeated field's ``add()``) from ``res``."""
        out.subject, out.predicate = res.sem
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
            out.rationale.extend(resolution_pb2.RationaleFlag.ValueType(f) for f in res.rationale)
        add_value = out.values.add
        for support in res.values:
            msg = add_value(value_key=support.value_key, support=support.support)
            msg.value.CopyFrom(self.value(support.value_key))
            counted = support.counted_indexes()
            add_claim = msg.claims.add
            for row in support.claims:
                add_claim(
                    claim_ref=row[REF],
                    source=row[SOURCE],
                    reliability=row[RELIABILITY],
                    effective_weight=-row[NEG_W],
                    correlation_group=row[GROUP],
                    counted=row[INDEX] in counted,
                )
            add_group = msg.groups.add
            for group in support.groups:
                add_group(
                    correlation_group=group.group,
                    declared=group.counted[DECLARED],
                    weight=group.weight,
                    counted_claim_ref=group.counted[REF],
                )
            msg.counted_claim_refs.extend([g.counted[REF] for g in support.groups])
        for excluded in res.excluded:
            self.excluded(excluded, out.excluded.add())
        for warning in res.warnings:
            self.warning(warning, out.warnings.add())

    def excluded(self, excluded: Excluded, out: resolution_pb2.ExcludedClaim) -> None:
        out.claim_ref = excluded.row[REF]
        out.reason = resolution_pb2.ExclusionReason.ValueType(excluded.reason)
        out.superseded_by.extend(excluded.superseded_by)
        out.claim.CopyFrom(self._claims[excluded.row[INDEX]])

    @staticmethod
    def warning(warning: Warning, out: resolution_pb2.Warning) -> None:
        out.code = resolution_pb2.WarningCode.ValueType(warning.code)
        out.claim_ref = warning.claim_ref
        out.message = warning.message
