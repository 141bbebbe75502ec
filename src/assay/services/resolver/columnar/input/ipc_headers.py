"""What an Arrow IPC message's header says, read without decompressing its body.

pyarrow reads a compressed stream transparently and does not say, before it decompresses a
record batch, how many rows it holds or how large its buffers will be. Both are in the
message: the header (a flatbuffer, ``Message.header``) is a ``RecordBatch`` (or a
``DictionaryBatch`` wrapping one) with the row count, the buffers' places and the codec, and
each compressed buffer begins with its decompressed length (an int64, -1 when left
uncompressed). Reading those fields, a stream is measured, and refused, before any of it is
decompressed: Arrow allocates exactly the declared length for each buffer, and rejects a
buffer that decompresses to any other.

The layout is Arrow's ``Message.fbs``: ``Message`` {version, header_type, header, bodyLength,
custom_metadata}; ``RecordBatch`` {length, nodes, buffers, compression, variadicBufferCounts};
``DictionaryBatch`` {id, data, isDelta}; ``Buffer`` a struct of two int64s (offset, length);
``BodyCompression`` {codec, method}. pyarrow verifies a message's flatbuffer first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

# BodyCompression.codec numbers, and the names pyarrow's writer takes.
CODECS = {0: "lz4", 1: "zstd"}
_UNCOMPRESSED = -1  # a compressed stream's buffer stored as is (its length prefix)
_PREFIX = 8  # bytes of a compressed buffer's length prefix


class HeaderError(ValueError):
    """A message header this reader cannot follow (a field points outside the metadata)."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """A record batch's header: its rows, its buffers as (offset, length) in the body,
    whether it is compressed, and its codec (None: uncompressed, or a codec pyarrow
    cannot read, which it then refuses)."""

    rows: int
    buffers: list[tuple[int, int]]
    codec: str | None
    compressed: bool


def record_batch(meta: bytes, dictionary: bool = False) -> BatchHeader:
    """The ``RecordBatch`` in a record batch message's metadata, or in a dictionary batch
    message's (``dictionary``); raises ``HeaderError`` when the metadata cannot be read."""
    try:
        message = u32(meta, 0)
        batch = table_at(meta, message, 2)
        if batch is None:
            raise HeaderError("the message has no header")
        if dictionary:
            batch = table_at(meta, batch, 1)
            if batch is None:
                raise HeaderError("the dictionary batch has no data")
        rows = _i64(meta, field(meta, batch, 0))
        buffers = []
        vector = _vector(meta, batch, 2)
        if vector is not None:
            count, start = vector
            for i in range(count):
                at = start + 16 * i
                buffers.append((_i64(meta, at), _i64(meta, at + 8)))
        compression = table_at(meta, batch, 3)
        codec = None
        if compression is not None:
            number = field(meta, compression, 0)
            codec = CODECS.get(meta[number] if number is not None else 0)
        return BatchHeader(rows, buffers, codec, compression is not None)
    except IndexError as error:
        raise HeaderError(f"a field points outside the message metadata ({error})") from None


def decompressed_bytes(header: BatchHeader, body: Buffer) -> int:
    """How many bytes the batch's buffers take once read: their lengths as sent, or, when
    the batch is compressed, the length each buffer declares in its prefix. A prefix that
    is missing or out of place counts nothing: Arrow refuses that buffer when it reads it."""
    if not header.compressed:
        return sum(max(0, length) for _, length in header.buffers)
    view = memoryview(body).cast("B")
    total = 0
    for offset, length in header.buffers:
        if length < _PREFIX or offset < 0 or offset + _PREFIX > len(view):
            continue
        declared = int.from_bytes(view[offset : offset + _PREFIX], "little", signed=True)
        if declared == _UNCOMPRESSED:
            total += length - _PREFIX
        elif declared > 0:
            total += declared
    return total


def field(meta: bytes, table: int, index: int) -> int | None:
    """Where field ``index`` of the flatbuffer table at ``table`` is stored (None: absent)."""
    vtable = table - int.from_bytes(meta[table : table + 4], "little", signed=True)
    size = u16(meta, vtable)
    slot = 4 + 2 * index
    if slot + 2 > size:
        return None
    offset = u16(meta, vtable + slot)
    return table + offset if offset else None


def table_at(meta: bytes, table: int, index: int) -> int | None:
    """The table field ``index`` of the table at ``table`` refers to (None: absent)."""
    at = field(meta, table, index)
    return None if at is None else at + u32(meta, at)


def _vector(meta: bytes, table: int, index: int) -> tuple[int, int] | None:
    """(element count, where the first element is) of a vector field (None: absent)."""
    at = field(meta, table, index)
    if at is None:
        return None
    vector = at + u32(meta, at)
    count = u32(meta, vector)
    if vector + 4 + 16 * count > len(meta):
        raise IndexError(vector)
    return count, vector + 4


def _i64(meta: bytes, at: int | None) -> int:
    """The int64 at ``at`` (0, the default, when the field is absent)."""
    if at is None:
        return 0
    if at < 0 or at + 8 > len(meta):
        raise IndexError(at)
    return int.from_bytes(meta[at : at + 8], "little", signed=True)


def u16(meta: bytes, at: int) -> int:
    if at < 0 or at + 2 > len(meta):
        raise IndexError(at)
    return int.from_bytes(meta[at : at + 2], "little")


def u32(meta: bytes, at: int) -> int:
    if at < 0 or at + 4 > len(meta):
        raise IndexError(at)
    return int.from_bytes(meta[at : at + 4], "little")
