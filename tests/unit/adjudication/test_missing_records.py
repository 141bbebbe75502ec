"""The verifier's rule for rows that are gone: only what a tenant deletion or an expiry
sweep removed may be missing, and fields added to events later are checked only where an
event holds them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from assay.services.adjudication.domain import ledger, records
from assay.services.adjudication.domain.model import (
    AuditEventType,
    AuditProblem,
    ChainHead,
    ChainVerdict,
    RecordKind,
)
from assay.services.adjudication.domain.times import to_micros
from tests.unit.adjudication.factories import NOW

E = AuditEventType
EXPIRY = str(to_micros(NOW + timedelta(days=1)))
CASE = {"case_id": "c1", "tenant": "t", "content": "sha256:aa", "expire_time": EXPIRY}
OLD_CASE = {"case_id": "c1", "tenant": "t", "content": "sha256:aa"}  # written before expiry
REVIEW = {"review_id": "r1", "case_id": "c1", "reviewer_id": "ann", "round": "1"}
REVIEWER = {"reviewer_id": "ann", "kind": "HUMAN"}


def verdict(
    events: list[tuple[AuditEventType, dict[str, str]]], present: set[tuple[RecordKind, str]]
) -> ChainVerdict:
    """Walk ``events``; then finish with ``present`` as the stored rows, each agreeing with
    its event (its commitment is the event's own payload)."""
    verifier = ledger.ChainVerifier()
    head = ledger.EMPTY_HEAD
    payloads: dict[tuple[RecordKind, str], dict[str, str]] = {}
    for event_type, payload in events:
        event = ledger.next_event(head, event_type, payload, NOW)
        assert verifier.check(event)
        head = ChainHead(event.sequence, event.hash)
        key = records.record_key(event_type.value, payload)
        if key is not None:
            payloads.setdefault(key, payload)
    return verifier.finish([], [(kind, rid, payloads[kind, rid]) for kind, rid in present])


def sweep(as_of: str, tenants: str | None = None) -> tuple[AuditEventType, dict[str, str]]:
    payload = {"as_of": as_of, "cases": "1", "reviews": "0", "resolutions": "0"}
    if tenants is not None:
        payload["tenants"] = tenants
    return E.EXPIRED_RECORDS_SWEPT, payload


LATER = str(int(EXPIRY) + 1)
EARLIER = str(int(EXPIRY) - 1)


class TestMissingRows:
    @pytest.mark.parametrize(
        ("after", "ok"),
        [
            ([], False),
            ([(E.TENANT_RECORDS_DELETED, {"tenant": "t"})], True),
            ([(E.TENANT_RECORDS_DELETED, {"tenant": "other"})], False),
            ([sweep(LATER)], True),
            ([sweep(EXPIRY, "a,t")], True),
            ([sweep(LATER, "other")], False),
            ([sweep(EARLIER)], False),
        ],
        ids=[
            "none",
            "tenant",
            "other-tenant",
            "sweep",
            "sweep-of-its-tenant",
            "sweep-other",
            "early",
        ],
    )
    def test_a_case_is_missing_only_after_a_deletion_covering_it(
        self, after: list[tuple[AuditEventType, dict[str, str]]], ok: bool
    ) -> None:
        """A missing case is accounted for by a later deletion of its tenant or a later sweep
        of its tenant as of its expiry or after; anything else names the case."""
        found = verdict([(E.CASE_ENQUEUED, CASE), *after], set())
        assert found.ok is ok, found.detail
        if not ok:
            assert (found.bad_record_kind, found.bad_record_id) == (RecordKind.CASE, "c1")
            assert found.problem is AuditProblem.RECORD_MISMATCH

    def test_a_deletion_before_the_case_does_not_cover_it(self) -> None:
        """Only a deletion after the case was enqueued can have removed it."""
        found = verdict(
            [(E.TENANT_RECORDS_DELETED, {"tenant": "t"}), (E.CASE_ENQUEUED, CASE)], set()
        )
        assert not found.ok

    def test_an_old_case_event_is_covered_by_any_later_sweep_of_its_tenant(self) -> None:
        """A CASE_ENQUEUED written before expiries were recorded: any later sweep will do."""
        assert verdict([(E.CASE_ENQUEUED, OLD_CASE), sweep("1")], set()).ok

    def test_a_missing_review_of_a_stored_case_is_named(self) -> None:
        """Reviews go only with their case: one missing beside its case row is tampering."""
        events = [(E.CASE_ENQUEUED, CASE), (E.REVIEW_SUBMITTED, REVIEW)]
        found = verdict(events, {(RecordKind.CASE, "c1")})
        assert (found.bad_record_kind, found.bad_record_id) == (RecordKind.REVIEW, "r1")
        gone = [*events, (E.TENANT_RECORDS_DELETED, {"tenant": "t"})]
        assert verdict(gone, set()).ok

    def test_a_missing_reviewer_is_always_named(self) -> None:
        """Reviewers are never deleted, not even with a tenant."""
        events = [(E.REVIEWER_REGISTERED, REVIEWER), (E.TENANT_RECORDS_DELETED, {"tenant": "t"})]
        found = verdict(events, set())
        assert (found.bad_record_kind, found.bad_record_id) == (RecordKind.REVIEWER, "ann")


class TestLaterFields:
    def test_an_event_without_them_does_not_check_them(self) -> None:
        """An event written before attestation and times were committed still agrees with
        its record; one that holds them disagrees when the row's value differs."""
        expected = {**REVIEWER, "attestation": "sha256:aa", "register_time": "5"}
        assert records.disagreement(expected, REVIEWER) == ""
        recorded = {**REVIEWER, "attestation": "sha256:bb", "register_time": "5"}
        assert "attestation" in records.disagreement(expected, recorded)

    def test_other_fields_are_checked_even_when_absent(self) -> None:
        """A field that is not a later one counts as "" when the event lacks it."""
        expected = {**REVIEWER, "identity_subject": "bob"}
        assert "identity_subject" in records.disagreement(expected, REVIEWER)
