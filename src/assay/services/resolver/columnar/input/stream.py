"""Reading the request's Arrow IPC stream: bytes to a table, its schema checked, its codec.

A stream that is not Arrow IPC, or whose columns are not the ones the contract lists
(``ResolveColumnsRequest``), cannot be read row by row at all, so it is refused whole
with ERROR_REASON_MALFORMED_REQUEST, every column problem named at once
(``claims_arrow.subject``), before any row is looked at. Columns are matched by name in
any order; string columns may be utf8, large_utf8 or dictionary-encoded; an unknown
name is refused so that a misspelt optional column is never silently ignored.

The response is compressed with the request's codec. pyarrow reads a compressed stream
transparently but does not say which codec it used, so it is read from the first record
batch's header (``ipc_headers``): by ``bounds.survey``, which measures every stream before
it is read, or by ``codec_of``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import pyarrow as pa

from assay.errors import Reason
from assay.services.resolver.columnar.input import ipc_headers
from assay.services.resolver.domain.validation import Violation

FIELD: Final = "claims_arrow"

STRING = "string"
FLOAT = "float64"
INT = "int32"
TIMESTAMP = "timestamp"

# Column name -> (kind, required), in the contract's order.
COLUMNS: Final[dict[str, tuple[str, bool]]] = {
    "id": (STRING, False),
    "subject": (STRING, True),
    "predicate": (STRING, True),
    "value": (STRING, True),
    "source": (STRING, True),
    "source_ref": (STRING, False),
    "source_revision": (STRING, False),
    "method": (STRING, False),
    "confidence": (FLOAT, True),
    "reliability": (FLOAT, False),
    "observe_time": (TIMESTAMP, False),
    "correlation_group": (STRING, False),
    "relation_kind": (INT, False),
    "relation_target": (STRING, False),
    "review_status": (INT, False),
}

_EXPECTED = {
    STRING: "utf8, large_utf8 or a dictionary of utf8",
    FLOAT: "float64",
    INT: "int32",
    TIMESTAMP: "a timestamp",
}


@dataclass(frozen=True, slots=True)
class Stream:
    """The decoded claims and the codec their record batches used (None: uncompressed)."""

    table: pa.Table
    codec: str | None


_UNSURVEYED = "unsurveyed"


def read(
    data: bytes | memoryview, codec: str | None = _UNSURVEYED
) -> tuple[Stream | None, list[Violation]]:
    """The table in ``data`` with its columns checked, or the violations that stop reading.

    ``codec`` is the stream's, when a survey found it already (``bounds.survey``)."""
    try:
        reader = pa.ipc.open_stream(pa.py_buffer(data))
        table = reader.read_all()
    except (pa.ArrowException, ValueError, OSError) as error:
        return None, [_malformed(FIELD, f"not an Arrow IPC stream: {_short(error)}")]
    try:
        problems = check_schema(table.schema)
    except ValueError as error:  # a column name that is not UTF-8
        return None, [_malformed(FIELD, f"unreadable schema: {_short(error)}")]
    if problems:
        return None, problems
    try:
        # The stream is untrusted: offsets, dictionary indices and UTF-8 are checked in
        # full before anything reads them (about 2 ms per 100,000 claims).
        table.validate(full=True)
        table = table.combine_chunks()  # one chunk per column; dictionaries unified
    except (pa.ArrowException, ValueError) as error:
        return None, [_malformed(FIELD, f"invalid record batches: {_short(error)}")]
    return Stream(table, codec_of(data) if codec == _UNSURVEYED else codec), []


def check_schema(schema: pa.Schema) -> list[Violation]:
    """Every unknown, repeated, mistyped or missing column."""
    out: list[Violation] = []
    seen: set[str] = set()
    for field in schema:
        name = field.name
        path = f"{FIELD}.{name}"
        spec = COLUMNS.get(name)
        if spec is None:
            out.append(_malformed(path, f"unknown column {name!r}"))
        elif name in seen:
            out.append(_malformed(path, "the column appears more than once"))
        elif not _has_kind(field.type, spec[0]):
            out.append(_malformed(path, f"must be {_EXPECTED[spec[0]]}, not {field.type}"))
        seen.add(name)
    for name, (_, required) in COLUMNS.items():
        if required and name not in seen:
            out.append(_malformed(f"{FIELD}.{name}", "required column is missing"))
    return out


def _has_kind(kind: pa.DataType, expected: str) -> bool:
    if expected == STRING:
        if pa.types.is_dictionary(kind):
            return pa.types.is_integer(kind.index_type) and _is_text(kind.value_type)
        return _is_text(kind)
    if expected == FLOAT:
        return bool(pa.types.is_float64(kind))
    if expected == INT:
        return bool(pa.types.is_int32(kind))
    return bool(pa.types.is_timestamp(kind))


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _malformed(path: str, description: str) -> Violation:
    return Violation(Reason.MALFORMED_REQUEST, path, description)


def _short(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:200]


def codec_of(data: bytes | memoryview) -> str | None:
    """The codec of the stream's first record batch; None when uncompressed or unknown."""
    try:
        for message in pa.ipc.MessageReader.open_stream(pa.py_buffer(data)):
            if message.type == "record batch":
                return ipc_headers.record_batch(message.metadata.to_pybytes()).codec
    except (pa.ArrowException, ValueError, OSError):  # HeaderError is a ValueError
        return None
    return None
