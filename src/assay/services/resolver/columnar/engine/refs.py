"""Content references of id-less rows: the claim_ref the reference gives the same claim.

A claim without an id is referred to by the SHA-256 of its deterministic protobuf
serialization (``convert.claim_ref``), so the row is turned back into the ``Claim`` it
describes (nulls and empty strings as unset fields, the value parsed from its JSON
text) and hashed the same way. The engine asks only for rows whose reference decides
something (a weight tie), so this costs nothing on typical evidence; on evidence that
ties everywhere (identical id-less rows) it is most of the work, so it goes a chunk of
rows at a time and checks its stop between chunks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from assay.protovalues import json_to_value
from assay.services.resolver.columnar.input.decode import RawColumns
from assay.services.resolver.wire.convert import claim_ref
from assay.v1 import claim_pb2

_STRINGS = ("subject", "predicate", "source", "source_ref", "source_revision", "method")
CHECK_EVERY = 4096


def _carry_on() -> None:
    """The ``check`` of work nobody can stop half-way."""


class ContentRefs:
    """``refs`` for the engine: ids where rows have them, content references otherwise."""

    def __init__(
        self, table: pa.Table, raw: RawColumns, check: Callable[[], None] = _carry_on
    ) -> None:
        """``check`` may raise to abandon the work (``use_cases.stop``)."""
        self._table = table
        self._raw = raw
        self._check = check

    def __call__(self, rows: Sequence[int]) -> list[str]:
        """The references of ``rows``, ``CHECK_EVERY`` rows at a time: each pyarrow call
        that turns a chunk's column into Python objects holds the GIL throughout, so the
        chunk bounds how long the event loop waits on a worker for it (a whole column of a
        million rows held it for seconds), and the stop is checked between chunks."""
        out: list[str] = []
        for start in range(0, len(rows), CHECK_EVERY):
            self._check()
            out.extend(self._chunk(rows[start : start + CHECK_EVERY]))
        return out

    def _chunk(self, rows: Sequence[int]) -> list[str]:
        out = self._raw.ids.texts(np.asarray(rows, dtype=np.int64))
        missing = [i for i, ref in enumerate(out) if not ref]
        if missing:
            for i, claim in zip(missing, self.claims([rows[i] for i in missing]), strict=True):
                out[i] = claim_ref(claim)
        return out

    def claims(self, rows: Sequence[int]) -> list[claim_pb2.Claim]:
        """The claims ``rows`` describe, as ``Claim`` messages."""
        table = self._table
        raw = self._raw
        picked = pa.array(rows, pa.int64())
        columns = {
            name: table.column(name).take(picked).to_pylist()
            for name in (*_STRINGS, "value", "correlation_group", "id")
            if name in table.column_names
        }
        out = []
        for i, row in enumerate(rows):
            claim = claim_pb2.Claim()
            for name in _STRINGS:
                text = columns[name][i] if name in columns else None
                if text:
                    setattr(claim, name, text)
            if columns.get("id") and columns["id"][i]:
                claim.id = columns["id"][i]
            json_to_value(json.loads(columns["value"][i], parse_int=float), claim.value)
            claim.confidence = float(raw.confidence[row])
            if not raw.reliability_null[row]:
                claim.reliability = float(raw.reliability[row])
            if raw.observe.present[row]:
                seconds, nanos = raw.observe.at(row)
                claim.observe_time.seconds = seconds
                claim.observe_time.nanos = nanos
            group = columns["correlation_group"][i] if "correlation_group" in columns else None
            if group:
                claim.correlation_group = group
            if not raw.kind_null[row] or raw.targets.present[row]:
                claim.relation.kind = claim_pb2.RelationKind.ValueType(int(raw.kind[row]))
                claim.relation.target_claim_id = raw.targets.text(row)
            claim.review_status = claim_pb2.ReviewStatus.ValueType(int(raw.review[row]))
            out.append(claim)
        return out
