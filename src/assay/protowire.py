"""Protobuf's wire form, for the few places that splice serialized bytes by hand.

Some paths frame a message around bytes they already hold instead of copying those bytes
into a message and serializing it again (the ResolveColumns response around the Arrow
writers' buffers, the planner's resolver requests around the serialized evidence), read
a message's top-level fields without parsing it (the ResolveColumns request's stream
taken as a view), or count a response's size as it grows (``runtime.response_budget``). They all
use this module: varints, lengths and field keys, the keys always taken from the
generated descriptors (``tag_of(Message, "field")``), never written as literal bytes.

Neutral: it imports protobuf's public descriptor API and nothing of Assay, so the
runtime, every service and the client may use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer as Buffer

# The wire types a key carries in its low three bits.
VARINT = 0
I64 = 1
LEN = 2
I32 = 5
_GROUP_START = 3
_KEY_TYPE_BITS = 3

# The longest varint: 64 bits in groups of seven.
MAX_VARINT_BYTES = 10

_FIXED64 = {
    FieldDescriptor.TYPE_DOUBLE,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}
_FIXED32 = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_SFIXED32}
_DELIMITED = {FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_MESSAGE}


def varint(value: int) -> bytes:
    """A non-negative ``value`` as a varint."""
    if value < 0:
        raise ValueError(f"a varint here is never negative: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint_size(value: int) -> int:
    """How many bytes a non-negative ``value`` takes as a varint."""
    return max(1, (value.bit_length() + 6) // 7)


def read_varint(data: Buffer, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` of ``data`` and the position after it; ValueError when it is
    cut off or longer than ``MAX_VARINT_BYTES``."""
    view = memoryview(data)
    value = shift = 0
    for i in range(pos, min(pos + MAX_VARINT_BYTES, len(view))):
        byte = view[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i + 1
        shift += 7
    raise ValueError("truncated or overlong varint")


def key(number: int, wire_type: int) -> int:
    """A field's key as a number: its field number and wire type."""
    return number << _KEY_TYPE_BITS | wire_type


def split_key(value: int) -> tuple[int, int]:
    """A key read from the wire as (field number, wire type)."""
    return value >> _KEY_TYPE_BITS, value & ((1 << _KEY_TYPE_BITS) - 1)


def wire_type(field: FieldDescriptor) -> int:
    """The wire type ``field`` is written with (a packed repeated scalar is delimited)."""
    if field.type in _DELIMITED or field.is_packed:
        return LEN
    if field.type in _FIXED64:
        return I64
    if field.type in _FIXED32:
        return I32
    if field.type == FieldDescriptor.TYPE_GROUP:
        return _GROUP_START
    return VARINT


@cache
def _key(message: Descriptor, name: str) -> tuple[int, int]:
    """(field number, key) of ``message``'s field ``name``, once per field."""
    field = message.fields_by_name.get(name)
    if field is None:
        raise KeyError(f"{message.full_name} has no field {name!r}")
    return field.number, key(field.number, wire_type(field))


def number_of(message: type[Message], name: str) -> int:
    """The field number of ``message``'s field ``name``, from its descriptor."""
    return _key(message.DESCRIPTOR, name)[0]


def key_of(message: type[Message], name: str) -> int:
    """The key of ``message``'s field ``name`` as a number (``tag_of`` as bytes)."""
    return _key(message.DESCRIPTOR, name)[1]


@cache
def _tag(message: Descriptor, name: str) -> bytes:
    return varint(_key(message, name)[1])


def tag_of(message: type[Message], name: str) -> bytes:
    """The key bytes that start ``message``'s field ``name`` on the wire."""
    return _tag(message.DESCRIPTOR, name)


def length_prefix(tag: bytes, size: int) -> bytes:
    """A length-delimited field's head: its ``tag`` and ``size`` as a varint."""
    return tag + varint(size)


def delimited(tag: bytes, data: bytes) -> bytes:
    """A whole length-delimited field: ``tag``, the length of ``data``, ``data``."""
    return tag + varint(len(data)) + data


def delimited_parts(tag: bytes, data: Buffer) -> Sequence[Buffer]:
    """A length-delimited field as its head and ``data`` itself, uncopied, for joining;
    nothing when ``data`` is empty (proto3 leaves an empty bytes field out)."""
    size = memoryview(data).nbytes
    return (length_prefix(tag, size), data) if size else ()


def element_size(tag: bytes, size: int) -> int:
    """What one length-delimited field of ``size`` payload bytes takes on the wire."""
    return len(tag) + varint_size(size) + size
