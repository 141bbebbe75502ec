"""The per-claim part of each ValueSupport (claims, groups, counted_claim_refs) as bytes.

At FULL detail ResolveEvidence returns one ``ClaimWeight`` per claim, and filling
100,000 of them attribute by attribute is the largest cost left once the claims are
resolved column-wise. So they are encoded here with NumPy instead: each record is a few
pieces (a tag and length, a string slice, a fixed double), every piece a slice of one
pool of bytes, gathered at once (``wire.gather``); per value, the bytes of its records
are merged into its ``ValueSupport`` by the caller (``MergeFromString``, in C).

The pieces are exactly the fields the reference sets (``convert.Emitter``), so the
messages hold the same values; a field that the reference leaves unset (a zero, an empty
string, false) is written here with its default value, which parsing leaves unset too.
Orders are the reference's: a value's claims strongest first, ties by claim_ref then
request position; its groups and counted refs in the engine's group order (strongest
first, ties by the counted claim_ref), which is the reference's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from assay.services.resolver.columnar import wire
from assay.services.resolver.columnar.columns import Floats, Ints
from assay.services.resolver.columnar.decode import ClaimColumns
from assay.services.resolver.columnar.engine import Resolved

# ValueSupport's repeated fields, as (field << 3) | wire type 2.
CLAIMS_TAG, GROUPS_TAG, REFS_TAG = 0x22, 0x2A, 0x32
_PIECES = 10


class _Pool:
    """Byte blocks appended into one pool; each block's start is remembered."""

    def __init__(self) -> None:
        self.blocks: list[wire.Bytes] = []
        self.size = 0

    def add(self, block: wire.Bytes) -> int:
        start = self.size
        self.blocks.append(block.reshape(-1))
        self.size += block.size
        return start

    def bytes(self) -> wire.Bytes:
        return np.concatenate(self.blocks) if self.blocks else np.zeros(0, np.uint8)


def _texts(pool: _Pool, texts: Sequence[str]) -> tuple[Ints, Ints]:
    """Pool offsets and byte lengths of ``texts``."""
    encoded = [t.encode() for t in texts]
    lengths = np.array([len(e) for e in encoded], dtype=np.int64)
    base = pool.add(np.frombuffer(b"".join(encoded), dtype=np.uint8))
    return base + np.cumsum(lengths) - lengths, lengths


def _prefixed(tag: int, lengths: Ints) -> tuple[wire.Bytes, Ints]:
    """A (records, 11) table: ``tag`` then each length as a varint; and each row's size."""
    table, size = wire.varint_bytes(lengths)
    return np.concatenate([np.full((len(lengths), 1), tag, np.uint8), table], axis=1), size + 1


def _fixed(tag: int, values: Floats) -> wire.Bytes:
    """A (records, 9) table: ``tag`` then each double's 8 bytes, little-endian."""
    raw = np.ascontiguousarray(values, dtype="<f8").view(np.uint8).reshape(-1, 8)
    return np.concatenate([np.full((len(values), 1), tag, np.uint8), raw], axis=1)


def _flag(tag: int, values: np.ndarray) -> wire.Bytes:
    return np.stack([np.full(len(values), tag, np.uint8), values.astype(np.uint8)], axis=1)


