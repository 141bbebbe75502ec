"""Protobuf wire form written by hand: a varint, and a length-delimited field.

``response`` frames the ResolveColumns response straight from the Arrow writers'
buffers with these.
"""

from __future__ import annotations


def field_bytes(tag: int, data: bytes) -> bytes:
    """A length-delimited field: ``tag`` (one byte), the length as a varint, ``data``."""
    size = len(data)
    if size < 0x80:
        return bytes((tag, size)) + data
    return bytes([tag]) + varint(size) + data


def varint(value: int) -> bytes:
    """A non-negative ``value`` as a varint."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
