"""Each semantic's ValueSupports (value, key, support, and at FULL their claims, groups
and counted_claim_refs) as bytes, one blob per semantic.

At FULL detail ResolveEvidence returns one ``ClaimWeight`` per claim, and filling
100,000 of them attribute by attribute is the largest cost left once the claims are
resolved column-wise. So they are encoded here with NumPy instead: each record is a few
pieces (a tag and length, a string, fixed fields packed together), every piece one
element of a pool of bytes laid out as an Arrow binary array (``_Pool``); one ``take``
in C++ copies the pieces of every record, in order, into one buffer. The caller merges
each semantic's slice into its ``SemanticResolution`` (``MergeFromString``, in C): one
call per semantic, none per value or claim.

The pool is why this is fast: a NumPy gather of the same bytes needs an index per byte
(10 MB of bytes, 80 MB of indices at 100,000 claims) and took ~0.3 s; the take copies
about a million slices in ~35 ms.

The pieces are exactly the fields the reference sets (``convert.Emitter``), so the
messages hold the same values; a field that the reference leaves unset (a zero, an empty
string, false) is written here with its default value, which parsing leaves unset too.
Orders are the reference's: a semantic's values as the values table orders them; a
value's claims strongest first, ties by claim_ref then request position; its groups and
counted refs in the engine's group order (strongest first, ties by the counted
claim_ref), which is the reference's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
from google.protobuf.message import Message

from assay.services.resolver.columnar import wire
from assay.services.resolver.columnar.columns import Bools, Floats, Ints
from assay.services.resolver.columnar.decode import ClaimColumns
from assay.services.resolver.columnar.engine import Resolved
from assay.services.resolver.columnar.sorting import by_weight_descending, stable_order

# ValueSupport's repeated fields, as (field << 3) | wire type 2.
CLAIMS_TAG, GROUPS_TAG, REFS_TAG = 0x22, 0x2A, 0x32
# SemanticResolution.values and rationale (fields 5 and 9, length-delimited).
VALUES_TAG, RATIONALE_TAG = 0x2A, 0x4A

Piece = tuple[Ints, Ints]
"""A column of pieces, one per record: (element of the pool, byte length)."""


class _Pool:
    """Byte blocks laid end to end and cut into the elements of one Arrow binary array.

    Each block is added with its cuts (offsets within it, the first 0): an element runs
    from one cut to the next, the block's last to the next block's start. Pieces are
    elements, so a record's pieces are a list of element numbers."""

    def __init__(self) -> None:
        self.blocks: list[wire.Bytes] = []
        self.cuts: list[Ints] = []
        self.size = 0
        self.elements = 0

    def _add(self, block: wire.Bytes, cuts: Ints) -> int:
        """Add ``block`` cut at ``cuts``; the element number of its first cut."""
        first = self.elements
        self.blocks.append(block.reshape(-1))
        self.cuts.append(cuts + self.size)
        self.size += block.size
        self.elements += len(cuts)
        return first

    def table(self, rows: wire.Bytes, used: Ints) -> Piece:
        """A (records, width) table whose row i holds ``used[i]`` bytes: one piece per row."""
        records, width = rows.shape
        cuts = np.empty(2 * records, dtype=np.int64)
        cuts[0::2] = np.arange(records, dtype=np.int64) * width
        cuts[1::2] = cuts[0::2] + used
        if not records:
            return np.zeros(0, dtype=np.int64), used
        first = self._add(rows, cuts)
        return first + 2 * np.arange(records, dtype=np.int64), used

    def slices(self, buf: wire.Bytes, offset: Ints, length: Ints) -> Ints:
        """Slices of ``buf`` (in order, not overlapping; a length <= 0 for none): elements."""
        ends = offset + np.maximum(length, 0)
        present = length > 0
        ended = np.maximum.accumulate(np.where(present, ends, 0)) if len(ends) else ends
        starts = np.where(present, offset, ended)
        cuts = np.empty(2 * len(starts) + 1, dtype=np.int64)
        cuts[0] = 0
        cuts[1::2] = starts
        cuts[2::2] = np.where(present, ends, starts)
        first = self._add(buf, cuts)
        return first + 1 + 2 * np.arange(len(starts), dtype=np.int64)

    def texts(self, texts: Sequence[str]) -> Piece:
        """``texts`` in UTF-8: one piece each."""
        return self.encoded([t.encode() for t in texts])

    def strings(self, strings: pa.Array) -> Piece:
        """A string array's values, in place in its Arrow buffers: one piece each."""
        count = len(strings)
        if not count:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        bounds_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
        _, bounds_buffer, data_buffer = strings.buffers()
        bounds = np.frombuffer(bounds_buffer, dtype=bounds_type)
        bounds = bounds[strings.offset : strings.offset + count + 1].astype(np.int64)
        lengths = np.diff(bounds)
        if data_buffer is None or not bounds[-1] > bounds[0]:
            return self.encoded([b""] * count)
        data = np.frombuffer(data_buffer, dtype=np.uint8)[bounds[0] : bounds[-1]]
        first = self._add(data, bounds[:-1] - bounds[0])
        return first + np.arange(count, dtype=np.int64), lengths

    def encoded(self, encoded: Sequence[bytes]) -> Piece:
        """``encoded``: one piece each."""
        lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        if not len(lengths):
            return lengths, lengths
        cuts = np.cumsum(lengths) - lengths
        first = self._add(np.frombuffer(b"".join(encoded), dtype=np.uint8), cuts)
        return first + np.arange(len(lengths), dtype=np.int64), lengths

    def take(self, elements: Ints) -> bytes:
        """The ``elements``' bytes, concatenated (one Arrow take, in C++)."""
        if not len(elements):
            return b""
        data = np.concatenate(self.blocks)
        offsets = np.append(np.concatenate(self.cuts), self.size)
        pool = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(),
            self.elements,
            [None, pa.py_buffer(offsets), pa.py_buffer(data)],
        )
        taken = pool.take(pa.array(elements, pa.int64()))
        end = int(np.frombuffer(taken.buffers()[1], dtype=np.int64)[len(elements)])
        out: bytes = taken.buffers()[2][:end].to_pybytes()
        return out


