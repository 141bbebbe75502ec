"""The trust-boundary rules as plain functions: identity binding, tenant scope, sealed views,
salted commitments and the actor in the audit hash."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import errors
from assay.runtime.auth.principal import DEV_PRINCIPAL, Principal, Role
from assay.services.adjudication.domain import digests, ledger, permissions, reviews, state, times
from assay.services.adjudication.domain.digests import digest
from assay.services.adjudication.domain.model import (
    DEV_CALLER,
    EVERY_TENANT,
    Actor,
    AuditEventType,
    Caller,
    CaseState,
    Outcome,
    Review,
    Reviewer,
    ReviewerKind,
    TenantScope,
)
from assay.services.adjudication.domain.permissions import RegistrationPolicy
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.storage import rows
from assay.services.adjudication.wire import convert
from tests.unit.adjudication.factories import NOW, make_case, review, snapshot

H, F = ReviewerKind.HUMAN, ReviewerKind.MECHANISM_TEST_FIXTURE
ISSUER = "https://idp.example"
ACME = TenantScope(frozenset({"tenant-a"}))  # the factories' tenant


def caller(
    subject: str,
    issuer: str = ISSUER,
    scope: TenantScope = ACME,
    operator: bool = False,
    adjudicator: bool = False,
    auditor: bool = False,
) -> Caller:
    return Caller(Actor(issuer, subject), scope, operator, adjudicator, auditor)


OPERATOR = caller("op", scope=EVERY_TENANT, operator=True)
ALICE = caller("alice")
CAROL = caller("carol", adjudicator=True)


def refused(error: pytest.ExceptionInfo[errors.AssayError], reason: errors.Reason) -> str:
    """The single violation's field of a refusal with ``reason``."""
    assert error.value.reason is reason
    (violation,) = error.value.violations
    return violation.field


class TestCallerFromPrincipal:
    def test_dev_principal_is_the_dev_caller(self) -> None:
        """The unauthenticated dev-mode principal has no actor and every tenant."""
        assert convert.caller(DEV_PRINCIPAL) == DEV_CALLER

    def test_authenticated_principal(self) -> None:
        """Issuer and subject become the actor; roles and tenants the views and the scope."""
        principal = Principal(
            ISSUER, "carol", frozenset({Role.ADJUDICATOR, Role.REVIEWER}), frozenset({"tenant-a"})
        )
        assert convert.caller(principal) == CAROL

    def test_a_bound_reviewer_id_is_what_the_caller_acts_as(self) -> None:
        """An IdP subject that is no valid reviewer id acts as the id the policy binds."""
        principal = Principal(
            ISSUER, "auth0|5f0c", frozenset({Role.REVIEWER}), frozenset({"tenant-a"}), "alice"
        )
        bound = convert.caller(principal)
        assert bound.actor == Actor(ISSUER, "auth0|5f0c")  # the ledger's actor is the identity
        assert bound.subject == "alice"
        permissions.check_acting_as(bound, "alice", "reviewer_id")
        with pytest.raises(errors.PermissionDenied):
            permissions.check_acting_as(bound, "auth0|5f0c", "reviewer_id")


