"""The approval rules on domain values: derived state, who may decide, quorum, denial,
single use bound to the candidate digest, expiry, and the policy file's table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import AlreadyExists, FailedPrecondition, PermissionDenied, Reason
from assay.services.adjudication.domain import approvals
from assay.services.adjudication.domain.approval_policy import (
    ApprovalPolicy,
    check_approvable,
    parse_approval_policy,
)
from assay.services.adjudication.domain.approvals import (
    Approval,
    ApprovalCandidate,
    ApprovalState,
    Decision,
    Step,
    StepKind,
)
from assay.services.adjudication.domain.model import Actor

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
REQUESTER = Actor("https://idp", "runner")
ANN = Actor("https://idp", "ann")
BOB = Actor("https://idp", "bob")
DIGEST = "sha256:" + "a" * 64


def candidate(**changes: object) -> ApprovalCandidate:
    fields: dict[str, object] = {
        "candidate_id": "query_ci_status/process_result",
        "probe": "QUERY_CI_STATUS",
        "target_signal_class": "PROCESS_RESULT",
        "availability": "REQUIRES_APPROVAL",
        "required_side_effects": ("NETWORK_CALL",),
        "missing_grants": ("NETWORK_CALL",),
        "blocking_reasons": ("SIDE_EFFECT_NOT_GRANTED",),
        "candidate_digest": DIGEST,
        "detail": "{}",
    }
    fields.update(changes)
    return ApprovalCandidate(**fields)  # type: ignore[arg-type]


def approval(quorum: int = 1, deny_ends: bool = True) -> Approval:
    return Approval(
        approval_id="approval_1",
        tenant="acme",
        subject="svc",
        predicate="idempotency.mode",
        candidate=candidate(),
        requester=REQUESTER,
        reason="need CI status",
        request_time=T0,
        expire_time=T0 + timedelta(hours=1),
        grant_lifetime=timedelta(minutes=15),
        quorum=quorum,
        deny_ends=deny_ends,
    )


def after(a: Approval, steps: list[Step], step: Step) -> list[Step]:
    assert step.seq == len(steps) + 1
    return [*steps, step]


def state(a: Approval, steps: list[Step], at: datetime) -> ApprovalState:
    return approvals.standing(a, steps, at).state


class TestDeciding:
    def test_a_new_request_is_pending_until_its_deadline_then_expired(self) -> None:
        a = approval()
        assert state(a, [], T0 + timedelta(minutes=59)) is ApprovalState.PENDING
        assert state(a, [], T0 + timedelta(hours=1)) is ApprovalState.EXPIRED

    def test_the_requester_may_never_decide(self) -> None:
        with pytest.raises(PermissionDenied) as caught:
            approvals.decide(approval(), [], REQUESTER, Decision.APPROVE, "ok", T0)
        assert caught.value.reason is Reason.APPROVER_IS_REQUESTER

    def test_one_approval_grants_at_quorum_one_and_the_grant_clock_starts_then(self) -> None:
        a = approval()
        at = T0 + timedelta(minutes=10)
        steps = after(a, [], approvals.decide(a, [], ANN, Decision.APPROVE, "fine", at))
        now = approvals.standing(a, steps, at)
        assert now.state is ApprovalState.GRANTED
        assert now.grant_expire_time == at + timedelta(minutes=15)
        # The grant outlives the pending deadline: its own clock decides.
        assert state(a, steps, T0 + timedelta(minutes=24)) is ApprovalState.GRANTED
        assert state(a, steps, at + timedelta(minutes=15)) is ApprovalState.EXPIRED

    def test_a_quorum_of_two_needs_two_distinct_approvers(self) -> None:
        a = approval(quorum=2)
        steps = after(a, [], approvals.decide(a, [], ANN, Decision.APPROVE, "ok", T0))
        assert state(a, steps, T0) is ApprovalState.PENDING
        with pytest.raises(AlreadyExists) as caught:
            approvals.decide(a, steps, ANN, Decision.APPROVE, "again", T0)
        assert caught.value.reason is Reason.APPROVER_ALREADY_DECIDED
        steps = after(a, steps, approvals.decide(a, steps, BOB, Decision.APPROVE, "ok", T0))
        assert state(a, steps, T0) is ApprovalState.GRANTED

    def test_one_denial_ends_the_request_when_the_policy_says_so(self) -> None:
        a = approval(quorum=2)
        steps = after(a, [], approvals.decide(a, [], ANN, Decision.DENY, "no", T0))
        assert state(a, steps, T0) is ApprovalState.DENIED
        with pytest.raises(FailedPrecondition) as caught:
            approvals.decide(a, steps, BOB, Decision.APPROVE, "yes", T0)
        assert caught.value.reason is Reason.APPROVAL_NOT_PENDING
        assert caught.value.metadata["state"] == "APPROVAL_STATE_DENIED"

    def test_denials_accumulate_when_one_does_not_end_it(self) -> None:
        a = approval(quorum=1, deny_ends=False)
        steps = after(a, [], approvals.decide(a, [], ANN, Decision.DENY, "no", T0))
        assert state(a, steps, T0) is ApprovalState.PENDING
        steps = after(a, steps, approvals.decide(a, steps, BOB, Decision.APPROVE, "yes", T0))
        assert state(a, steps, T0) is ApprovalState.GRANTED


class TestUsing:
    def granted(self) -> tuple[Approval, list[Step]]:
        a = approval()
        return a, [approvals.decide(a, [], ANN, Decision.APPROVE, "ok", T0)]

    def test_the_requester_consumes_once_for_its_digest(self) -> None:
        a, steps = self.granted()
        steps = after(a, steps, approvals.consume(a, steps, REQUESTER, DIGEST, T0))
        assert state(a, steps, T0) is ApprovalState.CONSUMED
        with pytest.raises(FailedPrecondition) as caught:
            approvals.consume(a, steps, REQUESTER, DIGEST, T0)
        assert caught.value.reason is Reason.APPROVAL_ALREADY_CONSUMED

    def test_someone_else_may_not_consume(self) -> None:
        a, steps = self.granted()
        with pytest.raises(PermissionDenied) as caught:
            approvals.consume(a, steps, ANN, DIGEST, T0)
        assert caught.value.reason is Reason.IDENTITY_MISMATCH

    def test_a_pending_approval_is_not_granted(self) -> None:
        with pytest.raises(FailedPrecondition) as caught:
            approvals.consume(approval(), [], REQUESTER, DIGEST, T0)
        assert caught.value.reason is Reason.APPROVAL_NOT_GRANTED
        assert caught.value.metadata["state"] == "APPROVAL_STATE_PENDING"

    def test_revoked_then_nothing_is_consumed(self) -> None:
        a, steps = self.granted()
        steps = after(a, steps, approvals.revoke(a, steps, REQUESTER, "changed my mind", T0))
        assert state(a, steps, T0) is ApprovalState.REVOKED
        with pytest.raises(FailedPrecondition) as caught:
            approvals.consume(a, steps, REQUESTER, DIGEST, T0)
        assert caught.value.reason is Reason.APPROVAL_NOT_GRANTED
        with pytest.raises(FailedPrecondition):
            approvals.revoke(a, steps, REQUESTER, "twice", T0)

    @given(
        digest=st.text(min_size=1, max_size=80),
        late=st.integers(min_value=0, max_value=10_000),
        revoked=st.booleans(),
        expired=st.booleans(),
    )
    def test_every_consume_but_the_exact_one_in_time_is_refused(
        self, digest: str, late: int, revoked: bool, expired: bool
    ) -> None:
        """Over mismatched digests, expired and revoked grants: each is refused; only the
        granted digest, in time, on a grant not revoked, is consumed."""
        a, steps = self.granted()
        if revoked:
            steps = after(a, steps, approvals.revoke(a, steps, REQUESTER, "stop", T0))
        at = T0 + (
            timedelta(minutes=15, seconds=late) if expired else timedelta(seconds=late % 900)
        )
        wanted = digest == DIGEST and not revoked and not expired
        if wanted:
            step = approvals.consume(a, steps, REQUESTER, digest, at)
            assert step.kind is StepKind.CONSUMED
            return
        with pytest.raises(FailedPrecondition) as caught:
            approvals.consume(a, steps, REQUESTER, digest, at)
        expected = (
            Reason.APPROVAL_NOT_GRANTED
            if revoked or expired
            else Reason.APPROVAL_CANDIDATE_MISMATCH
        )
        assert caught.value.reason is expected


class TestExpiry:
    def test_an_expiry_is_recorded_once(self) -> None:
        a = approval()
        late = T0 + timedelta(hours=2)
        assert approvals.expiry(a, [], T0) is None
        step = approvals.expiry(a, [], late)
        assert step is not None
        assert step.kind is StepKind.EXPIRED
        assert step.actor is None
        assert approvals.expiry(a, [step], late) is None
        assert state(a, [step], late) is ApprovalState.EXPIRED

    def test_the_next_deadline_is_the_pending_one_then_the_grants(self) -> None:
        a = approval()
        assert approvals.expires_at(a, [], T0) == a.expire_time
        at = T0 + timedelta(minutes=5)
        steps = [approvals.decide(a, [], ANN, Decision.APPROVE, "ok", at)]
        assert approvals.expires_at(a, steps, at) == at + a.grant_lifetime


class TestApprovable:
    def test_a_candidate_needing_a_never_approved_effect_is_forbidden(self) -> None:
        with pytest.raises(FailedPrecondition) as caught:
            check_approvable(
                candidate(required_side_effects=("FILESYSTEM_WRITE_OUTSIDE_WORKTREE",))
            )
        assert caught.value.reason is Reason.CANDIDATE_FORBIDDEN

    @pytest.mark.parametrize(
        ("changes", "words"),
        [
            ({"availability": "AVAILABLE", "blocking_reasons": ()}, "AVAILABLE"),
            ({"blocking_reasons": ("SIGNAL_NOT_OBSERVABLE",)}, "SIGNAL_NOT_OBSERVABLE"),
            ({"blocking_reasons": ()}, "names no blocking reason"),
        ],
    )
    def test_only_requires_approval_blocked_by_grants_is_approvable(
        self, changes: dict[str, object], words: str
    ) -> None:
        with pytest.raises(FailedPrecondition) as caught:
            check_approvable(candidate(**changes))
        assert caught.value.reason is Reason.CANDIDATE_NOT_APPROVABLE
        assert words in caught.value.message

    def test_network_switches_are_approvable(self) -> None:
        check_approvable(
            candidate(blocking_reasons=("SIDE_EFFECT_NOT_GRANTED", "EGRESS_NOT_ALLOWED"))
        )


class TestPolicy:
    def test_the_quorum_is_the_largest_of_the_actions_side_effects(self) -> None:
        policy = parse_approval_policy({"quorum": {"NETWORK_CALL": 1, "PROCESS_SPAWN": 2}})
        assert policy.quorum_for(("NETWORK_CALL",)) == 1
        assert policy.quorum_for(("NETWORK_CALL", "PROCESS_SPAWN")) == 2
        assert policy.quorum_for(("VCS_READ",)) == policy.default_quorum == 1

    def test_lifetimes_have_defaults_and_maximums(self) -> None:
        policy = parse_approval_policy(
            {"pending_lifetime_seconds": 600, "max_pending_lifetime_seconds": 3600}
        )
        assert policy.expire_time(None, T0) == T0 + timedelta(minutes=10)
        assert policy.expire_time(T0 + timedelta(minutes=30), T0) == T0 + timedelta(minutes=30)
        assert "at most 1h" in str(policy.expire_time(T0 + timedelta(hours=2), T0))
        assert "future" in str(policy.expire_time(T0, T0))
        assert policy.grant_for(None) == ApprovalPolicy().grant_lifetime
        assert "positive" in str(policy.grant_for(timedelta(0)))
        assert "at most" in str(policy.grant_for(timedelta(days=2)))

    @pytest.mark.parametrize(
        ("table", "named"),
        [
            ({"quorum": {"TELEPORT": 1}}, "approvals.quorum.TELEPORT"),
            ({"quorum": {"NETWORK_CALL": 0}}, "approvals.quorum.NETWORK_CALL"),
            ({"deny_ends": "yes"}, "approvals.deny_ends"),
            ({"webhook_url": "ftp://x"}, "approvals.webhook_url"),
            ({"grant_lifetime_seconds": 100, "max_grant_lifetime_seconds": 10}, "grant_lifetime"),
            ({"colour": "red"}, "unknown keys"),
        ],
    )
    def test_a_bad_table_names_its_key(self, table: dict[str, object], named: str) -> None:
        with pytest.raises(ValueError, match=named):
            parse_approval_policy(table)


def test_the_content_digest_covers_every_field() -> None:
    a = approval()
    base = approvals.approval_digest(a)
    from dataclasses import replace

    for changed in (
        replace(a, reason="other"),
        replace(a, quorum=2),
        replace(a, requester=ANN),
        replace(a, candidate=candidate(probe="RERUN_TEST")),
        replace(a, expire_time=a.expire_time + timedelta(seconds=1)),
    ):
        assert approvals.approval_digest(changed) != base