def _varints(tag: int, values: Ints) -> tuple[wire.Bytes, Ints]:
    """``tag`` then each value as a varint: a (values, width) table and each row's size."""
    table, size = wire.varint_bytes(values)
    return np.concatenate([np.full((len(values), 1), tag, np.uint8), table], axis=1), size + 1


def _fixed(tag: int, values: Floats) -> tuple[wire.Bytes, Ints]:
    """``tag`` then each double's 8 bytes, little-endian."""
    raw = np.ascontiguousarray(values, dtype="<f8").view(np.uint8).reshape(-1, 8)
    rows = np.concatenate([np.full((len(values), 1), tag, np.uint8), raw], axis=1)
    return rows, np.full(len(values), 9, np.int64)


def _flag(tag: int, values: np.ndarray) -> tuple[wire.Bytes, Ints]:
    """``tag`` then each bool as one byte."""
    rows = np.stack([np.full(len(values), tag, np.uint8), values.astype(np.uint8)], axis=1)
    return rows, np.full(len(values), 2, np.int64)


def _packed(pool: _Pool, *parts: tuple[wire.Bytes, Ints]) -> Piece:
    """Tables of fields written one after another in each row: one piece per row.

    A part's row is written whole, its unused bytes too; the next part then starts at
    the used size and overwrites them, and what is left past the last part's used bytes
    is not part of the piece."""
    records = len(parts[0][1])
    width = sum(table.shape[1] for table, _ in parts)
    rows = np.zeros((records, width), dtype=np.uint8)
    flat = rows.reshape(-1)
    at = np.arange(records, dtype=np.int64) * width
    for table, used in parts:
        for k in range(table.shape[1]):
            flat[at + k] = table[:, k]
        at = at + used
    return pool.table(rows, at - np.arange(records, dtype=np.int64) * width)


def _sized(parts: list[Piece]) -> Ints:
    """The byte size of records made of ``parts``."""
    body = np.zeros(len(parts[0][1]), dtype=np.int64)
    for _, length in parts:
        body += length
    return body


def encode_resolutions(
    resolved: Resolved,
    claims: ClaimColumns,
    buf: wire.Bytes,
    id_offset: Ints,
    id_length: Ints,
    refs: Callable[[Sequence[int]], list[str]],
    value_of: Callable[[str], Message],
    extras: Sequence[bytes],
    full: bool,
) -> bytes:
    """Every semantic's ``SemanticResolution``, as ResolveEvidenceResponse's
    ``resolutions`` field: subject, predicate, status, leader, confidence, flags, the
    values (with ``full``, each with its claims, groups and counted refs), and each
    semantic's ``extras`` (its exclusions and warnings, already encoded)."""
    pool = _Pool()
    key = _keys(pool, resolved, value_of)
    kinds: list[list[Piece]] = []
    owners: list[Ints] = []
    if full:
        kinds, owners = _claim_records(pool, resolved, claims, buf, id_offset, id_length, refs)
    return _assemble(pool, resolved, key, kinds, owners, pool.encoded(extras))