class TestBinding:
    def test_dev_mode_registers_as_given(self) -> None:
        """Without authentication nothing is bound and attested_by is kept."""
        bound = permissions.bind_registration(DEV_CALLER, "alice", H, "lead", RegistrationPolicy())
        assert bound == permissions.Binding("lead")

    @pytest.mark.parametrize(
        ("policy_issuer", "bound_issuer"),
        [("https://reviewers", "https://reviewers"), ("", ISSUER)],
    )
    def test_human_is_bound_to_its_id(self, policy_issuer: str, bound_issuer: str) -> None:
        """An empty attested_by becomes the caller; the identity is the id under the reviewer
        issuer (or the caller's own when the server names none)."""
        bound = permissions.bind_registration(
            OPERATOR, "alice", H, " ", RegistrationPolicy(reviewer_issuer=policy_issuer)
        )
        assert bound == permissions.Binding("op", bound_issuer, "alice")

    def test_a_reviewer_id_is_bound_to_the_subject_the_policy_names(self) -> None:
        """Registering alice binds her to the policy's subject for her; when the
        subject signs in, the bound identity and the id both match."""
        policy = RegistrationPolicy(reviewer_subjects={"alice": "auth0|5f0c"})
        bound = permissions.bind_registration(OPERATOR, "alice", H, "", policy)
        assert bound == permissions.Binding("op", ISSUER, "auth0|5f0c")
        reviewer = Reviewer("alice", H, "op", NOW, bound.identity_issuer, bound.identity_subject)
        signed_in = dataclasses.replace(caller("auth0|5f0c"), reviewer_id="alice")
        permissions.check_bound_identity(signed_in, reviewer, "reviewer_id")
        with pytest.raises(errors.PermissionDenied):
            permissions.check_bound_identity(ALICE, reviewer, "reviewer_id")

    def test_attested_by_someone_else_is_refused(self) -> None:
        with pytest.raises(errors.PermissionDenied) as caught:
            permissions.bind_registration(OPERATOR, "alice", H, "mallory", RegistrationPolicy())
        assert refused(caught, errors.Reason.IDENTITY_MISMATCH) == "reviewer.attested_by"

    def test_fixtures_need_the_server_to_allow_them(self) -> None:
        """FIXTURE_REVIEWERS_DISABLED unless allowed; allowed fixtures are bound too."""
        with pytest.raises(errors.FailedPrecondition) as caught:
            permissions.bind_registration(OPERATOR, "fx", F, "", RegistrationPolicy())
        assert caught.value.reason is errors.Reason.FIXTURE_REVIEWERS_DISABLED
        allowed = RegistrationPolicy(allow_fixture_reviewers=True)
        bound = permissions.bind_registration(OPERATOR, "fx", F, "", allowed)
        assert (bound.identity_issuer, bound.identity_subject) == (ISSUER, "fx")


class TestActingAs:
    def test_only_as_oneself(self) -> None:
        permissions.check_acting_as(ALICE, "alice", "reviewer_id")
        permissions.check_acting_as(DEV_CALLER, "anyone", "reviewer_id")
        with pytest.raises(errors.PermissionDenied) as caught:
            permissions.check_acting_as(OPERATOR, "alice", "adjudicator_reviewer_id")
        assert refused(caught, errors.Reason.IDENTITY_MISMATCH) == "adjudicator_reviewer_id"

    @pytest.mark.parametrize(
        ("identity", "ok"),
        [
            (("", ""), True),  # registered in dev mode: only the subject is checked
            ((ISSUER, "alice"), True),
            (("https://other-idp", "alice"), False),
            ((ISSUER, "someone-else"), False),
        ],
    )
    def test_bound_identity_needs_the_same_issuer(
        self, identity: tuple[str, str], ok: bool
    ) -> None:
        """A reviewer bound under one issuer is not alice from another issuer."""
        bound = Reviewer("alice", H, "op", NOW, *identity)
        if ok:
            permissions.check_bound_identity(ALICE, bound, "reviewer_id")
            return
        with pytest.raises(errors.PermissionDenied) as caught:
            permissions.check_bound_identity(ALICE, bound, "reviewer_id")
        assert refused(caught, errors.Reason.IDENTITY_MISMATCH) == "reviewer_id"

    def test_request_ids_belong_to_the_caller(self) -> None:
        assert permissions.request_owner(ALICE) == (ISSUER, "alice")
        assert permissions.request_owner(DEV_CALLER) == ("", "")


class TestTenants:
    def test_filter_must_be_granted(self) -> None:
        """A named tenant narrows the scope if granted, else TENANT_NOT_PERMITTED; none means
        the caller's scope."""
        assert permissions.tenant_filter(ALICE, "") == ACME
        assert permissions.tenant_filter(OPERATOR, "globex") == TenantScope(frozenset({"globex"}))
        with pytest.raises(errors.PermissionDenied) as caught:
            permissions.tenant_filter(ALICE, "globex")
        assert refused(caught, errors.Reason.TENANT_NOT_PERMITTED) == "tenant"

    def test_another_tenants_case_is_not_found(self) -> None:
        """The same NOT_FOUND as a missing case."""
        globex = snapshot(case=make_case(tenant="globex"))
        for found in (globex, None):
            with pytest.raises(errors.NotFound) as caught:
                permissions.visible_case(ALICE, found, "case-1")
            assert caught.value.reason is errors.Reason.CASE_NOT_FOUND
        assert permissions.visible_case(OPERATOR, globex, "case-1") is globex

    def test_sweep_scope(self) -> None:
        """A sweep of every tenant is nobody's; one of some tenants names them."""
        assert permissions.sweep_scope(OPERATOR) == (EVERY_TENANT, "", {})
        assert permissions.sweep_scope(ALICE) == (ACME, "tenant-a", {"tenants": "tenant-a"})
        both = caller("x", scope=TenantScope(frozenset({"b", "a"})))
        assert permissions.sweep_scope(both)[1:] == ("", {"tenants": "a,b"})

    def test_page_fingerprints_differ_by_scope(self) -> None:
        assert EVERY_TENANT.fingerprint() == ""
        assert ACME.fingerprint() != TenantScope(frozenset({"globex"})).fingerprint()


