"""Shared by the columnar tests: plain claim rows, as a ``Claim`` list and as an Arrow table.

A generated claim is a plain dict with the columns of ``ResolveColumnsRequest``; the
same rows become the reference's ``Claim`` messages (for ResolveEvidence) and the Arrow
table the columnar path reads, so the two paths see the same claims.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from assay.protovalues import json_to_value
from assay.v1 import claim_pb2

STRING_COLUMNS = (
    "id",
    "subject",
    "predicate",
    "value",
    "source",
    "source_ref",
    "source_revision",
    "method",
    "correlation_group",
    "relation_target",
)


def to_claim(row: dict[str, Any]) -> claim_pb2.Claim:
    """The ``Claim`` a row describes (nulls and "" as unset fields)."""
    claim = claim_pb2.Claim()
    for name in ("id", "subject", "predicate", "source", "source_ref", "source_revision", "method"):
        if row.get(name):
            setattr(claim, name, row[name])
    if row.get("value"):
        json_to_value(json.loads(row["value"], parse_int=float), claim.value)
    claim.confidence = row["confidence"]
    if row.get("reliability") is not None:
        claim.reliability = row["reliability"]
    if row.get("observe_time") is not None:
        claim.observe_time.seconds = row["observe_time"]
    if row.get("correlation_group"):
        claim.correlation_group = row["correlation_group"]
    if row.get("relation_kind") is not None or row.get("relation_target"):
        claim.relation.kind = claim_pb2.RelationKind.ValueType(row.get("relation_kind") or 0)
        claim.relation.target_claim_id = row.get("relation_target") or ""
    claim.review_status = claim_pb2.ReviewStatus.ValueType(row.get("review_status") or 0)
    return claim


def to_table(rows: list[dict[str, Any]], dictionary: bool = True, unit: str = "s") -> pa.Table:
    """The Arrow table of ``rows`` (string columns dictionary-encoded when asked)."""
    columns: dict[str, pa.Array] = {}
    for name in STRING_COLUMNS:
        array = pa.array([row.get(name) for row in rows], pa.string())
        columns[name] = array.dictionary_encode() if dictionary else array
    columns["confidence"] = pa.array([row["confidence"] for row in rows], pa.float64())
    columns["reliability"] = pa.array([row.get("reliability") for row in rows], pa.float64())
    per_second = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
    columns["observe_time"] = pa.array(
        [
            None if row.get("observe_time") is None else row["observe_time"] * per_second
            for row in rows
        ],
        pa.timestamp(unit, tz="UTC"),
    )
    columns["relation_kind"] = pa.array([row.get("relation_kind") for row in rows], pa.int32())
    columns["review_status"] = pa.array([row.get("review_status") for row in rows], pa.int32())
    return pa.table(columns)


def stream(table: pa.Table, codec: str | None = None) -> bytes:
    """``table`` as an Arrow IPC stream, its batches compressed with ``codec``."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def read(data: bytes) -> pa.Table:
    """One response table."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
