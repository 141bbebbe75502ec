"""The claim table as the engine reads it: integer codes and plain arrays, one entry per row.

Every string column is factorized once, in Arrow (hash-based, in C++), into codes
into its distinct strings; everything after that is NumPy on integers and floats.
Codes are chosen so that comparing codes compares what the reference compares:
semantic codes follow (subject, predicate) order and value codes follow value_key
order, so "ties by lowest value_key" and "ordered by subject then predicate" are
integer comparisons. Each distinct value text is parsed once (``texts``) and texts
with the same canonical key become one value.

``Coded`` columns use -1 for "absent": null, or the empty string, which the contract
treats alike in every string column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

Ints: TypeAlias = npt.NDArray[np.int64]
Floats: TypeAlias = npt.NDArray[np.float64]
Bools: TypeAlias = npt.NDArray[np.bool_]

ABSENT = -1


@dataclass(frozen=True, slots=True)
class Coded:
    """A string column as codes (``ABSENT`` for null or "") into its distinct strings."""

    codes: Ints
    strings: pa.Array  # utf8 / large_utf8, no nulls, no "", no duplicates
    present: Bools = field(init=False)  # computed once: rare-row code reads it per row

    def __post_init__(self) -> None:
        object.__setattr__(self, "present", self.codes != ABSENT)

    def text(self, row: int) -> str:
        code = int(self.codes[row])
        return "" if code == ABSENT else str(self.strings[code].as_py())

    def texts(self, rows: Ints) -> list[str]:
        """The strings of many rows at once ("" where absent)."""
        codes = self.codes[rows]
        found = self.strings.take(np.maximum(codes, 0)).to_pylist() if len(self.strings) else []
        return [
            text if code != ABSENT else ""
            for code, text in zip(codes.tolist(), found or [""] * len(codes), strict=True)
        ]


@dataclass(frozen=True, slots=True)
class Plain:
    """A string column kept as it came (ids: unique, so codes would only repeat rows)."""

    column: pa.Array  # utf8 or large_utf8
    present: Bools  # neither null nor ""

    def text(self, row: int) -> str:
        return str(self.column[row].as_py() or "")

    def texts(self, rows: Ints) -> list[str]:
        """The strings of many rows at once ("" where absent)."""
        return [text or "" for text in self.column.take(rows).to_pylist()]


def plain(column: pa.Array) -> Plain:
    """A string column as ``Plain`` (a dictionary-encoded one is decoded)."""
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    present = pc.fill_null(pc.not_equal(column, pa.scalar("", column.type)), False)
    return Plain(column, np.asarray(present.to_numpy(zero_copy_only=False), dtype=np.bool_))


def coded(column: pa.Array) -> Coded:
    """Factorize one string column (plain or dictionary-encoded, one chunk)."""
    if pa.types.is_dictionary(column.type):
        distinct = pc.dictionary_encode(column.dictionary)
        remap = _codes(distinct.indices, distinct.dictionary)
        # A null dictionary entry or "" maps to -1; a null index reads the extra slot.
        codes: Ints = np.append(remap, ABSENT)[_numbers(column.indices, -1)]
        return Coded(codes, distinct.dictionary)
    encoded = pc.dictionary_encode(column)
    return Coded(_codes(encoded.indices, encoded.dictionary), encoded.dictionary)


def _numbers(column: pa.Array, default: float) -> npt.NDArray[Any]:
    """A numeric column as NumPy, ``default`` where null (zero-copy when there is none)."""
    if column.null_count:
        column = pc.fill_null(column, default)
    return np.asarray(column.to_numpy(zero_copy_only=False))


def _codes(indices: pa.Array, dictionary: pa.Array) -> Ints:
    codes: Ints = _numbers(indices, -1).astype(np.int64)
    empty = pc.index(dictionary, "").as_py() if len(dictionary) else -1
    if empty is not None and empty >= 0:
        codes[codes == empty] = ABSENT
    return codes


def _nulls(column: pa.Array) -> Bools:
    if not column.null_count:
        return np.zeros(len(column), dtype=np.bool_)
    return np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)


def floats(column: pa.Array) -> tuple[Floats, Bools]:
    """A float64 column as values (NaN where null) and its null mask."""
    return _numbers(column, float("nan")).astype(np.float64, copy=False), _nulls(column)


def ints(column: pa.Array, default: int) -> tuple[Ints, Bools]:
    """An int32 column as int64 values (``default`` where null) and its null mask."""
    return _numbers(column, default).astype(np.int64), _nulls(column)


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


@dataclass(frozen=True, slots=True)
class Times:
    """A timestamp column as read: ticks of 1 / ``per_second`` s since the epoch (0 where
    null) and the rows that hold one. Seconds and nanos, as a ``Timestamp`` has them, are
    worked out only for the rows that need them."""

    ticks: Ints
    per_second: int
    present: Bools

    def seconds_nanos(self, rows: Ints | None = None) -> tuple[Ints, Ints]:
        """(seconds, nanos) of ``rows`` (every row when None): seconds floored, so nanos
        >= 0 before the epoch."""
        ticks = self.ticks if rows is None else self.ticks[rows]
        seconds = ticks // self.per_second
        nanos = (ticks - seconds * self.per_second) * (1_000_000_000 // self.per_second)
        return seconds, nanos

    def at(self, row: int) -> tuple[int, int]:
        """(seconds, nanos) of one row."""
        seconds, nanos = self.seconds_nanos(np.array([row], dtype=np.int64))
        return int(seconds[0]), int(nanos[0])

    def outside(self, low: int, high: int) -> Bools:
        """The present rows whose seconds fall outside [low, high], compared on the ticks
        (bounds past int64's range, which no tick can cross, are left out)."""
        below, above = low * self.per_second, (high + 1) * self.per_second
        out = np.zeros(len(self.ticks), dtype=np.bool_)
        if below > np.iinfo(np.int64).min:
            out |= self.ticks < below
        if above <= np.iinfo(np.int64).max:
            out |= self.ticks >= above
        out &= self.present
        return out


def times(column: pa.Array) -> Times:
    """A timestamp column of any unit, as ``Times``."""
    present = ~_nulls(column)
    ticks = _numbers(column.cast(pa.int64()), 0).astype(np.int64, copy=False)
    return Times(ticks, _PER_SECOND[column.type.unit], np.asarray(present, dtype=np.bool_))


def dense(keys: Ints, size: int) -> tuple[Ints, Ints]:
    """Factorize non-negative ``keys`` below ``size``: (code per key, the key of each code),
    codes in ascending key order. A presence table when ``size`` is small, else a sort."""
    if size <= 4 * len(keys) + 1024:
        seen = np.zeros(size, dtype=np.bool_)
        seen[keys] = True
        distinct = np.flatnonzero(seen)
        lookup = np.zeros(size, dtype=np.int64)
        lookup[distinct] = np.arange(len(distinct), dtype=np.int64)
        return lookup[keys], distinct.astype(np.int64)
    distinct, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64), distinct.astype(np.int64)


def ranks(strings: pa.Array) -> Ints:
    """Each string's rank in code point order (UTF-8 byte order is code point order)."""
    order = pc.sort_indices(strings).to_numpy(zero_copy_only=False)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank
