"""Gold-label digests, the audit hash chain, canonical JSON and page tokens."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import errors
from assay.runtime import paging
from assay.services.adjudication.domain import digests, gold, ledger, times
from assay.services.adjudication.domain.model import (
    AuditEventType,
    AuditProblem,
    Basis,
    ChainHead,
    GoldLabelRevision,
    Provenance,
    Resolution,
    ReviewerKind,
)
from tests.unit.adjudication.factories import NOW, review, snapshot

H, F = ReviewerKind.HUMAN, ReviewerKind.MECHANISM_TEST_FIXTURE


def frozen(kinds: dict[str, ReviewerKind], adjudicator: str = "") -> GoldLabelRevision:
    snap = snapshot(review("a"), review("b"))
    basis = Basis.ADJUDICATOR_DECISION if adjudicator else Basis.UNANIMOUS_AGREEMENT
    res = Resolution("case-1", 1, basis, "key", '"key"', adjudicator, ("rev-a-1", "rev-b-1"), NOW)
    return gold.new_revision(snap, res, kinds, NOW)


def stored_fields(rev: GoldLabelRevision) -> dict[str, Any]:
    """A revision as storage hands it back: the digested fields."""
    return gold.canonical_fields(
        case_id=rev.case_id,
        revision=rev.revision,
        previous_revision=rev.previous_revision,
        round_=rev.round,
        tenant=rev.tenant,
        basis=rev.basis,
        label_key=rev.label_key,
        contributing_review_ids=rev.contributing_review_ids,
        contributing_reviewer_ids=rev.contributing_reviewer_ids,
        adjudicator_reviewer_id=rev.adjudicator_reviewer_id,
        provenance=rev.provenance,
        freeze_time=rev.freeze_time,
    )


class TestGoldRevisions:
    def test_round_trip_verifies(self) -> None:
        """A revision read back with its own digest equals the one written."""
        rev = frozen({"a": H, "b": H})
        assert gold.checked_revision(stored_fields(rev), rev.digest) == rev
        assert (rev.revision, rev.previous_revision, rev.round) == (1, 0, 1)

    def test_provenance_counts_the_adjudicator(self) -> None:
        """A fixture adjudicator makes a human pair's label synthetic."""
        assert frozen({"a": H, "b": H}).provenance is Provenance.HUMAN_ADJUDICATED
        assert frozen({"a": H, "b": H, "c": F}, "c").provenance is (
            Provenance.SYNTHETIC_MECHANISM_TEST
        )
        assert frozen({"a": H}).provenance is Provenance.SYNTHETIC_MECHANISM_TEST

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("label_key", '"none"'),
            ("provenance", "HUMAN_ADJUDICATED"),
            ("tenant", "tenant-b"),
            ("contributing_review_ids", ["rev-a-1"]),
            ("freeze_time", times.rfc3339(NOW + timedelta(seconds=1))),
        ],
    )
    def test_any_edit_is_data_loss(self, field: str, value: object) -> None:
        """Editing any digested field makes the read fail with DIGEST_MISMATCH."""
        rev = frozen({"a": F, "b": F})
        fields = stored_fields(rev) | {field: value}
        with pytest.raises(errors.DataLoss) as caught:
            gold.checked_revision(fields, rev.digest)
        assert caught.value.reason is errors.Reason.GOLD_LABEL_DIGEST_MISMATCH

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("revision", 0),
            ("previous_revision", 3),
            ("contributing_review_ids", []),
            ("basis", "MAJORITY_VOTE"),
            ("label_key", ""),
        ],
    )
    def test_invalid_rows_are_refused(self, field: str, value: object) -> None:
        """Rows that break an invariant are GOLD_LABEL_INVALID, before any digest check."""
        rev = frozen({"a": F, "b": F})
        with pytest.raises(errors.DataLoss) as caught:
            gold.checked_revision(stored_fields(rev) | {field: value}, rev.digest)
        assert caught.value.reason is errors.Reason.GOLD_LABEL_INVALID

    def test_renumbering_breaks_the_chain(self) -> None:
        """Moving revision 1 to revision 2 (and its previous number) does not verify."""
        rev = frozen({"a": F, "b": F})
        moved = stored_fields(rev) | {"revision": 2, "previous_revision": 1, "round": 2}
        with pytest.raises(errors.DataLoss):
            gold.checked_revision(moved, rev.digest)


