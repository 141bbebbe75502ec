"""A ResolveColumnsResponse written straight in protobuf's wire form.

The response is six byte strings (the Arrow tables), a double and a few small messages.
Building the message and serializing it copies each table twice more (into the message,
then into the output), which at a million claims cost more than the engine's largest stage
(docs/performance.md). Here every field is framed as the deterministic serializer frames it
(field-number order, defaults left out) and the tables are joined into the output once,
from the buffers the Arrow writer filled. A test holds the bytes equal to
``SerializeToString(deterministic=True)``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.protowire import delimited, delimited_parts, length_prefix, tag_of
from assay.services.resolver.columnar.output.arrow_out import Encoded
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

_RESPONSE = pb.ResolveColumnsResponse
_TABLE_FIELDS = (
    *("semantics_arrow", "values_arrow", "excluded_arrow"),
    *("claims_arrow", "groups_arrow", "warnings_arrow"),
)
# The last field by number, so appending it keeps the deterministic order.
_DIGEST_TAG = tag_of(_RESPONSE, "reliability_table_digest")


@dataclass(frozen=True, slots=True)
class Answer:
    """A ResolveColumns response as plain values."""

    tables: Encoded
    coverage: float
    conflicted_safety: list[tuple[str, str]]
    table_digest: str = ""  # the reliability table's (``Policy.digest``); "" leaves it out


def _text(name: str, text: str) -> bytes:
    """A SemanticKey string field, left out when empty (proto3's default)."""
    return delimited(tag_of(resolution_pb2.SemanticKey, name), text.encode()) if text else b""


def response_bytes(answer: Answer) -> bytes:
    """``answer`` as a serialized ResolveColumnsResponse."""
    t = answer.tables
    parts: list[Buffer] = []
    for name, table in zip(
        _TABLE_FIELDS,
        (t.semantics, t.values, t.excluded, t.claims, t.groups, t.warnings),
        strict=True,
    ):
        parts.extend(delimited_parts(tag_of(_RESPONSE, name), table))
    coverage = struct.pack("<d", answer.coverage)
    if coverage != bytes(8):  # proto3 leaves out 0.0 (not -0.0: its bits are not zero)
        parts.append(tag_of(_RESPONSE, "coverage_confidence") + coverage)
    conflicted = tag_of(_RESPONSE, "conflicted_safety_predicates")
    for subject, predicate in answer.conflicted_safety:
        key = _text("subject", subject) + _text("predicate", predicate)
        parts.append(length_prefix(conflicted, len(key)) + key)
    if answer.table_digest:
        parts.append(delimited(_DIGEST_TAG, answer.table_digest.encode()))
    return b"".join(parts)
