"""Arrow IPC streams for the ResolveColumns limits: identical rows (which compress to
almost nothing, the hostile case) and varied ones, written with any codec and batching."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def identical(rows: int, **extra: Any) -> pa.Table:
    """``rows`` identical id-less claims, strings dictionary-encoded: what compresses best,
    and (every row tying with every other) the engine's slowest rows."""
    columns: dict[str, Any] = {
        "subject": pa.array(["s"] * rows).dictionary_encode(),
        "predicate": pa.array(["p"] * rows).dictionary_encode(),
        "value": pa.array(['"v"'] * rows).dictionary_encode(),
        "source": pa.array(["test_result"] * rows).dictionary_encode(),
        "confidence": pa.array([0.9] * rows, pa.float64()),
    }
    columns.update(extra)
    return pa.table(columns)


def varied(rows: int) -> pa.Table:
    """``rows`` distinct claims with ids, plain strings."""
    return pa.table(
        {
            "id": [f"c{i}" for i in range(rows)],
            "subject": [f"s{i % 97}" for i in range(rows)],
            "predicate": ["p"] * rows,
            "value": [f'"v{i % 3}"' for i in range(rows)],
            "source": ["test_result"] * rows,
            "source_ref": [f"ref-{i}" for i in range(rows)],
            "confidence": [0.5 + (i % 40) / 100 for i in range(rows)],
        }
    )


def ipc(table: pa.Table, codec: str | None = None, batches: int = 1) -> bytes:
    """``table`` written as an IPC stream of ``batches`` record batches."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        for batch in table.to_batches(max_chunksize=max(1, -(-table.num_rows // batches))):
            writer.write_batch(batch)
    data: bytes = sink.getvalue().to_pybytes()
    return data
