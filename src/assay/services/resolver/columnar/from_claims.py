"""The per-claim form's evidence as the columnar engine's ``ClaimColumns`` (the bridge in).

ResolveEvidence's claims arrive as parsed ``Claim`` messages, and reading their fields
one by one is most of what the per-claim path costs at 100,000 claims. Here the
evidence is serialized again (in C, ~10 ms) and its bytes are read column-wise
(``wire.scan``): one NumPy pass per field step over every claim at once, strings
gathered into Arrow arrays and factorized, only the distinct values keyed.

This path only accepts evidence the reference would accept, and gives up (None) on
anything it does not read the reference's way: an invalid claim, a value that is not a
string, number or bool (the reference keys those; struct and list values are rare), a
relation kind outside the enum, unknown fields. The caller then takes the per-claim path,
which answers exactly as before (errors included), so nothing here has to word an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.prototime import MAX_NANOS, MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS
from assay.protovalues import value_to_json
from assay.services.resolver.columnar import wire
from assay.services.resolver.columnar.columns import (
    ABSENT,
    Coded,
    Ints,
    Plain,
    coded,
    dense,
    ranks,
)
from assay.services.resolver.columnar.decode import ClaimColumns
from assay.services.resolver.domain import values as vk
from assay.services.resolver.domain.model import ReviewStatus
from assay.services.resolver.wire.convert import claim_ref
from assay.v1 import claim_pb2

# Claim field numbers (claim.proto).
ID, SUBJECT, PREDICATE, VALUE, SOURCE, SOURCE_REF = 1, 2, 3, 4, 5, 6
CONFIDENCE, RELIABILITY, OBSERVE_TIME, GROUP, RELATION, REVIEW = 9, 10, 11, 12, 13, 14
# Evidence.claims (field 1, length-delimited) as a tag byte.
CLAIMS_TAG = 0x0A
# google.protobuf.Value's kinds.
NULL, NUMBER, STRING, BOOL = 1, 2, 3, 4
_MAX_KIND = 3


@dataclass(frozen=True, slots=True)
class Bridged:
    """The evidence as columns, and where each claim's id lies in its bytes."""

    columns: ClaimColumns
    claims: Sequence[claim_pb2.Claim]
    buf: wire.Bytes  # the evidence's serialized bytes (padded)
    id_offset: Ints
    id_length: Ints  # -1 or 0 where the claim has no id
    starts: Ints  # where each claim's bytes lie in ``buf``
    ends: Ints
    known: dict[int, str] = field(default_factory=dict)  # claim_refs asked for so far

    def claim_bytes(self, row: int) -> bytes:
        """Claim ``row`` serialized: its slice of the evidence's bytes."""
        data: bytes = self.buf[self.starts[row] : self.ends[row]].tobytes()
        return data

    def refs(self, rows: Sequence[int]) -> list[str]:
        """The claim_refs of ``rows``: ids, or content references (``convert.claim_ref``).

        Remembered: the engine's tie-breaks, the claim weights, the exclusions and the
        warnings ask for many of the same rows, and a content reference is a hash of
        the claim serialized again."""
        claims, known = self.claims, self.known
        out = []
        for row in rows:
            ref = known.get(row)
            if ref is None:
                ref = known[row] = claim_ref(claims[row])
            out.append(ref)
        return out


