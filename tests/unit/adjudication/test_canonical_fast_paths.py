"""The direct spellings of flat string objects and lists (every ledger write hashes one)
against the general encoder they stand in for, and against RFC 8785 where the forms agree."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.services.adjudication import canonical, ledger
from assay.services.adjudication.canonical import canonical_json, encode_json, string_object_json
from assay.services.adjudication.model import AuditEventType, ChainHead

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
        assert canonical_json(value) == canonical._ENCODE(canonical._normalized(value))


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
