"""The two canonical forms: where legacy v1 and RFC 8785 agree, where they differ, and
that labels compare alike whichever form their key was stored in."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.services.adjudication.domain import agreement, ledger, reviews, state
from assay.services.adjudication.domain.digests import (
    canonical_json,
    digest,
    jcs,
    jcs_digest,
    same_label_key,
)
from assay.services.adjudication.domain.model import Actor, AuditEventType, Outcome, Review

SAFE = 2**53 - 1
ascii_keys = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=12)
leaves = st.text() | st.integers(-SAFE, SAFE) | st.booleans() | st.none()
ascii_objects = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ascii_keys, inner, max_size=4),
    max_leaves=20,
)
doubles = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.text() | doubles | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _jcs_sha256(value: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def _review(key: str) -> Review:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return Review("r", "c", "x", 1, Outcome.LABEL, json.loads(key), key, "", at)


class TestWhereTheFormsAgree:
    @settings(deadline=None)  # shared CI cores: a slow first example is not a failure
    @given(ascii_objects)
    def test_ascii_keys_strings_and_safe_integers_are_spelled_alike(self, value: Any) -> None:
        """For strings, safe integers and objects with ASCII keys, v1 is byte for byte JCS."""
        assert canonical_json(value).encode("utf-8") == rfc8785.dumps(value)
        assert digest(value) == _jcs_sha256(value) == jcs_digest(value)

    @settings(deadline=None)  # shared CI cores: a slow first example is not a failure
    @given(
        sequence=st.integers(1, 2**40),
        payload=st.dictionaries(ascii_keys, st.text(), max_size=6),
        previous=st.text(),
        actor=st.none() | st.tuples(st.text(), st.text()),
    )
    def test_audit_event_hashes_are_jcs(
        self,
        sequence: int,
        payload: dict[str, str],
        previous: str,
        actor: tuple[str, str] | None,
    ) -> None:
        """An event hash (ASCII keys, string payload values) is sha256 of the event's JCS form."""
        at = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
        who = Actor(*actor) if actor else None
        hashed = ledger.event_hash(
            sequence, AuditEventType.CASE_ENQUEUED, at, payload, previous, who
        )
        event: dict[str, Any] = {
            "sequence": sequence,
            "event_type": "CASE_ENQUEUED",
            "occur_time": "2026-05-01T12:00:00.123456Z",
            "payload": payload,
            "previous_hash": previous,
        }
        if who is not None:
            event["actor"] = {"issuer": who.issuer, "subject": who.subject}
        assert hashed == _jcs_sha256(event)

    @settings(deadline=None)  # shared CI cores: a slow first example is not a failure
    @given(salt=st.text(), key=st.text(), reason=st.text())
    def test_answer_and_resolution_commitments_are_jcs(
        self, salt: str, key: str, reason: str
    ) -> None:
        """The commitments digest strings and lists of strings: the same bytes as JCS."""
        at = datetime(2026, 1, 1, tzinfo=UTC)
        review = Review("r", "c", "x", 1, Outcome.LABEL, None, key, reason, at, salt)
        expected = [salt, "LABEL", key, reason] if salt else ["LABEL", key, reason]
        assert reviews.answer_commitment(review) == _jcs_sha256(expected)
        assert digest(key) == _jcs_sha256(key)


class TestWhereTheyDiffer:
    def test_numbers_and_astral_keys_are_why_v1_is_versioned(self) -> None:
        """The documented differences: exponent spelling, large doubles, UTF-16 key order."""
        assert canonical_json(1e-7) == "1e-07"
        assert jcs(1e-7) == "1e-7"
        assert canonical_json(1.2345678901234568e20) == "1.2345678901234568e+20"
        assert jcs(1.2345678901234568e20) == "123456789012345680000"
        keys = {"\U0001f600": 1, "\ue000": 2}
        assert canonical_json(keys) == '{"\ue000":2,"\U0001f600":1}'
        assert jcs(keys) == '{"\U0001f600":1,"\ue000":2}'

    def test_non_finite_numbers_are_refused(self) -> None:
        """NaN has no JSON form in either: a ValueError, which validation turns into a field."""
        for value in (math.nan, math.inf, [1.0, -math.inf]):
            try:
                jcs(value)
            except ValueError:
                continue
            raise AssertionError(f"{value!r} was encoded")


class TestLabelsCompareInJcsForm:
    @settings(deadline=None)  # shared CI cores: a slow first example is not a failure
    @given(json_values)
    def test_a_legacy_key_and_a_jcs_key_of_one_value_compare_equal(self, value: Any) -> None:
        """same_label_key maps the v1 key and the JCS key of a value to its JCS form."""
        if value is None:
            return
        expected = rfc8785.dumps(value).decode("utf-8")
        assert same_label_key(canonical_json(value)) == expected
        assert same_label_key(expected) == expected

    def test_a_round_split_only_by_spelling_is_unanimous(self) -> None:
        """A review keyed 1e-07 (before JCS) and one keyed 1e-7 (after) agree."""
        old, new = _review("1e-07"), _review("1e-7")
        assert state.unanimous([old, new])
        assert agreement.category(old) == agreement.category(new)
        objects = '{"\ue000":2,"\U0001f600":1}', '{"\U0001f600":1,"\ue000":2}'
        assert state.unanimous([_review(objects[0]), _review(objects[1])])

    def test_different_labels_still_disagree(self) -> None:
        """Re-spelling never merges two values."""
        assert not state.unanimous([_review("1e-07"), _review("1e-6")])
        assert agreement.category(_review("1e-7")) != agreement.category(_review('"1e-7"'))