def read_claims(evidence: claim_pb2.Evidence, reliability: Mapping[str, float]) -> Bridged | None:
    """The evidence's claims as columns; None when the per-claim path must answer."""
    claims = evidence.claims
    n = len(claims)
    if not n:
        return None
    data = evidence.SerializeToString()
    found = wire.fields(data, CLAIMS_TAG)
    if found is None or len(found[0]) != n:  # unknown fields around the claims
        return None
    starts, ends = found
    buf = np.frombuffer(data + bytes(wire.PAD), dtype=np.uint8)
    scanned = wire.scan(buf, starts, ends, REVIEW)
    if scanned is None:
        return None
    offset, length = scanned
    if (offset[0] >= 0).any():
        return None

    def strings(field: int) -> pa.Array:
        return _strings(buf, offset[field], length[field])

    subject, predicate = coded(strings(SUBJECT)), coded(strings(PREDICATE))
    source = coded(strings(SOURCE))
    names = sorted(reliability)
    position = {name: i for i, name in enumerate(names)}
    known = np.array(
        [position.get(name, ABSENT) for name in source.strings.to_pylist()], dtype=np.int64
    )
    source_index = np.append(known, ABSENT)[source.codes]
    confidence = wire.doubles(buf, offset[CONFIDENCE])
    stated = wire.doubles(buf, offset[RELIABILITY], float("nan"))
    has_stated = offset[RELIABILITY] >= 0
    review = wire.ints(buf, offset[REVIEW])
    if (
        (subject.codes == ABSENT).any()
        or (predicate.codes == ABSENT).any()
        or (source_index == ABSENT).any()
        or not ((confidence >= 0.0) & (confidence <= 1.0)).all()
        or not ((stated[has_stated] >= 0.0) & (stated[has_stated] <= 1.0)).all()
        or not ((review >= 0) & (review <= max(ReviewStatus))).all()
    ):
        return None
    values = _values(buf, offset[VALUE], length[VALUE], claims)
    observed = _observed(buf, offset[OBSERVE_TIME], length[OBSERVE_TIME])
    if values is None or observed is None:
        return None
    value, value_keys = values
    ids = Plain(strings(ID), length[ID] > 0)
    if len(pc.unique(ids.column)) - int(not ids.present.all()) < int(ids.present.sum()):
        return None  # a repeated id
    related = _relations(claims, np.flatnonzero(offset[RELATION] >= 0), ids, n)
    if related is None:
        return None
    relation, targets, target_row = related

    subject_rank, predicate_rank = ranks(subject.strings), ranks(predicate.strings)
    per = max(1, len(predicate_rank))
    composite = subject_rank[subject.codes] * per + predicate_rank[predicate.codes]
    semantic, keys = dense(composite, max(1, len(subject_rank) * per))
    subjects = subject.strings.take(pa.array(np.argsort(subject_rank)[keys // per]))
    predicates = predicate.strings.take(pa.array(np.argsort(predicate_rank)[keys % per]))
    declared = length[GROUP] > 0
    named = pc.binary_join_element_wise(strings(SOURCE), strings(SOURCE_REF), "|")
    group = coded(pc.if_else(pa.array(declared), strings(GROUP), named))
    table = np.array([reliability[name] for name in names], dtype=np.float64)
    columns = ClaimColumns(
        count=n,
        semantic=semantic,
        subjects=subjects,
        predicates=predicates,
        value=value,
        value_keys=value_keys,
        source=source_index,
        sources=names,
        ceiling=table[source_index],
        stated=stated,
        confidence=confidence,
        group=group.codes,
        groups=group.strings.cast(pa.string()),
        declared=declared,
        observed=observed,
        rejected=review == ReviewStatus.REJECTED,
        ids=ids,
        relation=relation,
        targets=targets,
        target_row=target_row,
    )
    return Bridged(columns, claims, buf, offset[ID], length[ID], starts, ends)


def _strings(buf: wire.Bytes, offset: Ints, length: Ints) -> pa.Array:
    """One string field of every claim as a utf8 array ("" where unset).

    The fields lie in the buffer in claim order, so one binary array over the whole
    buffer, alternating a field with the bytes up to the next one, views them all
    without a copy; taking its even elements copies only the strings (in C++)."""
    n = len(offset)
    lengths = np.maximum(length, 0)
    present = offset >= 0
    # An unset field is an empty string where the previous one ended: bounds stay sorted.
    ended = np.maximum.accumulate(np.where(present, offset + lengths, 0))
    starts = np.where(present, offset, ended)
    bounds = np.empty(2 * n + 1, dtype=np.int32)
    bounds[0 : 2 * n : 2] = starts
    bounds[1 : 2 * n : 2] = starts + lengths
    bounds[2 * n] = len(buf)
    whole = pa.BinaryArray.from_buffers(
        pa.binary(), 2 * n, [None, pa.py_buffer(bounds), pa.py_buffer(buf)]
    )
    # Viewed as utf8 without a check: the runtime parsed these strings, and proto3
    # strings are valid UTF-8 once parsed.
    return whole.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int64))).view(pa.string())


