"""ResolveColumns's request read without copying its Arrow stream.

A ``ResolveColumnsRequest`` is a few small fields and one large one, the stream
(``claims_arrow``, field 1). Parsed as a message, the stream is copied into the message and
again when the field is read, which at a million claims costs more than much of the work
(docs/performance.md). Here the request's top-level fields are walked (tags and lengths
only), the stream is taken as a view of the bytes received, and only the remaining fields
are parsed as the message. Bytes that are not a well-formed message are parsed whole as
usual, so they are refused exactly as any other request is (``parse_request``).
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.protowire import I32, I64, LEN, VARINT, key_of, read_varint, split_key
from assay.runtime.requests import parse_request
from assay.v1 import resolver_service_pb2 as pb

_STREAM_KEY = key_of(pb.ResolveColumnsRequest, "claims_arrow")
_FIXED_SIZE = {I64: 8, I32: 4}


@dataclass(frozen=True, slots=True)
class ColumnsCall:
    """A parsed ResolveColumns request: every field but the stream, and the stream."""

    request: pb.ResolveColumnsRequest  # claims_arrow left empty
    stream: bytes | memoryview


def parse_columns_request(raw: bytes) -> ColumnsCall:
    """``raw`` as a ``ColumnsCall``; InvalidArgument when it is not a request."""
    found = _split(raw)
    if found is None:  # malformed, or a shape this walk does not take: the usual way
        message = parse_request(pb.ResolveColumnsRequest, raw)
        assert isinstance(message, pb.ResolveColumnsRequest)
        copied = message.claims_arrow
        message.ClearField("claims_arrow")
        return ColumnsCall(message, copied)
    rest, view = found
    message = parse_request(pb.ResolveColumnsRequest, rest)
    assert isinstance(message, pb.ResolveColumnsRequest)
    return ColumnsCall(message, view)


def _split(raw: bytes) -> tuple[bytes, memoryview] | None:
    """(every field but the stream, the last stream's bytes), or None when ``raw`` is not
    a sequence of well-formed top-level fields."""
    view = memoryview(raw)
    kept: list[memoryview] = []
    stream = view[0:0]
    pos, end = 0, len(raw)
    try:
        while pos < end:
            field_start = pos
            key, pos = read_varint(raw, pos)
            number, wire_type = split_key(key)
            if number == 0:
                return None
            if wire_type == VARINT:
                _, pos = read_varint(raw, pos)
            elif wire_type in _FIXED_SIZE:
                pos += _FIXED_SIZE[wire_type]
            elif wire_type == LEN:
                size, pos = read_varint(raw, pos)
                if key == _STREAM_KEY and pos + size <= end:
                    stream = view[pos : pos + size]  # a repeated singular field: the last wins
                    pos += size
                    continue
                pos += size
            else:  # groups and invalid wire types: left to the parser
                return None
            if pos > end:
                return None
            kept.append(view[field_start:pos])
    except ValueError:  # a varint cut off or too long: left to the parser
        return None
    return b"".join(kept), stream