class TestSealedViews:
    @pytest.mark.parametrize(
        ("reviews_", "revisions", "expired", "waits"),
        [
            ((), 0, False, True),
            (("bob",), 0, False, True),
            (("alice",), 0, False, False),
            (("bob", "carol"), 0, False, False),
            ((), 1, False, False),  # frozen: a new round opens only with an explicit review
            (("bob",), 1, False, True),
            ((), 0, True, False),
        ],
    )
    def test_awaits_review_by(
        self, reviews_: tuple[str, ...], revisions: int, expired: bool, waits: bool
    ) -> None:
        """The queue rule for one case."""
        done = [review(r, round_=revisions + 1) for r in reviews_]
        snap = snapshot(*done, revisions=revisions)
        at = snap.case.expire_time + timedelta(seconds=1) if expired else NOW
        assert permissions.awaits_review_by(snap, "alice", at) is waits

    def test_reviewer_gets_a_blinded_case_only_while_it_waits(self) -> None:
        waiting = snapshot(review("bob"))
        assert permissions.blinded_view(ALICE, waiting, "case-1", NOW) is waiting
        with pytest.raises(errors.NotFound):
            permissions.blinded_view(ALICE, snapshot(review("alice")), "case-1", NOW)
        done = snapshot(review("alice"))
        assert permissions.blinded_view(CAROL, done, "case-1", NOW) is done

    def test_case_view(self) -> None:
        """Operators see everything; an adjudicator a disagreement it is not part of, redacted;
        anything else is NOT_FOUND."""
        earlier = [review("alice", round_=1), review("bob", round_=1)]
        split = snapshot(review("alice", "key", round_=2), review("bob", "none", round_=2))
        split = dataclasses.replace(split, revision_count=1)
        history = [*earlier, *split.round_reviews]
        full = permissions.case_view(OPERATOR, split, "case-1", history, [])
        assert (full.verdict_shown, len(full.reviews)) == (True, 4)
        redacted = permissions.case_view(CAROL, split, "case-1", history, [])
        assert (redacted.verdict_shown, redacted.reviews, redacted.resolutions) == (
            False,
            split.round_reviews,
            (),
        )
        for who, snap in (
            (caller("alice", adjudicator=True), split),  # reviewed the round
            (ALICE, split),  # not an adjudicator
            (CAROL, snapshot(review("alice"))),  # not disagreed
        ):
            with pytest.raises(errors.NotFound):
                permissions.case_view(who, snap, "case-1", [], [])

    def test_reviewers_see_only_themselves(self) -> None:
        assert permissions.may_see_reviewer(ALICE, "alice")
        assert not permissions.may_see_reviewer(ALICE, "bob")
        assert permissions.may_see_reviewer(caller("aud", auditor=True), "bob")
        assert permissions.may_see_reviewer(DEV_CALLER, "bob")

    def test_queue_owner(self) -> None:
        permissions.check_queue_owner(OPERATOR, "bob")
        with pytest.raises(errors.PermissionDenied) as caught:
            permissions.check_queue_owner(ALICE, "bob")
        assert refused(caught, errors.Reason.IDENTITY_MISMATCH) == "reviewer_id"


