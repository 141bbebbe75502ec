"""A ResolveColumns stream measured before it is read, and refused if it holds too much.

The stream may be compressed, and what it costs the server (decoding, the engine, the
response) grows with the rows and bytes it decompresses to, not with the bytes received: a
few kilobytes of ZSTD can declare a million identical rows. So before pyarrow reads any
record batch, ``survey`` walks the stream's messages (``pyarrow.ipc.MessageReader``: each a
view of the bytes received, nothing decompressed) and adds up, from each header
(``ipc_headers``), the rows and the decompressed bytes of its batches and dictionaries. After
each message the totals are held to the server's ``ColumnsLimits``
(``domain.request_cost.charge_columns``), so the refusal comes at the first message past a
limit, having decompressed nothing.

The walk checks its ``stop`` every ``CHECK_EVERY`` messages, so very many small messages
cannot hold a worker past its caller. A header it cannot follow is a malformed stream (never
read unmeasured); bytes that are no stream at all are left to ``stream.read`` to report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from assay.errors import Reason
from assay.services.resolver.columnar.input import ipc_headers
from assay.services.resolver.domain.request_cost import ColumnsLimits, charge_columns
from assay.services.resolver.domain.validation import Violation

CHECK_EVERY = 256
_RECORD_BATCH = "record batch"
_DICTIONARY = "dictionary"


def _carry_on() -> None:
    """The ``check`` of a walk nobody can stop half-way."""


@dataclass(frozen=True, slots=True)
class Survey:
    """What a stream's headers declare: its rows, its bytes once decompressed, the codec
    of its first record batch (None: uncompressed), and the problem that stopped the walk
    (None: none, or bytes that are not a stream, which ``stream.read`` reports)."""

    rows: int
    decompressed: int
    codec: str | None
    problem: Violation | None = None


def survey(
    data: bytes | memoryview,
    limits: ColumnsLimits,
    check: Callable[[], None] = _carry_on,
) -> Survey:
    """Measure ``data`` and hold it to ``limits``; raise ResourceExhausted past one."""
    received = len(data)
    rows = decompressed = 0
    codec: str | None = None
    first = True
    try:
        reader = pa.ipc.MessageReader.open_stream(pa.py_buffer(data))
        for count, message in enumerate(reader, 1):
            if not count % CHECK_EVERY:
                check()
            kind = message.type
            if kind not in (_RECORD_BATCH, _DICTIONARY):
                continue
            header = ipc_headers.record_batch(message.metadata.to_pybytes(), kind == _DICTIONARY)
            if kind == _RECORD_BATCH:
                rows += max(0, header.rows)
                if first:
                    codec, first = header.codec, False
            body = message.body
            if body is not None:
                decompressed += ipc_headers.decompressed_bytes(header, body)
            charge_columns(limits, rows, decompressed, received)
    except ipc_headers.HeaderError as error:
        problem = Violation(
            Reason.MALFORMED_REQUEST, "claims_arrow", f"unreadable record batch header: {error}"
        )
        return Survey(rows, decompressed, codec, problem)
    except (pa.ArrowException, ValueError, OSError):
        pass  # not a stream from here on: ``stream.read`` stops at the same place
    return Survey(rows, decompressed, codec)
