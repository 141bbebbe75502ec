"""The wire codec writes and reads exactly what protobuf does, keyed from the descriptors."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, wrappers_pb2
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from assay import protowire
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb

UINT64 = st.integers(min_value=0, max_value=2**64 - 1)


class TestVarint:
    @given(UINT64)
    def test_a_varint_is_protobufs(self, value: int) -> None:
        """A value's varint is what protobuf writes for a uint64 field, after its key."""
        message = wrappers_pb2.UInt64Value(value=value).SerializeToString()
        tag = protowire.tag_of(wrappers_pb2.UInt64Value, "value")
        assert message == (tag + protowire.varint(value) if value else b"")

    @given(UINT64)
    def test_read_varint_reads_what_varint_wrote_and_the_size_agrees(self, value: int) -> None:
        """Reading a written varint gives the value back and the position after it."""
        written = protowire.varint(value)
        assert protowire.read_varint(b"\xff" + written + b"rest", 1) == (value, 1 + len(written))
        assert protowire.varint_size(value) == len(written)

    @pytest.mark.parametrize(
        "data", [b"", b"\x80", b"\xff" * 3, b"\xff" * protowire.MAX_VARINT_BYTES + b"\x01"]
    )
    def test_a_cut_off_or_overlong_varint_is_refused(self, data: bytes) -> None:
        """A varint with no last byte, or longer than ten bytes, raises ValueError."""
        with pytest.raises(ValueError, match="varint"):
            protowire.read_varint(data, 0)

    def test_a_negative_value_is_refused(self) -> None:
        """Negative numbers are never framed here (protobuf writes them in ten bytes)."""
        with pytest.raises(ValueError, match="negative"):
            protowire.varint(-1)


class TestTagOf:
    @given(st.binary(max_size=300), st.sampled_from(["semantics_arrow", "warnings_arrow"]))
    def test_a_delimited_bytes_field_is_protobufs(self, data: bytes, name: str) -> None:
        """A bytes field framed with ``tag_of`` serializes as protobuf serializes it."""
        message = pb.ResolveColumnsResponse()
        setattr(message, name, data)
        expected = message.SerializeToString()
        framed = b"".join(
            bytes(part)
            for part in protowire.delimited_parts(
                protowire.tag_of(pb.ResolveColumnsResponse, name), data
            )
        )
        assert framed == expected

    @given(st.text(min_size=1, max_size=200), st.text(min_size=1, max_size=200))
    def test_a_message_field_is_protobufs(self, subject: str, predicate: str) -> None:
        """A repeated message field framed by hand equals the serialized message."""
        key = resolution_pb2.SemanticKey
        inner = protowire.delimited(
            protowire.tag_of(key, "subject"), subject.encode()
        ) + protowire.delimited(protowire.tag_of(key, "predicate"), predicate.encode())
        tag = protowire.tag_of(pb.ResolveColumnsResponse, "conflicted_safety_predicates")
        message = pb.ResolveColumnsResponse()
        message.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
        assert protowire.delimited(tag, inner) == message.SerializeToString()
        assert protowire.element_size(tag, len(inner)) == message.ByteSize()

    @given(st.floats(allow_nan=False).filter(bool))
    def test_a_double_field_is_protobufs(self, value: float) -> None:
        """A double's key carries the 64-bit wire type."""
        message = pb.ResolveColumnsResponse(coverage_confidence=value).SerializeToString()
        assert message.startswith(
            protowire.tag_of(pb.ResolveColumnsResponse, "coverage_confidence")
        )
        assert (
            len(message)
            == len(protowire.tag_of(pb.ResolveColumnsResponse, "coverage_confidence")) + 8
        )

    @pytest.mark.parametrize(
        ("message", "field", "value", "wire_type"),
        [
            (pb.ResolveColumnsRequest, "detail", pb.RESOLUTION_DETAIL_SUMMARY, protowire.VARINT),
            (wrappers_pb2.FloatValue, "value", 1.5, protowire.I32),
            (wrappers_pb2.BoolValue, "value", True, protowire.VARINT),
            (wrappers_pb2.StringValue, "value", "x", protowire.LEN),
            (descriptor_pb2.SourceCodeInfo.Location, "path", [1, 2], protowire.LEN),  # packed
        ],
    )
    def test_each_wire_type_comes_from_the_descriptor(
        self, message: type[Message], field: str, value: object, wire_type: int
    ) -> None:
        """The key's wire type is the field's (a packed repeated scalar is delimited), and
        the serialized field starts with it."""
        instance = message()
        if isinstance(value, list):
            getattr(instance, field).extend(value)
        else:
            setattr(instance, field, value)
        tag = protowire.tag_of(message, field)
        assert instance.SerializeToString().startswith(tag)
        number = message.DESCRIPTOR.fields_by_name[field].number
        assert protowire.split_key(protowire.read_varint(tag, 0)[0]) == (number, wire_type)

    def test_a_field_number_past_fifteen_takes_two_key_bytes(self) -> None:
        """Keys are varints: a field numbered 16 or more has a two-byte key."""
        assert len(protowire.varint(protowire.key(16, protowire.LEN))) == 2

    def test_an_unknown_field_is_refused(self) -> None:
        """A misspelt field name fails loudly rather than framing a wrong key."""
        with pytest.raises(KeyError, match="claims_arow"):
            protowire.tag_of(pb.ResolveColumnsRequest, "claims_arow")
