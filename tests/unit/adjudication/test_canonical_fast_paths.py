"""The fast spellings against what they stand in for: flat string objects and lists (every
ledger write hashes one) against the general encoder and RFC 8785, and ``jcs`` through json's
C encoder against the ``rfc8785`` package itself (differential, any JSON value)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.services.adjudication.domain import digests, ledger
from assay.services.adjudication.domain.digests import (
    canonical_json,
    encode_json,
    jcs,
    jcs_digest,
    rfc8785_jcs,
    string_object_json,
)
from assay.services.adjudication.domain.model import AuditEventType, ChainHead

# Any text, lone surrogates included: both spellings hand every string to the same encoder.
texts = st.text(max_size=24)
# What rfc8785 can encode: no lone surrogates (UTF-8 has no spelling for them).
unicode_texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=24)
ascii_keys = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=12)
general = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


class TestFlatObjects:
    @given(st.dictionaries(texts, texts, max_size=8))
    @settings(max_examples=400)
    def test_a_string_object_is_spelled_as_the_general_encoder_spells_it(
        self, value: dict[str, str]
    ) -> None:
        """Keys sorted by code point, every string as json spells it: the same text."""
        assert string_object_json(value) == general(value)
        assert canonical_json(value) == general(value)

    @given(st.dictionaries(ascii_keys, unicode_texts, max_size=8))
    @settings(max_examples=300)
    def test_with_ascii_keys_it_is_rfc8785(self, value: dict[str, str]) -> None:
        """Where v1 and JCS agree (ASCII keys), the direct spelling is JCS byte for byte."""
        assert canonical_json(value).encode("utf-8") == rfc8785.dumps(value)

    @pytest.mark.parametrize(
        "value",
        [{"a": 1}, {"a": None}, {"a": ["x"]}, {1: "x"}, {"a": "x", "b": 2.0}, {"a": True}],
    )
    def test_anything_else_takes_the_general_path(self, value: dict[Any, Any]) -> None:
        """A value or key that is not a string is normalized as before (2.0 spelled 2)."""
        assert string_object_json(value) is None
        assert canonical_json(value) == digests._ENCODE(digests._normalized(value))


class TestFlatLists:
    @given(st.lists(texts, max_size=8))
    @settings(max_examples=300)
    def test_a_string_list_or_tuple_is_spelled_as_the_general_encoder_spells_it(
        self, value: list[str]
    ) -> None:
        """Lists and tuples of strings (answer commitments) give the general encoder's text."""
        assert canonical_json(value) == general(value)
        assert canonical_json(tuple(value)) == general(value)

    def test_a_list_with_a_number_is_normalized(self) -> None:
        """An integral float in a list is still written as an integer."""
        assert canonical_json(["a", 2.0]) == '["a",2]'


class TestStrings:
    @given(texts)
    def test_one_string_is_spelled_as_the_encoder_spells_it(self, value: str) -> None:
        """``encode_json`` and ``canonical_json`` of a string: the general encoder's text."""
        assert encode_json(value) == general(value) == canonical_json(value)


class TestLedgerPayloads:
    AT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

    @given(st.dictionaries(ascii_keys, unicode_texts, max_size=6))
    @settings(max_examples=200)
    def test_the_stored_payload_and_the_hash_match_the_general_form(
        self, payload: dict[str, str]
    ) -> None:
        """What ``extend`` stores and hashes is the payload's general canonical JSON."""
        head = ChainHead(7, "sha256:" + "ab" * 32)
        event, stored = ledger.extend(head, AuditEventType.REVIEW_SUBMITTED, payload, self.AT)
        assert stored == general(payload)
        assert event.hash == ledger.event_hash(
            8, AuditEventType.REVIEW_SUBMITTED, self.AT, payload, head.hash
        )

    def test_a_payload_that_is_not_strings_is_refused(self) -> None:
        """Payloads hold ids, digests and counts as strings: anything else is a bug."""
        head = ChainHead(0, "sha256:" + "0" * 64)
        payload: dict[str, Any] = {"count": 3}
        with pytest.raises(TypeError):
            ledger.extend(head, AuditEventType.REVIEW_SUBMITTED, payload, self.AT)

    def test_a_string_subclass_is_still_a_string(self) -> None:
        """A ``str`` subclass value is accepted and spelled as its text."""

        class Name(str):
            pass

        head = ChainHead(0, "sha256:" + "0" * 64)
        payload = {"id": Name("x")}
        _, stored = ledger.extend(head, AuditEventType.REVIEW_SUBMITTED, payload, self.AT)
        assert stored == '{"id":"x"}'


# Everything rfc8785 treats specially: doubles of every kind (-0.0, integral, huge, tiny),
# integers past 2**53, lone surrogates, keys outside the BMP and beside U+E000.
awkward_text = st.text(max_size=8) | st.sampled_from(
    ["\ud800", "a\udfff", "\U0001f600", "\ue000", "\uffff", "\u2028", "\x7f", "\x1f", ""]
)
numbers = (
    st.floats()
    | st.integers()
    | st.integers(-(2**53), 2**53).map(float)
    | st.sampled_from([-0.0, 1e21, 1e-7, 2.0**53, 2.0**53 + 2, 123456789012345680000])
)
any_json = st.recursive(
    awkward_text | numbers | st.booleans() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(awkward_text, inner, max_size=4)
    ),
    max_leaves=16,
)


def _outcome(encode: Any, value: Any) -> str:
    try:
        return "ok:" + str(encode(value))
    except (ValueError, TypeError) as error:
        return f"refused:{type(error).__name__}"


class TestJcsAgainstRfc8785:
    @given(any_json)
    @settings(max_examples=1500)
    def test_jcs_spells_every_value_as_the_rfc8785_package_does(self, value: Any) -> None:
        """The fast path gives rfc8785's bytes, or is refused alike (NaN, lone surrogates)."""
        assert _outcome(jcs, value) == _outcome(rfc8785_jcs, value)

    @given(st.dictionaries(st.text(max_size=8), any_json, max_size=6))
    @settings(max_examples=500)
    def test_objects_with_any_keys_agree(self, value: dict[str, Any]) -> None:
        """Key order (UTF-16 code units in JCS) agrees whichever path the object takes."""
        assert _outcome(jcs, value) == _outcome(rfc8785_jcs, value)

    def test_a_case_shaped_value_takes_the_fast_path_and_digests_alike(self) -> None:
        """What a case's content digest hashes: fast, and the same digest as rfc8785's."""
        content: dict[str, Any] = {
            "v": "assay.case.v2",
            "case_id": "case_0123456789abcdef",
            "candidate_values": [1.0, "safe", {"mode": "key", "n": 2.0}, None, True],
            "lineage": {"origin": "bench", "origin_ref": "é"},
            "create_time": "2026-01-02T03:04:05.678901Z",
        }
        expected = rfc8785.dumps(content).decode("utf-8")
        assert jcs(content) == expected
        assert jcs_digest(content) == "sha256:" + hashlib.sha256(expected.encode()).hexdigest()