def _rationale(pool: _Pool, raised: Sequence[Ints], has: Bools) -> Piece:
    """Each semantic's rationale flags (flag ``i + 1`` for the semantics in
    ``raised[i]``), packed, in flag order; only beside a leader (``has``), as the
    reference raises them."""
    semantics = len(has)
    rows = np.zeros((semantics, 2 + len(raised)), dtype=np.uint8)
    rows[:, 0] = RATIONALE_TAG
    count = np.zeros(semantics, dtype=np.int64)
    for number, semantic in enumerate(raised, 1):
        flagged = np.zeros(semantics, dtype=np.bool_)
        flagged[semantic] = True
        at = np.flatnonzero(flagged & has)
        rows[at, 2 + count[at]] = number
        count[at] += 1
    rows[:, 1] = count
    return pool.table(rows, np.where(count > 0, 2 + count, 0))


def _claim_records(
    pool: _Pool,
    resolved: Resolved,
    claims: ClaimColumns,
    buf: wire.Bytes,
    id_offset: Ints,
    id_length: Ints,
    refs: Callable[[Sequence[int]], list[str]],
) -> tuple[list[list[Piece]], list[Ints]]:
    """The values' claim weights, counted groups and counted refs (FULL detail): the
    records of each kind, and each record's value."""
    ref_element = pool.slices(buf, id_offset, id_length)
    ref_length = np.maximum(id_length, 0)
    idless = np.flatnonzero(id_length <= 0)
    if len(idless):
        ref_element[idless], ref_length[idless] = pool.texts(refs(idless.tolist()))
    # A source is one of a few names: each with its tag and length, one piece.
    source_element, source_length = pool.encoded([_field(0x12, s) for s in claims.sources])
    group_element, group_length = pool.strings(resolved.groups)

    # ClaimWeight: claim_ref, source, then reliability, weight, counted and
    # correlation_group (a message's fields may come in any order: parsing it
    # again and serializing it writes them in field order).
    rows = _claim_order(resolved, refs)
    ref = (ref_element[rows], ref_length[rows])
    source = claims.source[rows]
    group = resolved.group[rows]
    tail = [
        (source_element[source], source_length[source]),
        _packed(
            pool,
            _fixed(0x19, resolved.reliability[rows]),
            _fixed(0x21, resolved.weight[rows]),
            _flag(0x30, resolved.counted[rows]),
            _varints(0x2A, group_length[group]),
        ),
        (group_element[group], group_length[group]),
    ]
    ref_head = _varints(0x0A, ref[1])
    body = _sized(tail) + ref[1] + ref_head[1]
    weights = [_packed(pool, _varints(CLAIMS_TAG, body), ref_head), ref, *tail]

    # CountedGroup: name, declared, weight, counted_claim_ref.
    counted = resolved.group_counted_row
    name = resolved.group_name
    counted_ref = (ref_element[counted], ref_length[counted])
    name_head = _varints(0x0A, group_length[name])
    rest = [
        (group_element[name], group_length[name]),
        _packed(
            pool,
            _flag(0x10, resolved.group_declared),
            _fixed(0x19, resolved.group_weight),
            _varints(0x22, counted_ref[1]),
        ),
        counted_ref,
    ]
    body = _sized(rest) + name_head[1]
    groups = [_packed(pool, _varints(GROUPS_TAG, body), name_head), *rest]
    counted_refs = [pool.table(*_varints(REFS_TAG, counted_ref[1])), counted_ref]
    kinds = [weights, groups, counted_refs]
    return kinds, [resolved.claim_value[rows], resolved.group_value, resolved.group_value]


