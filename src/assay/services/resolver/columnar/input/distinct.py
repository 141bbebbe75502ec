"""Whether a column of ids repeats one, without a hash table of a million strings.

Ids must be unique, and nearly always are, so "is any id repeated?" is asked of every
request and almost always answered no. Arrow's hash kernels insert every string into a hash
table, which at a million distinct ids is cache-bound. Here each id is instead summarised
by a 64-bit fingerprint read straight from the column's buffers (its length and its
eight-byte words, up to 64 bytes, then its last word, mixed), the fingerprints are sorted (a
SIMD sort of integers), and neighbours compared: a fraction of the hash table's time
(docs/performance.md).

Equal ids have equal fingerprints, so distinct fingerprints prove distinct ids. Equal
fingerprints prove nothing, so only the rows whose fingerprint is shared are then compared
exactly, by Arrow: the answer is exact either way. Longer ids that differ only between their
64th byte and their last eight always share one, and cost about what comparing them all
exactly would.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from assay.services.resolver.columnar.input.columns import Bools

_U64 = npt.NDArray[np.uint64]

# Ids are read in full up to this many words (64 bytes); past that, only the last word
# is added, and ids that differ only in between go to the exact check.
_WORDS = 8

# MASKS[k] keeps the low k bytes of a little-endian word: a string shorter than eight
# bytes must not read its neighbour's.
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
# Odd multipliers (from splitmix64 and xxhash) spread each word over all 64 bits.
_MIX = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xC2B2AE3D27D4EB4F),
    np.uint64(0x165667B19E3779F9),
)


def has_repeats(column: pa.Array, present: Bools) -> bool:
    """Whether two ``present`` rows of ``column`` (utf8 or large_utf8) hold the same
    string: exact, since shared fingerprints are settled by comparing the strings."""
    if int(present.sum()) < 2:
        return False
    fingerprint = _fingerprints(column)[present]
    ordered = np.sort(fingerprint)
    shared = ordered[1:] == ordered[:-1]
    if not shared.any():
        return False
    suspects = np.flatnonzero(present)[np.isin(fingerprint, ordered[1:][shared])]
    picked = column.take(pa.array(suspects, pa.int64()))
    return len(pc.unique(picked)) < len(suspects)


def _fingerprints(column: pa.Array) -> _U64:
    """One 64-bit fingerprint per row (nulls' are meaningless: the caller drops them)."""
    _, offsets_buffer, data_buffer = column.buffers()
    wide = pa.types.is_large_string(column.type)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)
    offsets = offsets[column.offset : column.offset + len(column) + 1].astype(np.int64)
    start = offsets[:-1]
    length = np.diff(offsets)
    end = int(offsets[-1])
    # Eight zero bytes after the data, so that every word read stays inside.
    padded = np.zeros(end + 8, dtype=np.uint8)
    if data_buffer is not None:
        padded[:end] = np.frombuffer(data_buffer, dtype=np.uint8)[:end]
    words: Any = np.ndarray(shape=(end + 1,), dtype="<u8", buffer=padded, strides=(1,))
    longest = int(length.max()) if len(length) else 0
    mixed: _U64 = words[start]
    short = np.flatnonzero(length < 8)  # an id shorter than a word must not read on
    if len(short):
        mixed[short] &= _MASKS[length[short]]
    # Multiplying by an odd constant is a bijection: ids of one length up to eight bytes
    # (one word) never share a fingerprint.
    mixed *= _MIX[0]
    mixed += length.astype(np.uint64) * _MIX[1]
    # Then each further word of the first _WORDS, the last one overlapping the one
    # before it (so it needs no mask), and for a longer id its last word.
    rows: Any = slice(None)
    for word in range(1, min(_WORDS, -(-longest // 8))):
        if isinstance(rows, slice) and int(length.min()) > 8 * word:
            at = start + np.minimum(8 * word, length - 8)
        else:
            rows = np.flatnonzero(length > 8 * word) if isinstance(rows, slice) else rows
            rows = rows[length[rows] > 8 * word]
            at = start[rows] + np.minimum(8 * word, length[rows] - 8)
        mixed[rows] = _fold(mixed[rows], words[at])
    if longest > 8 * _WORDS:
        longer = np.flatnonzero(length > 8 * _WORDS)
        mixed[longer] = _fold(mixed[longer], words[start[longer] + length[longer] - 8])
    return mixed


def _fold(mixed: _U64, word: _U64) -> _U64:
    """``mixed`` with one more word folded in (a multiply-xorshift round)."""
    mixed = mixed ^ (mixed >> np.uint64(29))
    mixed += word
    mixed *= _MIX[2]
    folded: _U64 = mixed ^ (mixed >> np.uint64(32))
    return folded
