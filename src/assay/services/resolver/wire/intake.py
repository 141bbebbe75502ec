"""The one hot loop: a request's claims become validated, weighted, grouped rows.

``intake`` runs once per claim, so it is written for speed on purpose: each
field is read once, scalar value keys come from a cache, ``HasField`` is asked
only where a plain read is ambiguous, ids are checked in bulk after the loop,
and the only per-claim allocations are the row tuple and the strings it must
keep (claims usually come grouped by semantic, and a defaulted correlation group
is one string per request). ``observe_time`` is only checked to be a well-formed
Timestamp here (about an eighth of the loop), and kept only when staleness is asked
for (``times``). It only *detects* invalid claims (returning None);
``convert.violations`` then re-reads the request slowly and ``validation`` explains
every problem from the rule table (``claim_rules``). The two are kept in agreement by
a property test, and a claim breaking each rule of the table is held to be refused here.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Mapping
from operator import itemgetter

from google.protobuf import struct_pb2

from assay.prototime import MAX_NANOS, MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS
from assay.protovalues import value_to_json
from assay.services.resolver.domain import value_keys as vk
from assay.services.resolver.domain.model import (
    REF,
    Intake,
    Relation,
    RelationKind,
    ReviewStatus,
    Row,
    SemKey,
)
from assay.services.resolver.wire.convert import ClaimList
from assay.v1 import claim_pb2

# The rules of ``claim_rules`` this loop checks inline, as plain ints read once (an enum
# member compares slower than an int): statuses and kinds are numbered without gaps.
_REJECTED = int(ReviewStatus.REJECTED)
_MAX_STATUS = int(max(ReviewStatus))
_MAX_KIND = int(max(RelationKind))
assert len(ReviewStatus) == _MAX_STATUS + 1
assert len(RelationKind) == _MAX_KIND + 1

# Value keys of scalars seen before. Bounded: cleared when it grows past the limit, since
# a long-running server sees an unbounded variety of strings.
_STRING_KEYS: dict[str, str] = {}
_NUMBER_KEYS: dict[float, str] = {}
_CACHE_LIMIT = 65536
# Longer strings are keyed each time they are seen, so no request's large value (a rejected
# one included) stays cached: the cache is for the short values claims repeat.
_MAX_CACHED_CHARS = 256


def _string_key(value: str) -> str:
    if len(value) > _MAX_CACHED_CHARS:
        return vk.string_key(value)
    if len(_STRING_KEYS) > _CACHE_LIMIT:
        _STRING_KEYS.clear()
    key = _STRING_KEYS[value] = vk.string_key(value)
    return key


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


SourceTable = Mapping[str, tuple[str, float, str]]


def source_table(reliability: Mapping[str, float]) -> dict[str, tuple[str, float, str]]:
    """The table as ``intake`` wants it: kind -> (the kind, its reliability, ``kind + "|"``).

    Rows then share one string object per source kind instead of keeping a fresh copy per
    claim, and a defaulted correlation group costs one concatenation, not two.
    """
    return {kind: (kind, value, kind + "|") for kind, value in reliability.items()}


def intake(
    claims: ClaimList,
    table: SourceTable,
    start: int = 0,
    known_ids: Mapping[str, Row] | None = None,
    times: list[float | None] | None = None,
) -> Intake | None:
    """Rows for every claim, grouped by semantic and value; None if any claim is invalid.

    ``table`` comes from ``source_table``; ``start`` numbers the claims (hypothesis claims
    continue after the base); ``known_ids`` are ids already taken by the base evidence.
    ``times``, when staleness is asked for, gets each claim's observe time appended (seconds
    since the epoch, None when absent): a row carries none, so it costs nothing otherwise.
    """
    out = Intake(count=len(claims))
    entries: dict[SemKey, tuple[SemKey, dict[str, list[Row]]]] = {}
    id_rows = out.id_rows
    rejected = out.rejected
    string_keys = _STRING_KEYS
    sha256 = hashlib.sha256
    # Unbound: the attribute lookup is most of what asking every claim costs.
    has_field = claim_pb2.Claim.HasField
    last_subject = last_predicate = ""  # no claim has an empty subject
    defaulted: defaultdict[str, dict[str, str]] = defaultdict(dict)
    sem: SemKey = ("", "")
    values: dict[str, list[Row]] = {}
    for index, claim in enumerate(claims, start):
        subject = claim.subject
        predicate = claim.predicate
        confidence = claim.confidence
        entry = table.get(claim.source)
        if entry is None or not subject or not predicate or not 0.0 <= confidence <= 1.0:
            return None
        source, ceiling, group_prefix = entry
        stated = 0.0
        if has_field(claim, "reliability"):
            reliability = claim.reliability
            if not 0.0 <= reliability <= 1.0:
                return None
            if reliability > ceiling:
                stated = reliability
                reliability = ceiling
        else:
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
            # One string per defaulted group, not one per claim: fusion hashes each row's
            # group, and a shared string keeps its hash.
            by_ref = defaulted[group_prefix]
            source_ref = claim.source_ref
            shared = by_ref.get(source_ref)
            if shared is None:
                shared = by_ref[source_ref] = group_prefix + source_ref
            group = shared
            declared = False
        # One tuple per semantic is kept (the dict key); rows point at it. Claims usually
        # come grouped by semantic, so comparing with the previous claim's (two string
        # compares) mostly saves building and hashing a key.
        if subject != last_subject or predicate != last_predicate:
            found = entries.get((subject, predicate))
            if found is None:
                sem = (subject, predicate)
                values = {}
                entries[sem] = (sem, values)
            else:
                sem, values = found
            last_subject = subject
            last_predicate = predicate
        row = (
            -(confidence * reliability),
            ref,
            source,
            reliability,
            group,
            declared,
            index,
            sem,
            key,
        )
        if claim_id:
            id_rows.append(row)
        if stated:
            out.capped.append((row, stated))
        # Read without asking HasField: an absent time reads as 0 seconds, 0 nanos, which
        # passes, so the one question saved per claim changes nothing.
        observed = claim.observe_time
        nanos = observed.nanos
        seconds = observed.seconds
        if not (
            0 <= nanos <= MAX_NANOS and MIN_TIMESTAMP_SECONDS <= seconds <= MAX_TIMESTAMP_SECONDS
        ):
            return None
        if times is not None:
            # Only a zero time may be absent: the question is asked of those alone.
            if seconds or nanos or has_field(claim, "observe_time"):
                times.append(seconds + nanos / 1e9)
            else:
                times.append(None)
        status = claim.review_status
        if has_field(claim, "relation"):
            relation = claim.relation
            kind = relation.kind
            target = relation.target_claim_id
            if not claim_id or not 0 < kind <= _MAX_KIND or not target:
                return None
            if status != _REJECTED:
                out.relations.append(Relation(row, RelationKind(kind), target))
        if status:
            if status == _REJECTED:
                rejected.append(row)
                continue
            if not 0 < status <= _MAX_STATUS:
                return None
        rows = values.get(key)
        if rows is None:
            values[key] = [row]
        else:
            rows.append(row)
    # Ids are checked once, in bulk: a set and a length beat a dict insert per claim.
    id_list = list(map(itemgetter(REF), id_rows))
    if len(set(id_list)) != len(id_list):
        return None
    if known_ids and not known_ids.keys().isdisjoint(id_list):
        return None
    out.values = {sem: values for sem, values in entries.values()}
    return out