def _assemble(
    pool: _Pool,
    resolved: Resolved,
    key: Piece,
    kinds: list[list[Piece]],
    owners: list[Ints],
    extras: Piece,
) -> bytes:
    """The records, in order: per semantic its own fields, then each of its values' head
    (header, support, value and key) followed by the value's records of ``kinds`` (each
    record's value in ``owners``); every piece written straight to its place, the empty
    ones left out, and taken."""
    values, semantics = len(resolved.support), len(resolved.status)
    value_semantic = resolved.value_semantic
    support = resolved.support
    # A value's size: its records', its key's and its support's; then its header.
    value_body = key[1] + 9
    for kind, owner in zip(kinds, owners, strict=True):
        value_body = value_body + np.bincount(owner, weights=_sized(kind), minlength=values)
    value_body = value_body.astype(np.int64)
    value_head = _packed(pool, _varints(VALUES_TAG, value_body), _fixed(0x19, support))
    value_size = value_head[1] + value_body - 9

    # A semantic: subject, predicate, status, confidence, flags, leader, extras, values.
    bounds = np.searchsorted(value_semantic, np.arange(semantics + 1))
    first, has = bounds[:-1], bounds[1:] > bounds[:-1]
    if values:  # else no semantic has a value, nor a leader
        lead = np.where(has, first, 0)
        leader_key = (np.where(has, key[0][lead], 0), np.where(has, key[1][lead], 0))
        leader_support = np.where(has, support[lead], 0.0)
    else:
        leader_key = (np.zeros(semantics, np.int64), np.zeros(semantics, np.int64))
        leader_support = np.zeros(semantics)
    leader = _packed(pool, _varints(0x22, leader_key[1] + 9), _fixed(0x19, leader_support))
    leader = (leader[0], np.where(has, leader[1], 0))
    subject = pool.strings(resolved.subjects)
    predicate = pool.strings(resolved.predicates)
    fixed = _packed(
        pool,
        _varints(0x18, resolved.status),
        _fixed(0x31, leader_support),
        _flag(0x38, resolved.safety_sensitive),
        _flag(0x40, resolved.requires_review),
        _varints(0x12, predicate[1]),  # last: the predicate follows
    )
    rationale = _rationale(pool, resolved.rationale, has)
    subject_head = _varints(0x0A, subject[1])
    semantic_body = np.bincount(value_semantic, weights=value_size, minlength=semantics)
    semantic_body = semantic_body.astype(np.int64) + _sized(
        [subject, fixed, predicate, leader, leader_key, rationale, extras]
    )
    semantic_body += subject_head[1]
    opening = _packed(pool, _varints(0x0A, semantic_body), subject_head)
    semantic = [opening, subject, fixed, predicate, leader, leader_key, rationale, extras]

    # Order: a semantic's record, then per value its head and its records.
    stride = values + 1
    records = [semantic, [value_head, key], *kinds]
    rank = [
        np.arange(semantics, dtype=np.int64) * stride,
        value_semantic * stride + 1 + np.arange(values, dtype=np.int64),
        *(value_semantic[owner] * stride + 1 + owner for owner in owners),
    ]
    ranks = np.concatenate(rank)
    order, _ = stable_order(ranks, int(ranks.max(initial=0)) + 1)
    # Each record's first slot among all pieces, in that order (records of a kind have
    # as many pieces as the kind).
    pieces = np.concatenate(
        [np.full(len(kind[0][1]), len(kind), dtype=np.int64) for kind in records]
    )[order]
    slot = np.empty(len(order), dtype=np.int64)
    slot[order] = np.cumsum(pieces) - pieces
    element = np.empty(int(pieces.sum()), dtype=np.int64)
    length = np.empty(len(element), dtype=np.int64)
    start = 0
    for kind in records:
        count = len(kind[0][1])
        first = slot[start : start + count]
        for k, (piece, size) in enumerate(kind):
            element[first + k] = piece
            length[first + k] = size
        start += count
    return pool.take(element[length > 0])


def _keys(pool: _Pool, resolved: Resolved, value_of: Callable[[str], Message]) -> Piece:
    """Each value's value and value_key: one piece per distinct key (the leader's too)."""
    keys = resolved.value_keys.to_pylist()
    distinct: dict[str, int] = {}
    for key in keys:
        distinct.setdefault(key, len(distinct))
    key_element, key_length = pool.encoded(
        [
            wire.field_bytes(0x0A, value_of(key).SerializeToString()) + _field(0x12, key)
            for key in distinct
        ]
    )
    which = np.fromiter(map(distinct.__getitem__, keys), dtype=np.int64, count=len(keys))
    return key_element[which], key_length[which]


def _field(tag: int, text: str) -> bytes:
    """A string field: ``tag``, the length as a varint, the UTF-8 bytes."""
    return wire.field_bytes(tag, text.encode())


def _claim_order(resolved: Resolved, refs: Callable[[Sequence[int]], list[str]]) -> Ints:
    """Active rows by value, weight descending, then claim_ref, then row."""
    value = resolved.claim_value
    active = np.flatnonzero(value >= 0)
    weight = resolved.weight[active]
    order = by_weight_descending(value[active], weight)  # ties: row ascending
    rows = active[order]
    v, w = value[rows], resolved.weight[rows]
    same = (v[1:] == v[:-1]) & (w[1:] == w[:-1])  # pair i joins rows i and i + 1
    if same.any():
        edges = np.flatnonzero(np.diff(np.r_[0, same.astype(np.int8), 0]))
        for start, end in zip(edges[::2].tolist(), (edges[1::2] + 1).tolist(), strict=True):
            run = rows[start:end].tolist()
            names = refs(run)
            rows[start:end] = [r for _, r in sorted(zip(names, run, strict=True))]
    result: Ints = rows
    return result