class Tails:
    """Each value's encoded claims, groups and counted refs: ``tail(v)``."""

    def __init__(
        self,
        resolved: Resolved,
        claims: ClaimColumns,
        buf: wire.Bytes,
        id_offset: Ints,
        id_length: Ints,
        refs: Callable[[Sequence[int]], list[str]],
    ) -> None:
        pool = _Pool()
        pool.add(buf)  # first: an id's offset in the evidence is its pool offset
        ref_start = id_offset.copy()
        ref_length = np.maximum(id_length, 0)
        idless = np.flatnonzero(id_length <= 0)
        if len(idless):
            ref_start[idless], ref_length[idless] = _texts(pool, refs(idless.tolist()))
        source_start, source_length = _texts(pool, claims.sources)
        group_start, group_length = _texts(pool, resolved.groups.to_pylist())

        rows = _claim_order(resolved, refs)
        source = claims.source[rows]
        group = resolved.group[rows]
        claim_pieces = [
            (ref_start[rows], ref_length[rows]),
            (source_start[source], source_length[source]),
            (group_start[group], group_length[group]),
        ]
        heads = [
            _prefixed(0x0A, ref_length[rows]),
            _prefixed(0x12, source_length[source]),
            (_fixed(0x19, resolved.reliability[rows]), np.full(len(rows), 9, np.int64)),
            (_fixed(0x21, resolved.weight[rows]), np.full(len(rows), 9, np.int64)),
            _prefixed(0x2A, group_length[group]),
            (_flag(0x30, resolved.counted[rows]), np.full(len(rows), 2, np.int64)),
        ]
        # Pieces in field order: ref head, ref, source head, source, rel, weight, group head,
        # group, counted.
        weights = _records(
            pool,
            CLAIMS_TAG,
            [
                *(heads[0], claim_pieces[0], heads[1], claim_pieces[1]),
                *(heads[2], heads[3], heads[4], claim_pieces[2], heads[5]),
            ],
        )
        counted = resolved.group_counted_row
        name = resolved.group_name
        groups = _records(
            pool,
            GROUPS_TAG,
            [
                _prefixed(0x0A, group_length[name]),
                (group_start[name], group_length[name]),
                (_flag(0x10, resolved.group_declared), np.full(len(name), 2, np.int64)),
                (_fixed(0x19, resolved.group_weight), np.full(len(name), 9, np.int64)),
                _prefixed(0x22, ref_length[counted]),
                (ref_start[counted], ref_length[counted]),
            ],
        )
        counted_refs = _records(
            pool,
            None,
            [_prefixed(REFS_TAG, ref_length[counted]), (ref_start[counted], ref_length[counted])],
        )
        # Every record's pieces, ordered by value then kind (claims, groups, refs).
        value = np.concatenate(
            [resolved.claim_value[rows], resolved.group_value, resolved.group_value]
        )
        starts = np.concatenate([weights[0], groups[0], counted_refs[0]])
        lengths = np.concatenate([weights[1], groups[1], counted_refs[1]])
        order = np.argsort(value, kind="stable")
        starts, lengths = starts[order], lengths[order]
        self._data = wire.gather(pool.bytes(), starts.reshape(-1), lengths.reshape(-1)).tobytes()
        record_ends = np.cumsum(lengths.sum(axis=1))
        values = len(resolved.support)
        cut = np.searchsorted(value[order], np.arange(values + 1), side="left")
        ends = np.r_[0, record_ends]
        self._bounds = ends[cut].tolist()

    def tail(self, value: int) -> bytes:
        """The encoded claims, groups and counted refs of row ``value`` of the values table."""
        return self._data[self._bounds[value] : self._bounds[value + 1]]


def _records(
    pool: _Pool, tag: int | None, parts: list[tuple[wire.Bytes, Ints] | tuple[Ints, Ints]]
) -> tuple[Ints, Ints]:
    """(starts, lengths) shaped (records, _PIECES): each record's pieces in the pool,
    behind a header of ``tag`` and the record's size (none when ``tag`` is None).

    A part is either (a table of per-record bytes, each row's used size) or (pool
    starts, lengths) of strings already in the pool."""
    columns: list[tuple[Ints, Ints]] = []
    for first, second in parts:
        if first.dtype == np.uint8:
            width = first.shape[1]
            base = pool.add(first)
            columns.append((base + np.arange(len(second), dtype=np.int64) * width, second))
        else:
            columns.append((first, second))
    records = len(columns[0][1]) if columns else 0
    body = np.zeros(records, dtype=np.int64)
    for _, length in columns:
        body += length
    if tag is not None:
        table, size = _prefixed(tag, body)
        base = pool.add(table)
        columns.insert(0, (base + np.arange(records, dtype=np.int64) * 11, size))
    starts = np.zeros((records, _PIECES), dtype=np.int64)
    lengths = np.zeros((records, _PIECES), dtype=np.int64)
    for k, (start, length) in enumerate(columns):
        starts[:, k] = start
        lengths[:, k] = length
    return starts, lengths


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
