"""Reviewers, cases, blinding, derived state, reviews and resolution bases."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from assay import errors
from assay.services.adjudication.domain import blinding, cases, resolution, reviews, state
from assay.services.adjudication.domain.model import (
    Basis,
    BlindedCase,
    Case,
    CaseState,
    Outcome,
    Provenance,
    Resolution,
    ReviewerKind,
)
from assay.services.adjudication.domain.reviewers import new_reviewer, provenance_for
from tests.unit.adjudication.factories import NOW, case_input, make_case, review, snapshot

H, F = ReviewerKind.HUMAN, ReviewerKind.MECHANISM_TEST_FIXTURE


class TestReviewers:
    def test_human_without_attestation_is_refused(self) -> None:
        """A HUMAN reviewer cannot be registered without attested_by."""
        with pytest.raises(errors.InvalidArgument) as caught:
            new_reviewer("alice", H, "  ", NOW)
        assert caught.value.reason is errors.Reason.HUMAN_REVIEWER_REQUIRES_ATTESTATION
        assert caught.value.violations[0].field == "reviewer.attested_by"

    def test_fixture_needs_no_attestation(self) -> None:
        """A fixture registers without attested_by."""
        assert new_reviewer("fixture-1", F, "", NOW).kind is F

    @pytest.mark.parametrize("bad_id", ["", "Alice", "-x", "a" * 65, "a b"])
    def test_bad_ids_are_refused(self, bad_id: str) -> None:
        """Reviewer ids are 1-64 lowercase characters."""
        with pytest.raises(errors.InvalidArgument) as caught:
            new_reviewer(bad_id, F, "", NOW)
        assert caught.value.violations[0].field == "reviewer.reviewer_id"

    def test_missing_kind_is_refused(self) -> None:
        """An unspecified kind is not silently a fixture or a human."""
        with pytest.raises(errors.InvalidArgument) as caught:
            new_reviewer("bob", None, "", NOW)
        assert caught.value.violations[0].field == "reviewer.kind"

    @pytest.mark.parametrize(
        ("kinds", "expected"),
        [
            ([H, H], Provenance.HUMAN_ADJUDICATED),
            ([H, F], Provenance.SYNTHETIC_MECHANISM_TEST),
            ([F], Provenance.SYNTHETIC_MECHANISM_TEST),
            ([], Provenance.SYNTHETIC_MECHANISM_TEST),
        ],
    )
    def test_provenance_is_human_only_when_all_are_human(
        self, kinds: list[ReviewerKind], expected: Provenance
    ) -> None:
        """One fixture anywhere makes the label synthetic."""
        assert provenance_for(kinds) is expected


class TestCases:
    @pytest.mark.parametrize(
        ("overrides", "path"),
        [
            ({"tenant": ""}, "case.tenant"),
            ({"tenant": "bad tenant"}, "case.tenant"),
            ({"subject": " "}, "case.subject"),
            ({"predicate": ""}, "case.predicate"),
            ({"candidate_values": ()}, "case.candidate_values"),
            ({"candidate_values": ("a", None)}, "case.candidate_values[1]"),
            ({"candidate_values": ("a", "b", "a")}, "case.candidate_values[2]"),
            ({"candidate_values": (1.0, 1)}, "case.candidate_values[1]"),
            ({"evidence_refs": ("",)}, "case.evidence_refs[0]"),
            ({"context": "x" * 4097}, "case.context"),
            ({"local_verdict": None}, "case.local_verdict"),
            ({"expire_time": NOW - timedelta(seconds=1)}, "case.expire_time"),
            ({"expire_time": NOW + timedelta(days=4000)}, "case.expire_time"),
        ],
    )
    def test_bad_fields_are_named(self, overrides: dict[str, object], path: str) -> None:
        """Each invalid field is refused with its path."""
        with pytest.raises(errors.InvalidArgument) as caught:
            cases.new_case("c", case_input(**overrides), NOW)
        assert caught.value.violations[0].field == path

    def test_default_expiry_and_stable_digest(self) -> None:
        """Without expire_time a case lives 90 days; the digest is deterministic."""
        a = cases.new_case("c", case_input(expire_time=None), NOW)
        b = cases.new_case("c", case_input(expire_time=None), NOW)
        assert a.expire_time == NOW + cases.DEFAULT_TTL
        assert a.content_digest == b.content_digest
        assert a.content_digest.startswith("sha256:")

    def test_label_must_be_a_candidate(self) -> None:
        """candidate_key matches by canonical JSON, so 1 and 1.0 are the same candidate."""
        case = make_case(candidate_values=(1, "x"))
        assert cases.candidate_key(case, 1.0) == "1"
        assert cases.candidate_key(case, "y") is None


class TestBlinding:
    def test_every_case_field_is_classified(self) -> None:
        """A new Case field fails here until someone decides whether reviewers may see it."""
        assert {f.name for f in dataclasses.fields(Case)} == set(blinding.FIELD_VISIBILITY)

    def test_blinded_case_carries_exactly_the_shown_fields(self) -> None:
        """BlindedCase has every SHOWN field, the round, and nothing hidden."""
        names = {f.name for f in dataclasses.fields(BlindedCase)}
        assert names == blinding.shown_fields() | {"round"}
        assert "local_verdict" not in names

    def test_blind_copies_shown_fields(self) -> None:
        """The blinded view is the case's shown fields plus the round."""
        case = make_case(context="look at the trace")
        view = blinding.blind(case, 2)
        assert (view.case_id, view.context, view.round) == ("case-1", "look at the trace", 2)
        assert view.candidate_values == case.candidate_values


