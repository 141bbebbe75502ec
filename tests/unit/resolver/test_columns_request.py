"""ResolveColumns's request read with its stream uncopied equals the message protobuf parses."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import InvalidArgument, Reason
from assay.runtime.requests import parse_request
from assay.services.resolver.service import make_servicer
from assay.services.resolver.wire.columns_request import parse_columns_request
from assay.v1 import resolver_service_pb2 as pb


def _stream_field(data: bytes) -> bytes:
    """claims_arrow alone, framed by protobuf (an empty one too: a present empty field)."""
    framed = pb.ResolveColumnsRequest(claims_arrow=data).SerializeToString()
    return framed or b"\x0a\x00"


# Unknown fields of each wire type, numbered 99-102: (tag varint, then the value).
UNKNOWN = [
    b"\x98\x06" + b"\xff" * 9 + b"\x01",  # 99, varint: 2**64 - 1 in ten bytes
    b"\xa1\x06" + bytes(8),  # 100, 64-bit
    b"\xaa\x06\x03abc",  # 101, length-delimited
    b"\xb5\x06" + bytes(4),  # 102, 32-bit
]


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    """Serialized requests, with the stream anywhere, repeated, or absent, and unknown
    fields of every wire type a well-formed message may hold."""
    message = pb.ResolveColumnsRequest()
    message.detail = pb.ResolutionDetail.ValueType(draw(st.integers(0, 3)))
    if draw(st.booleans()):
        message.as_of.CopyFrom(timestamp_pb2.Timestamp(seconds=draw(st.integers(0, 2**40))))
    if draw(st.booleans()):
        message.stale_after.CopyFrom(duration_pb2.Duration(seconds=draw(st.integers(0, 10**6))))
    pieces = [message.SerializeToString()]
    for data in draw(st.lists(st.binary(max_size=300), max_size=3)):
        pieces.insert(draw(st.integers(0, len(pieces))), _stream_field(data))
    pieces += draw(st.lists(st.sampled_from(UNKNOWN), max_size=3))
    return b"".join(pieces)


@settings(max_examples=300, deadline=None)
@given(raw=requests())
def test_equal_to_protobufs_parse(raw: bytes) -> None:
    parsed = parse_columns_request(raw)
    expected = pb.ResolveColumnsRequest.FromString(raw)
    assert bytes(parsed.stream) == expected.claims_arrow
    assert isinstance(parsed.stream, memoryview)  # well formed: a view, not a copy
    expected.ClearField("claims_arrow")
    assert parsed.request == expected
    assert parsed.request.SerializeToString() == expected.SerializeToString()


def test_the_stream_is_a_view_of_the_bytes_received() -> None:
    data = bytes(range(256)) * 1000
    raw = pb.ResolveColumnsRequest(
        claims_arrow=data, detail=pb.RESOLUTION_DETAIL_SUMMARY
    ).SerializeToString()
    parsed = parse_columns_request(raw)
    assert isinstance(parsed.stream, memoryview)
    assert parsed.stream.obj is raw
    assert parsed.stream == data
    assert parsed.request.detail == pb.RESOLUTION_DETAIL_SUMMARY


@pytest.mark.parametrize(
    "raw",
    [
        b"\x0a\x05abc",  # a length past the end
        b"\x0a",  # a tag and no length
        b"\x08",  # a varint field cut off
        b"\xff" * 11,  # a tag longer than ten bytes
        b"\x00\x01",  # field number 0
        b"\x0b",  # a group never closed: left to protobuf, which refuses it
        b"\x0f",  # wire type 7
        b"\x12\x02\x08",  # as_of's length past the end
    ],
)
def test_malformed_bytes_are_refused_as_any_request_is(raw: bytes) -> None:
    with pytest.raises(InvalidArgument) as ours:
        parse_columns_request(raw)
    with pytest.raises(InvalidArgument) as usual:
        parse_request(pb.ResolveColumnsRequest, raw)
    assert ours.value.reason == usual.value.reason == Reason.MALFORMED_REQUEST
    assert str(ours.value) == str(usual.value)


def test_a_group_is_left_to_protobuf_and_read_as_it_reads_it() -> None:
    """An empty group numbered like the stream is an unknown field to protobuf."""
    raw = _stream_field(b"arrow") + b"\x0b\x0c"
    parsed = parse_columns_request(raw)
    expected = pb.ResolveColumnsRequest.FromString(raw)
    assert bytes(parsed.stream) == expected.claims_arrow == b"arrow"
    expected.ClearField("claims_arrow")
    assert parsed.request.SerializeToString() == expected.SerializeToString()


def test_a_well_framed_field_with_a_bad_body_is_refused_by_protobuf() -> None:
    """The walk checks framing only; as_of's body is parsed (and refused) as a message."""
    raw = _stream_field(b"arrow") + b"\x12\x02\xff\xff"
    with pytest.raises(InvalidArgument) as refused:
        parse_columns_request(raw)
    assert refused.value.reason == Reason.MALFORMED_REQUEST


async def test_the_servicer_takes_either_form_in_process() -> None:
    """In-process (no context) a ColumnsCall answers the message the request would get."""
    table = pa.table({"subject": ["s"], "predicate": ["p"], "value": ['"a"']})
    table = table.append_column("source", pa.array(["human_review"]))
    table = table.append_column("confidence", pa.array([0.5]))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    raw = pb.ResolveColumnsRequest(claims_arrow=sink.getvalue().to_pybytes()).SerializeToString()
    servicer: Any = make_servicer()
    try:
        message = pb.ResolveColumnsRequest.FromString(raw)
        from_message = await servicer.ResolveColumns(message, None)
        from_call = await servicer.ResolveColumns(parse_columns_request(raw), None)
    finally:
        await servicer.close()
    assert from_call == from_message
    assert from_call.values_arrow