def chain(n: int) -> list[Any]:
    head = ledger.EMPTY_HEAD
    events = []
    for i in range(n):
        event = ledger.next_event(head, AuditEventType.CASE_ENQUEUED, {"case_id": f"c{i}"}, NOW)
        events.append(event)
        head = ChainHead(event.sequence, event.hash)
    return events


class TestLedger:
    def test_clean_chain_verifies(self) -> None:
        """An untouched chain verifies and reports its head."""
        events = chain(5)
        verifier = ledger.ChainVerifier()
        assert all(verifier.check(e) for e in events)
        verdict = verifier.finish([])
        assert verdict.ok
        assert verdict.events_checked == 5
        assert verdict.head.hash == events[-1].hash

    @pytest.mark.parametrize(
        ("mutate", "problem"),
        [
            (lambda e: dataclasses.replace(e, payload={"case_id": "other"}), "HASH_MISMATCH"),
            (lambda e: dataclasses.replace(e, previous_hash=digests.GENESIS_HASH), "BROKEN_LINK"),
            (lambda e: dataclasses.replace(e, sequence=9), "SEQUENCE_GAP"),
        ],
    )
    def test_first_bad_event_is_named(self, mutate: Any, problem: str) -> None:
        """Tampering with event 3 is reported at event 3 (or its position)."""
        events = chain(5)
        events[2] = mutate(events[2])
        verifier = ledger.ChainVerifier()
        for event in events:
            if not verifier.check(event):
                break
        verdict = verifier.finish([])
        assert not verdict.ok
        assert verdict.problem is AuditProblem(problem)
        assert verdict.first_bad_sequence in (3, 9)

    def test_gold_rows_are_cross_checked(self) -> None:
        """A frozen label whose row was replaced or removed is reported."""
        head = ledger.EMPTY_HEAD
        event = ledger.next_event(
            head,
            AuditEventType.GOLD_LABEL_FROZEN,
            {"case_id": "c", "revision": "1", "digest": "sha256:aa"},
            NOW,
        )
        for rows, problem in [
            ([("c", 1, "sha256:bb", "sha256:bb")], AuditProblem.GOLD_LABEL_MISMATCH),
            ([], AuditProblem.GOLD_LABEL_MISMATCH),
            (
                [("c", 1, "sha256:aa", "sha256:aa"), ("d", 1, "x", "x")],
                (AuditProblem.UNRECORDED_GOLD_LABEL),
            ),
        ]:
            verifier = ledger.ChainVerifier()
            assert verifier.check(event)
            assert verifier.finish(rows).problem is problem
        ok = ledger.ChainVerifier()
        ok.check(event)
        assert ok.finish([("c", 1, "sha256:aa", "sha256:aa")]).ok

    def test_payload_values_must_be_strings(self) -> None:
        """Payloads are ids, digests and counts as strings; nothing else is accepted."""
        with pytest.raises(TypeError):
            ledger.next_event(ledger.EMPTY_HEAD, AuditEventType.CASE_ENQUEUED, {"n": 1}, NOW)  # type: ignore[dict-item]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


class TestCanonical:
    @given(json_values)
    def test_integral_floats_hash_like_integers(self, value: Any) -> None:
        """Values arriving as doubles (protobuf Value) hash like their integer spelling."""

        def floats(v: Any) -> Any:
            if isinstance(v, bool) or v is None or isinstance(v, str):
                return v
            if isinstance(v, int):
                return float(v)
            if isinstance(v, list):
                return [floats(x) for x in v]
            return {k: floats(x) for k, x in v.items()}

        assert digests.digest(value) == digests.digest(floats(value))

    def test_times_round_trip_through_micros(self) -> None:
        """Stored microseconds give back the same instant."""
        assert times.from_micros(times.to_micros(NOW)) == NOW

    def test_non_finite_numbers_are_refused(self) -> None:
        """NaN has no canonical JSON form."""
        with pytest.raises(ValueError, match="non-finite"):
            digests.canonical_json(float("nan"))