def _values(
    buf: wire.Bytes, offset: Ints, length: Ints, claims: Sequence[claim_pb2.Claim]
) -> tuple[Ints, list[str]] | None:
    """Each claim's value code (codes in value_key order) and the keys; None when a value
    is missing, null, not finite, or has unknown fields."""
    if (offset < 0).any():
        return None
    scanned = wire.scan(buf, offset, offset + length, 6)
    if scanned is None:
        return None
    inner, inner_length = scanned
    kinds = (inner[1:] >= 0).sum(axis=0)
    if (inner[0] >= 0).any() or (kinds != 1).any() or (inner[NULL] >= 0).any():
        return None
    n = len(offset)
    key_of = np.full(n, -1, dtype=np.int64)  # index into ``found``
    found: list[str] = []
    texts = np.flatnonzero(inner[STRING] >= 0)
    if len(texts):
        text = coded(_strings(buf, inner[STRING][texts], inner_length[STRING][texts]))
        distinct = text.strings.to_pylist()
        codes = np.where(text.codes == ABSENT, len(distinct), text.codes)
        key_of[texts] = codes + len(found)
        found.extend(vk.string_key(s) for s in distinct)
        found.append(vk.string_key(""))
    numbers = np.flatnonzero(inner[NUMBER] >= 0)
    if len(numbers):
        number = wire.doubles(buf, inner[NUMBER][numbers])
        if not np.isfinite(number).all():
            return None
        distinct_numbers, inverse = np.unique(number, return_inverse=True)
        key_of[numbers] = inverse.reshape(-1) + len(found)
        found.extend(vk.number_key(float(x)) for x in distinct_numbers.tolist())
    bools = np.flatnonzero(inner[BOOL] >= 0)
    if len(bools):
        key_of[bools] = (wire.ints(buf, inner[BOOL][bools]) != 0) + len(found)
        found.extend((vk.FALSE_KEY, vk.TRUE_KEY))
    for row in np.flatnonzero(key_of < 0).tolist():  # struct and list values
        try:
            key = vk.canonical_key(value_to_json(claims[row].value))
        except (vk.UnkeyableValue, RecursionError):
            return None
        key_of[row] = len(found)
        found.append(key)
    ordered = sorted(set(found))
    position = {key: i for i, key in enumerate(ordered)}
    code_of = np.array([position[key] for key in found], dtype=np.int64)
    return code_of[key_of], ordered


def _observed(buf: wire.Bytes, offset: Ints, length: Ints) -> np.ndarray | None:
    """observe_time in seconds since the epoch (NaN where unset); None when one is not a
    valid Timestamp."""
    observed = np.full(len(offset), np.nan)
    present = np.flatnonzero(offset >= 0)
    if not len(present):
        return observed
    scanned = wire.scan(buf, offset[present], offset[present] + length[present], 2)
    if scanned is None or (scanned[0][0] >= 0).any():
        return None
    seconds = wire.ints(buf, scanned[0][1])
    nanos = wire.ints(buf, scanned[0][2])
    if not (
        ((nanos >= 0) & (nanos <= MAX_NANOS)).all()
        and ((seconds >= MIN_TIMESTAMP_SECONDS) & (seconds <= MAX_TIMESTAMP_SECONDS)).all()
    ):
        return None
    observed[present] = seconds + nanos / 1e9
    return observed


def _relations(
    claims: Sequence[claim_pb2.Claim], rows: Ints, ids: Plain, n: int
) -> tuple[Ints, Coded, Ints] | None:
    """Relation kinds (0 without one), targets, and each target's row (-1: dangling)."""
    relation = np.zeros(n, dtype=np.int64)
    absent = np.full(n, ABSENT, dtype=np.int64)
    if not len(rows):
        return relation, Coded(absent, pa.array([], pa.string())), absent
    target_texts = [""] * n
    for row in rows.tolist():
        found = claims[row].relation
        kind, target = int(found.kind), found.target_claim_id
        if not ids.present[row] or not 0 < kind <= _MAX_KIND or not target:
            return None
        relation[row] = kind
        target_texts[row] = target
    targets = coded(pa.array(target_texts, pa.string()))
    which = pc.index_in(ids.column, value_set=targets.strings)
    hit_rows = np.flatnonzero(which.is_valid().to_numpy(zero_copy_only=False) & ids.present)
    hits = np.asarray(which.take(hit_rows).to_numpy(zero_copy_only=False), dtype=np.int64)
    row_of_target = np.full(len(targets.strings) + 1, ABSENT, dtype=np.int64)
    row_of_target[hits] = hit_rows  # ids are unique: one row per target
    return relation, targets, row_of_target[targets.codes]