class TestDerivedState:
    @pytest.mark.parametrize(
        ("reviews_", "revisions", "expected"),
        [
            ((), 0, CaseState.AWAITING_REVIEW),
            ((review("a"),), 0, CaseState.AWAITING_SECOND_REVIEW),
            ((review("a"), review("b")), 0, CaseState.AGREED),
            ((review("a"), review("b", "none")), 0, CaseState.DISAGREED),
            ((review("a"), review("b", outcome=Outcome.UNRESOLVED)), 0, CaseState.DISAGREED),
            ((), 1, CaseState.FROZEN),
            ((review("a", round_=2),), 1, CaseState.AWAITING_SECOND_REVIEW),
        ],
    )
    def test_state_from_reviews(
        self, reviews_: tuple[object, ...], revisions: int, expected: CaseState
    ) -> None:
        """The state follows from the round's reviews and the revision count."""
        snap = snapshot(*reviews_, revisions=revisions)  # type: ignore[arg-type]
        assert state.derive_state(snap) is expected

    @pytest.mark.parametrize(
        ("basis", "expected"),
        [
            (Basis.UNANIMOUS_AGREEMENT, CaseState.RESOLVED),
            (Basis.ADJUDICATOR_DECISION, CaseState.RESOLVED),
            (Basis.UNRESOLVED, CaseState.UNRESOLVED),
            (Basis.NOT_EVALUABLE, CaseState.NOT_EVALUABLE),
        ],
    )
    def test_resolution_decides_state(self, basis: Basis, expected: CaseState) -> None:
        """A resolved round's state comes from its basis."""
        res = Resolution("case-1", 1, basis, None, "", "", ("r",), NOW)
        assert state.derive_state(snapshot(review("a"), review("b"), resolution=res)) is expected


def submission(**overrides: object) -> reviews.ReviewSubmission:
    fields: dict[str, object] = {
        "case_id": "case-1",
        "reviewer_id": "c",
        "round": 0,
        "outcome": Outcome.LABEL,
        "label": "key",
        "reason": "",
    }
    fields.update(overrides)
    return reviews.ReviewSubmission(**fields)  # type: ignore[arg-type]