class TestPaging:
    def test_token_round_trips_for_its_query(self) -> None:
        """A token continues the query that issued it."""
        token = paging.encode_token("reviewers", "bob")
        assert paging.decode_token("reviewers", token) == "bob"
        assert paging.encode_token("reviewers", "") == ""

    @pytest.mark.parametrize("token", ["garbage!", "eyJ4IjoxfQ", paging.encode_token("other", "x")])
    def test_foreign_or_edited_tokens_are_refused(self, token: str) -> None:
        """Tokens from another query or hand-made ones are INVALID_PAGE_TOKEN."""
        with pytest.raises(errors.InvalidArgument) as caught:
            paging.decode_token("reviewers", token)
        assert caught.value.reason is errors.Reason.INVALID_PAGE_TOKEN
        assert caught.value.violations[0].field == "page_token"

    @pytest.mark.parametrize(("size", "expected"), [(0, 50), (7, 7), (1000, 1000)])
    def test_page_size_defaults_and_bounds(self, size: int, expected: int) -> None:
        """0 means the default; negatives and > 1000 are refused."""
        assert paging.page_size(size) == expected
        for bad in (-1, 1001):
            with pytest.raises(errors.InvalidArgument):
                paging.page_size(bad)


@given(
    sequence=st.integers(min_value=1, max_value=2**62),
    event_type=st.sampled_from(list(AuditEventType)),
    micros=st.integers(min_value=0, max_value=4_102_444_800_000_000),
    payload=st.dictionaries(st.text(max_size=12), st.text(max_size=24), max_size=6),
    previous_hash=st.text(max_size=80),
)
def test_event_hash_is_the_digest_of_the_documented_fields(
    sequence: int,
    event_type: AuditEventType,
    micros: int,
    payload: dict[str, str],
    previous_hash: str,
) -> None:
    """The hand-spelled canonical JSON of an event equals ``digest`` of its field dict (what an
    auditor recomputes with any JSON library), whatever the strings hold: quotes, escapes,
    non-ASCII, control characters."""
    moment = times.from_micros(micros)
    fields = {
        "sequence": sequence,
        "event_type": event_type.value,
        "occur_time": times.rfc3339(moment),
        "payload": payload,
        "previous_hash": previous_hash,
    }
    assert ledger.event_hash(
        sequence, event_type, moment, payload, previous_hash
    ) == digests.digest(fields)


@given(
    st.datetimes(
        # Naive bounds (hypothesis wants them so); the zone is drawn below.
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone.min]),
    )
)
def test_rfc3339_spells_every_instant_as_strftime_does(moment: datetime) -> None:
    """The fast spelling of times (isoformat) is the documented one, digit for digit, so hashes
    over stored times never change: any zone becomes UTC, years below 1000 included."""
    expected = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert times.rfc3339.__wrapped__(moment) == expected
    assert times.rfc3339(moment) == expected


def test_an_audit_event_stores_the_payload_it_hashed() -> None:
    """``extend`` hands back the payload's canonical JSON: what the row stores is what was
    hashed, and it equals the canonical JSON of the event's payload."""
    payload = {"case_id": "c1", "z": 'é"\n', "a": "1"}
    event, payload_json = ledger.extend(
        ledger.EMPTY_HEAD, AuditEventType.CASE_ENQUEUED, payload, NOW
    )
    assert (
        payload_json == digests.canonical_json(payload) == '{"a":"1","case_id":"c1","z":"é\\"\\n"}'
    )
    assert event == ledger.next_event(ledger.EMPTY_HEAD, AuditEventType.CASE_ENQUEUED, payload, NOW)
    assert event.hash == ledger.event_hash(
        1, AuditEventType.CASE_ENQUEUED, NOW, payload, digests.GENESIS_HASH
    )
