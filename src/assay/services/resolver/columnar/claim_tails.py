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
from assay.services.resolver.columnar.columns import Floats, Ints
from assay.services.resolver.columnar.decode import ClaimColumns
from assay.services.resolver.columnar.engine import Resolved

# ValueSupport's repeated fields, as (field << 3) | wire type 2.
CLAIMS_TAG, GROUPS_TAG, REFS_TAG = 0x22, 0x2A, 0x32
# SemanticResolution.values (field 5, length-delimited).
VALUES_TAG = 0x2A

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


class Tails:
    """The values table's rows encoded as ValueSupports (``values(first, end)``); with
    ``full``, each with its claims, groups and counted refs."""

    def __init__(
        self,
        resolved: Resolved,
        claims: ClaimColumns,
        buf: wire.Bytes,
        id_offset: Ints,
        id_length: Ints,
        refs: Callable[[Sequence[int]], list[str]],
        value_of: Callable[[str], Message],
        full: bool = True,
    ) -> None:
        pool = _Pool()
        heads = _heads(pool, resolved, value_of)
        if not full:
            self._assemble(pool, resolved, heads, [], [])
            return
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

        self._assemble(
            pool,
            resolved,
            heads,
            [weights, groups, counted_refs],
            [resolved.claim_value[rows], resolved.group_value, resolved.group_value],
        )

    def _assemble(
        self,
        pool: _Pool,
        resolved: Resolved,
        heads: list[Piece],
        kinds: list[list[Piece]],
        owners: list[Ints],
    ) -> None:
        """Each value's ValueSupport: its head, then its records of ``kinds`` (each
        record's value in ``owners``), behind the values field's tag and the size; every
        piece written straight to its place, the empty ones left out, and taken."""
        values = len(resolved.support)
        value = np.concatenate([np.arange(values, dtype=np.int64), *owners])
        order = np.argsort(value, kind="stable")
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order), dtype=np.int64)
        width = max(len(kind) for kind in [heads, *kinds])
        element = np.zeros((len(order), width + 1), dtype=np.int64)
        length = np.zeros((len(order), width + 1), dtype=np.int64)
        first = 0
        for kind in [heads, *kinds]:
            count = len(kind[0][1])
            where = place[first : first + count]
            for k, (piece, size) in enumerate(kind, 1):
                element[where, k] = piece
                length[where, k] = size
            first += count
        sizes = length.sum(axis=1)
        body = np.bincount(value, weights=sizes[place], minlength=values).astype(np.int64)
        opening = place[:values]  # each value's head record: the field's header, support
        element[opening, 0], length[opening, 0] = _packed(
            pool, _varints(VALUES_TAG, body + 9), _fixed(0x19, resolved.support)
        )
        used = length > 0
        self._data = pool.take(element[used])
        ends = np.r_[0, np.cumsum(length.sum(axis=1))]
        self._bounds = ends[np.r_[opening, len(order)]].tolist()

    def values(self, first: int, end: int) -> bytes:
        """The encoded ValueSupports of rows ``first`` to ``end`` of the values table, as
        the ``values`` field of a SemanticResolution."""
        return self._data[self._bounds[first] : self._bounds[end]]


def _heads(pool: _Pool, resolved: Resolved, value_of: Callable[[str], Message]) -> list[Piece]:
    """Each value's value and value_key: one piece per distinct key (the support goes
    with the header, ``Tails._assemble``)."""
    keys = resolved.value_keys.to_pylist()
    distinct: dict[str, int] = {}
    for key in keys:
        distinct.setdefault(key, len(distinct))
    key_element, key_length = pool.encoded(
        [_message(0x0A, value_of(key).SerializeToString()) + _field(0x12, key) for key in distinct]
    )
    which = np.fromiter(map(distinct.__getitem__, keys), dtype=np.int64, count=len(keys))
    return [(key_element[which], key_length[which])]


def _field(tag: int, text: str) -> bytes:
    """A string field: ``tag``, the length as a varint, the UTF-8 bytes."""
    return _message(tag, text.encode())


def _message(tag: int, data: bytes) -> bytes:
    """A length-delimited field: ``tag``, the length as a varint, ``data``."""
    size = len(data)
    head = bytearray([tag])
    while size >= 0x80:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + data


def _claim_order(resolved: Resolved, refs: Callable[[Sequence[int]], list[str]]) -> Ints:
    """Active rows by value, weight descending, then claim_ref, then row."""
    value = resolved.claim_value
    active = np.flatnonzero(value >= 0)
    weight = resolved.weight[active]
    order = np.lexsort((active, -weight, value[active]))
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
