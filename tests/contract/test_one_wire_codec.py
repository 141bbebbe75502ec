"""Protobuf bytes are spliced with ``assay.protowire`` only: no literal keys, no varint coders.

Every place that frames or reads protobuf's wire form by hand takes field keys from the
generated descriptors (``protowire.tag_of``) and varints from the codec. This scans the
sources (the generated ``assay.v1`` aside) for what a hand-written coder looks like: a
key built by shifting a field number, a wire type masked out of a key, the varint
continuation bit, or a ``*_TAG``/``*_KEY`` constant written as a number or bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"
CODEC = SRC / "protowire.py"

HAND_CODING = {
    "a key built from a field number": re.compile(r"<<\s*3\b|>>\s*3\b"),
    "a wire type masked out of a key": re.compile(r"&\s*7\b"),
    "a varint's continuation bit": re.compile(r"&\s*0x7[fF]\b|\|\s*0x80\b|[<>]=?\s*0x80\b"),
    "a literal key": re.compile(
        r"(?i)_(?:tag|key)s?\s*(?::[^=]+)?=\s*[(\[]?\s*(?:0x[0-9a-f]+|\d+\s*(?:<<|,)|b[\"'])"
    ),
    "a literal key byte": re.compile(r"bytes\(\s*[(\[]\s*0x[0-9a-fA-F]+"),
}


def offences(text: str) -> list[str]:
    """Each hand-coding pattern ``text`` shows, by name."""
    return [name for name, pattern in HAND_CODING.items() if pattern.search(text)]


def sources() -> list[Path]:
    return sorted(
        path
        for path in SRC.rglob("*.py")
        if path != CODEC and "v1" not in path.relative_to(SRC).parts
    )


class TestOneWireCodec:
    def test_no_source_codes_protobuf_by_hand(self) -> None:
        """Outside the codec (and the generated code) no source frames keys or varints."""
        found = {
            str(path.relative_to(SRC)): offences(path.read_text(encoding="utf-8"))
            for path in sources()
        }
        assert {path: names for path, names in found.items() if names} == {}
        assert len(found) > 50  # the scan saw the sources

    def test_the_codec_itself_is_what_the_scan_would_catch(self) -> None:
        """The patterns are live: the codec's own varint writer trips them."""
        assert "a varint's continuation bit" in offences(CODEC.read_text(encoding="utf-8"))

    @pytest.mark.parametrize(
        ("line", "name"),
        [
            ("_EVIDENCE_TAG = _varint(1 << 3 | 2)", "a key built from a field number"),
            ("number, wire_type = tag >> 3, tag & 7", "a wire type masked out of a key"),
            ("        out.append((n & 0x7F) | 0x80)", "a varint's continuation bit"),
            ("_TABLE_TAGS = (0x0A, 0x12, 0x1A)", "a literal key"),
            ("_COVERAGE_TAG = 0x39  # field 7", "a literal key"),
            ('_STREAM_KEY = b"\\x0a"', "a literal key"),
            ("parts.append(bytes((0x42,)) + key)", "a literal key byte"),
        ],
    )
    def test_each_way_of_hand_coding_is_caught(self, line: str, name: str) -> None:
        """Lines that hand-coded protobuf before the codec existed are each caught."""
        assert name in offences(line)