class TestReviews:
    @pytest.mark.parametrize(
        ("overrides", "path"),
        [
            ({"case_id": ""}, "case_id"),
            ({"reviewer_id": ""}, "reviewer_id"),
            ({"round": -1}, "round"),
            ({"outcome": None}, "outcome"),
            ({"label": None}, "label"),
            ({"reason": "why"}, "reason"),
            ({"outcome": Outcome.UNRESOLVED}, "label"),
            ({"outcome": Outcome.NOT_EVALUABLE, "label": None}, "reason"),
        ],
    )
    def test_field_rules(self, overrides: dict[str, object], path: str) -> None:
        """Each malformed submission names its field."""
        with pytest.raises(errors.InvalidArgument) as caught:
            reviews.validate_submission(submission(**overrides))
        assert caught.value.violations[0].field == path

    def test_one_review_per_reviewer_per_round(self) -> None:
        """A second review by the same reviewer in a round is ALREADY_EXISTS."""
        with pytest.raises(errors.AlreadyExists) as caught:
            reviews.check_submission(snapshot(review("c")), submission(), NOW)
        assert caught.value.reason is errors.Reason.REVIEW_ALREADY_SUBMITTED

    def test_frozen_case_needs_explicit_round(self) -> None:
        """Reviewing a frozen case without naming round 2 is refused; naming it opens round 2."""
        with pytest.raises(errors.FailedPrecondition) as caught:
            reviews.check_submission(snapshot(revisions=1), submission(), NOW)
        assert caught.value.reason is errors.Reason.CASE_FROZEN
        assert reviews.check_submission(snapshot(revisions=1), submission(round=2), NOW) == '"key"'

    def test_wrong_round_is_refused(self) -> None:
        """A review for a round that is not current is ROUND_MISMATCH."""
        with pytest.raises(errors.FailedPrecondition) as caught:
            reviews.check_submission(snapshot(), submission(round=2), NOW)
        assert caught.value.reason is errors.Reason.ROUND_MISMATCH
        assert caught.value.metadata["current_round"] == "1"

    def test_expired_case_is_refused(self) -> None:
        """Past its expiry a case takes no reviews."""
        with pytest.raises(errors.FailedPrecondition) as caught:
            reviews.check_submission(snapshot(), submission(), NOW + timedelta(days=2))
        assert caught.value.reason is errors.Reason.CASE_EXPIRED

    def test_label_outside_candidates_is_refused(self) -> None:
        """A label nobody proposed is not accepted, and the refusal names the candidates."""
        with pytest.raises(errors.InvalidArgument) as caught:
            reviews.check_submission(snapshot(), submission(label="other"), NOW)
        assert caught.value.reason is errors.Reason.LABEL_NOT_A_CANDIDATE
        (violation,) = caught.value.violations
        assert violation.field == "label"
        assert violation.description.endswith('candidate values: "key", "none"')

    @pytest.mark.parametrize(
        "labels", [("key", "key"), ("key", "none")], ids=["agreed", "disagreed"]
    )
    def test_a_round_with_two_reviews_takes_no_third(self, labels: tuple[str, str]) -> None:
        """A third reviewer is ROUND_COMPLETE naming the round, agreed or not."""
        full = snapshot(review("a", labels[0]), review("b", labels[1]))
        with pytest.raises(errors.FailedPrecondition) as caught:
            reviews.check_submission(full, submission(), NOW)
        assert caught.value.reason is errors.Reason.ROUND_COMPLETE
        assert caught.value.metadata["current_round"] == "1"

    def test_a_reviewer_of_a_full_round_hears_they_reviewed_it(self) -> None:
        """One of the round's own reviewers gets REVIEW_ALREADY_SUBMITTED, the more precise."""
        full = snapshot(review("a"), review("c"))
        with pytest.raises(errors.AlreadyExists):
            reviews.check_submission(full, submission(), NOW)


def resolve(basis: Basis, label: object = None, adjudicator: str = "") -> resolution.ResolveRequest:
    return resolution.ResolveRequest("case-1", basis, label, adjudicator)


