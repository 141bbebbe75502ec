"""A ResolveColumnsResponse written straight in protobuf's wire form.

The response is six byte strings (the Arrow tables), a double and a few small
messages. Building the message and serializing it copies each table twice more (into
the message, then into the output), and at a million claims the tables hold ~50 MB
uncompressed: the copies and the page faults of their fresh memory took ~90 ms, more
than the engine's largest stage. Here every field is framed as the deterministic
serializer frames it (field-number order, defaults left out) and the tables are joined
into the output once, from the buffers the Arrow writer filled. A test holds the bytes
equal to ``SerializeToString(deterministic=True)``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.services.resolver.columnar.output.arrow_out import Encoded
from assay.services.resolver.columnar.output.wire import field_bytes, varint

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

# (field number << 3) | wire type: 2 for length-delimited, 1 for a 64-bit double.
_TABLE_TAGS = (0x0A, 0x12, 0x1A, 0x22, 0x2A, 0x32)  # fields 1-6, *_arrow
_COVERAGE_TAG = 0x39  # field 7, coverage_confidence
_CONFLICTED_TAG = 0x42  # field 8, conflicted_safety_predicates (SemanticKey)
_SUBJECT_TAG, _PREDICATE_TAG = 0x0A, 0x12  # SemanticKey's fields 1 and 2


@dataclass(frozen=True, slots=True)
class Answer:
    """A ResolveColumns response as plain values."""

    tables: Encoded
    coverage: float
    conflicted_safety: list[tuple[str, str]]


def _delimited(tag: int, data: Buffer) -> Iterable[Buffer]:
    size = memoryview(data).nbytes
    return (bytes((tag,)) + varint(size), data) if size else ()


def _text(tag: int, text: str) -> bytes:
    """A string field, left out when empty (proto3's default)."""
    return field_bytes(tag, text.encode()) if text else b""


def response_bytes(answer: Answer) -> bytes:
    """``answer`` as a serialized ResolveColumnsResponse."""
    t = answer.tables
    parts: list[Buffer] = []
    for tag, table in zip(
        _TABLE_TAGS,
        (t.semantics, t.values, t.excluded, t.claims, t.groups, t.warnings),
        strict=True,
    ):
        parts.extend(_delimited(tag, table))
    coverage = struct.pack("<d", answer.coverage)
    if coverage != bytes(8):  # proto3 leaves out 0.0 (not -0.0: its bits are not zero)
        parts.append(bytes((_COVERAGE_TAG,)) + coverage)
    for subject, predicate in answer.conflicted_safety:
        key = _text(_SUBJECT_TAG, subject) + _text(_PREDICATE_TAG, predicate)
        parts.append(bytes((_CONFLICTED_TAG,)) + varint(len(key)) + key)
    return b"".join(parts)