class TestStateSeenBy:
    AUDITOR = caller("aud", auditor=True)

    @pytest.mark.parametrize(
        ("who", "labels", "seen"),
        [
            (ALICE, ("key", "key"), CaseState.AWAITING_RESOLUTION),
            (ALICE, ("key", "none"), CaseState.AWAITING_RESOLUTION),
            (caller("dave"), ("key", "none"), CaseState.AWAITING_RESOLUTION),
            (CAROL, ("key", "none"), CaseState.DISAGREED),
            (OPERATOR, ("key", "key"), CaseState.AGREED),
            (AUDITOR, ("key", "none"), CaseState.DISAGREED),
            (DEV_CALLER, ("key", "none"), CaseState.DISAGREED),
        ],
        ids=[
            "reviewer agreed",
            "reviewer disagreed",
            "other reviewer",
            "adjudicator",
            "operator",
            "auditor",
            "dev mode",
        ],
    )
    def test_agreement_only_to_those_who_may_see_the_answers(
        self, who: Caller, labels: tuple[str, str], seen: CaseState
    ) -> None:
        """AGREED and DISAGREED read as AWAITING_RESOLUTION to reviewers of the round and
        everyone else who may not see its answers."""
        snap = snapshot(review("alice", labels[0]), review("bob", labels[1]))
        assert permissions.state_seen_by(who, snap) is seen

    def test_an_adjudicator_who_reviewed_the_round_does_not_see_it(self) -> None:
        """carol reviewed the round: to her it is only awaiting resolution."""
        snap = snapshot(review("carol"), review("bob", "none"))
        assert permissions.state_seen_by(CAROL, snap) is CaseState.AWAITING_RESOLUTION

    @pytest.mark.parametrize("reviews_", [(), ("bob",)], ids=["no review", "one review"])
    def test_states_before_the_round_is_full_are_shown_as_they_are(
        self, reviews_: tuple[str, ...]
    ) -> None:
        """Waiting states say nothing about anyone's answer and are shown to reviewers."""
        snap = snapshot(*(review(r) for r in reviews_))
        assert permissions.state_seen_by(ALICE, snap) is state.derive_state(snap)


class TestCommitments:
    def _stored(self, outcome: Outcome = Outcome.LABEL) -> Review:
        sub = ReviewSubmission("case-1", "alice", 0, outcome, "key", "")
        if outcome is not Outcome.LABEL:
            sub = dataclasses.replace(sub, label=None, reason="cannot tell")
        key = '"key"' if outcome is Outcome.LABEL else ""
        return reviews.new_review("rev-1", snapshot(), sub, key, NOW)

    def test_commitment_is_recomputed_from_the_stored_row(self) -> None:
        """What the ledger records is what anyone recomputes from the review row."""
        written = self._stored()
        read = rows.review(rows.named(rows.REVIEW_COLUMNS, rows.review_params(written)))
        assert read == written
        expected = digest([written.salt, "LABEL", '"key"', ""])
        assert reviews.answer_commitment(read) == expected

    def test_equal_answers_give_unequal_commitments(self) -> None:
        """Each review draws its own 16-byte salt, so the label alone does not give the
        commitment away."""
        first, second = self._stored(), self._stored()
        assert len(bytes.fromhex(first.salt)) == reviews.SALT_BYTES
        assert first.salt != second.salt
        assert reviews.answer_commitment(first) != reviews.answer_commitment(second)
        unsalted = digest(["LABEL", '"key"', ""])
        assert unsalted not in {reviews.answer_commitment(r) for r in (first, second)}

    def test_unsalted_rows_keep_their_old_commitment(self) -> None:
        """A review stored before salting commits as it did then."""
        old = review("alice", outcome=Outcome.UNRESOLVED)
        assert old.salt == ""
        assert reviews.answer_commitment(old) == digest(["UNRESOLVED", "", "cannot tell"])


@given(
    issuer=st.text(max_size=20),
    subject=st.text(max_size=20),
    payload=st.dictionaries(st.text(max_size=8), st.text(max_size=16), max_size=4),
)
def test_the_actor_is_hashed_as_documented(
    issuer: str, subject: str, payload: dict[str, str]
) -> None:
    """With an actor the hash is the digest of the event's fields plus "actor"; without one it
    is the digest of the fields alone, as before actors existed."""
    fields = {
        "sequence": 7,
        "event_type": AuditEventType.REVIEW_SUBMITTED.value,
        "occur_time": times.rfc3339(NOW),
        "payload": payload,
        "previous_hash": digests.GENESIS_HASH,
    }
    args = (7, AuditEventType.REVIEW_SUBMITTED, NOW, payload, digests.GENESIS_HASH)
    actor = Actor(issuer, subject)
    assert ledger.event_hash(*args) == digest(fields)
    assert ledger.event_hash(*args, actor) == digest(
        {**fields, "actor": {"issuer": issuer, "subject": subject}}
    )


def test_the_verifier_checks_the_actor() -> None:
    """An event whose actor was changed after hashing fails verification."""
    event = ledger.next_event(
        ledger.EMPTY_HEAD, AuditEventType.CASE_ENQUEUED, {"case_id": "c"}, NOW, Actor("i", "op")
    )
    assert ledger.ChainVerifier().check(event)
    for forged in (Actor("i", "mallory"), None):
        verifier = ledger.ChainVerifier()
        assert not verifier.check(dataclasses.replace(event, actor=forged))
        assert verifier.verdict is not None
        assert verifier.verdict.problem is not None
        assert verifier.verdict.problem.value == "HASH_MISMATCH"