class TestResolution:
    def test_majority_vote_does_not_exist(self) -> None:
        """There is no majority-vote basis to choose."""
        assert not any("MAJORITY" in b.value for b in Basis)

    def test_unanimous_takes_the_shared_label(self) -> None:
        """Two agreeing reviews resolve on their label."""
        snap = snapshot(review("a"), review("b"))
        res = resolution.decide(snap, resolve(Basis.UNANIMOUS_AGREEMENT), NOW)
        assert (res.label, res.label_key, res.review_ids) == (
            "key",
            '"key"',
            ("rev-a-1", "rev-b-1"),
        )

    def test_unanimous_needs_two_reviews(self) -> None:
        """One review is not agreement."""
        with pytest.raises(errors.FailedPrecondition) as caught:
            resolution.decide(snapshot(review("a")), resolve(Basis.UNANIMOUS_AGREEMENT), NOW)
        assert caught.value.reason is errors.Reason.NOT_ENOUGH_REVIEWS

    def test_two_to_one_is_not_unanimous(self) -> None:
        """A 2-1 split is a disagreement, not a majority label."""
        snap = snapshot(review("a"), review("b"), review("c", "none"))
        with pytest.raises(errors.FailedPrecondition) as caught:
            resolution.decide(snap, resolve(Basis.UNANIMOUS_AGREEMENT), NOW)
        assert caught.value.reason is errors.Reason.REVIEWS_NOT_UNANIMOUS

    @pytest.mark.parametrize("other", ["none", "key"], ids=["disagreed", "agreed"])
    def test_adjudicator_cannot_be_a_reviewer_of_the_round(self, other: str) -> None:
        """A reviewer of the round may not decide it, and hears the same refusal whether or
        not the other reviewer agreed (so it reveals nothing about their answer)."""
        snap = snapshot(review("a"), review("b", other))
        with pytest.raises(errors.FailedPrecondition) as caught:
            resolution.decide(snap, resolve(Basis.ADJUDICATOR_DECISION, "key", "a"), NOW)
        assert caught.value.reason is errors.Reason.ADJUDICATOR_IS_REVIEWER

    def test_third_party_adjudicates(self) -> None:
        """An outside adjudicator decides a disagreement."""
        snap = snapshot(review("a"), review("b", "none"))
        res = resolution.decide(snap, resolve(Basis.ADJUDICATOR_DECISION, "none", "c"), NOW)
        assert (res.label_key, res.adjudicator_reviewer_id) == ('"none"', "c")

    def test_adjudicator_cannot_overrule_agreement(self) -> None:
        """Agreeing reviews are resolved unanimously, not adjudicated."""
        snap = snapshot(review("a"), review("b"))
        with pytest.raises(errors.FailedPrecondition) as caught:
            resolution.decide(snap, resolve(Basis.ADJUDICATOR_DECISION, "none", "c"), NOW)
        assert caught.value.reason is errors.Reason.REVIEWS_NOT_DISAGREEING

    def test_unresolved_is_explicit_and_labelless(self) -> None:
        """Unanimous 'unresolved' resolves as UNRESOLVED with no label."""
        u = Outcome.UNRESOLVED
        snap = snapshot(review("a", outcome=u), review("b", outcome=u))
        res = resolution.decide(snap, resolve(Basis.UNRESOLVED), NOW)
        assert res.label is None
        assert res.label_key == ""

    def test_not_evaluable_without_adjudicator_needs_all_reviews(self) -> None:
        """A split with one not-evaluable review needs an adjudicator to call it not evaluable."""
        snap = snapshot(review("a"), review("b", outcome=Outcome.NOT_EVALUABLE))
        with pytest.raises(errors.FailedPrecondition) as caught:
            resolution.decide(snap, resolve(Basis.NOT_EVALUABLE), NOW)
        assert caught.value.reason is errors.Reason.REVIEWS_NOT_UNANIMOUS
        res = resolution.decide(snap, resolve(Basis.NOT_EVALUABLE, adjudicator="c"), NOW)
        assert res.basis is Basis.NOT_EVALUABLE

    @pytest.mark.parametrize(
        ("request_", "path"),
        [
            (resolution.ResolveRequest("case-1", None, None, ""), "basis"),
            (resolve(Basis.ADJUDICATOR_DECISION, None, "c"), "label"),
            (resolve(Basis.ADJUDICATOR_DECISION, "key", ""), "adjudicator_reviewer_id"),
            (resolve(Basis.UNANIMOUS_AGREEMENT, "key"), "label"),
            (resolve(Basis.UNANIMOUS_AGREEMENT, None, "c"), "adjudicator_reviewer_id"),
            (resolution.ResolveRequest("", Basis.UNRESOLVED, None, ""), "case_id"),
        ],
    )
    def test_field_rules(self, request_: resolution.ResolveRequest, path: str) -> None:
        """Each malformed resolve request names its field."""
        with pytest.raises(errors.InvalidArgument) as caught:
            resolution.validate_resolve(request_)
        assert caught.value.violations[0].field == path
