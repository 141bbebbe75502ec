"""The four availability checks, in their fixed order."""

from __future__ import annotations

import pytest

from assay.services.planner.domain.availability import classify_availability, runtime_state
from assay.services.planner.domain.model import (
    AcquisitionPolicy,
    Availability,
    AvailabilityReason,
    MissingSignalNote,
    ProbeKind,
    SideEffect,
    SignalAvailability,
    SignalClass,
)
from assay.services.planner.domain.probes import CATALOGUE
from tests.unit.planner.planner_factories import EMPTY_POLICY, GRANT_ALL, probe

OUTSIDE = SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE
OK = SignalAvailability.AVAILABLE


class TestForbidden:
    def test_forbidden_even_when_the_policy_grants_it(self) -> None:
        """Writing outside the worktree is FORBIDDEN although the policy grants everything."""
        assert OUTSIDE in GRANT_ALL.granted
        verdict = classify_availability(
            probe(side_effects=(OUTSIDE, SideEffect.PROCESS_SPAWN)),
            SignalClass.PROCESS_RESULT,
            GRANT_ALL,
            OK,
        )
        assert verdict.availability is Availability.FORBIDDEN
        assert verdict.reason is AvailabilityReason.SIDE_EFFECT_FORBIDDEN
        assert verdict.forbidden == (OUTSIDE,)

    def test_forbidden_wins_over_an_unobservable_class(self) -> None:
        """Check 1 comes before check 2: forbidden is reported even if the class is blocked."""
        verdict = classify_availability(
            probe(side_effects=(OUTSIDE,)),
            SignalClass.PROCESS_RESULT,
            EMPTY_POLICY,
            SignalAvailability.DISABLED,
        )
        assert verdict.availability is Availability.FORBIDDEN


class TestSignalNotObservable:
    @pytest.mark.parametrize(
        "state",
        [
            SignalAvailability.UNSUPPORTED,
            SignalAvailability.UNAVAILABLE,
            SignalAvailability.REDACTED,
            SignalAvailability.DISABLED,
        ],
    )
    def test_unobservable_target_is_unavailable_with_the_state(
        self, state: SignalAvailability
    ) -> None:
        """Check 2: a runtime probe on a class the runtime cannot observe is UNAVAILABLE."""
        verdict = classify_availability(probe(), SignalClass.PROCESS_RESULT, GRANT_ALL, state)
        assert (verdict.availability, verdict.reason, verdict.signal_availability) == (
            Availability.UNAVAILABLE,
            AvailabilityReason.SIGNAL_NOT_OBSERVABLE,
            state,
        )

    def test_collection_failed_does_not_block(self) -> None:
        """A failed collection is what a fresh probe retries: not a block."""
        verdict = classify_availability(
            probe(), SignalClass.PROCESS_RESULT, GRANT_ALL, SignalAvailability.COLLECTION_FAILED
        )
        assert verdict.availability is Availability.AVAILABLE

    def test_unobservable_comes_before_missing_grants(self) -> None:
        """Check 2 before check 3: UNAVAILABLE, not REQUIRES_APPROVAL."""
        verdict = classify_availability(
            probe(side_effects=(SideEffect.PROCESS_SPAWN,)),
            SignalClass.PROCESS_RESULT,
            EMPTY_POLICY,
            SignalAvailability.DISABLED,
        )
        assert verdict.availability is Availability.UNAVAILABLE

    def test_human_review_is_never_gated_by_the_runtime(self) -> None:
        """HUMAN_REVIEW stays AVAILABLE under an empty policy on a disabled class."""
        verdict = classify_availability(
            CATALOGUE[ProbeKind.HUMAN_REVIEW],
            SignalClass.RAW_REASONING,
            EMPTY_POLICY,
            SignalAvailability.DISABLED,
        )
        assert verdict.availability is Availability.AVAILABLE


class TestRequiresApproval:
    def test_names_exactly_the_missing_grants(self) -> None:
        """Check 3: REQUIRES_APPROVAL lists exactly the side effects not granted."""
        policy = AcquisitionPolicy(granted=frozenset({SideEffect.FILESYSTEM_READ}))
        verdict = classify_availability(
            CATALOGUE[ProbeKind.RERUN_TEST], SignalClass.PROCESS_RESULT, policy, OK
        )
        assert verdict.availability is Availability.REQUIRES_APPROVAL
        assert verdict.reason is AvailabilityReason.SIDE_EFFECT_NOT_GRANTED
        assert verdict.missing_grants == (
            SideEffect.FILESYSTEM_WRITE_WORKTREE,
            SideEffect.PROCESS_SPAWN,
        )


class TestNetwork:
    @pytest.mark.parametrize(
        ("egress", "cloud", "reason"),
        [
            (False, True, AvailabilityReason.EGRESS_NOT_ALLOWED),
            (False, False, AvailabilityReason.EGRESS_NOT_ALLOWED),
            (True, False, AvailabilityReason.CLOUD_SYNC_NOT_ALLOWED),
        ],
    )
    def test_network_probe_without_egress_or_cloud_sync_is_blocked(
        self, egress: bool, cloud: bool, reason: AvailabilityReason
    ) -> None:
        """Check 4: a granted network probe is still blocked, with the specific reason."""
        policy = AcquisitionPolicy(
            granted=frozenset({SideEffect.NETWORK_CALL}),
            egress_allowed=egress,
            cloud_sync_allowed=cloud,
        )
        verdict = classify_availability(
            CATALOGUE[ProbeKind.QUERY_CI_STATUS], SignalClass.PROCESS_RESULT, policy, OK
        )
        assert (verdict.availability, verdict.reason) == (Availability.UNAVAILABLE, reason)

    def test_egress_alone_suffices_without_a_hosted_service(self) -> None:
        """The replay needs egress but not cloud sync."""
        policy = AcquisitionPolicy(
            granted=frozenset(CATALOGUE[ProbeKind.BOUNDED_REPLAY_EXPERIMENT].side_effects),
            egress_allowed=True,
        )
        verdict = classify_availability(
            CATALOGUE[ProbeKind.BOUNDED_REPLAY_EXPERIMENT], SignalClass.TOOL_TRACE, policy, OK
        )
        assert verdict.availability is Availability.AVAILABLE

    def test_all_granted_is_available(self) -> None:
        """Everything granted and allowed: AVAILABLE, ALL_REQUIREMENTS_MET."""
        verdict = classify_availability(
            CATALOGUE[ProbeKind.QUERY_CI_STATUS], SignalClass.PROCESS_RESULT, GRANT_ALL, OK
        )
        assert verdict.reason is AvailabilityReason.ALL_REQUIREMENTS_MET


R = AvailabilityReason
CI = CATALOGUE[ProbeKind.QUERY_CI_STATUS]
NETWORK = frozenset({SideEffect.NETWORK_CALL})


class TestBlockingReasons:
    @pytest.mark.parametrize(
        ("policy", "state", "availability", "blocking"),
        [
            (EMPTY_POLICY, OK, Availability.REQUIRES_APPROVAL,
             (R.SIDE_EFFECT_NOT_GRANTED, R.EGRESS_NOT_ALLOWED, R.CLOUD_SYNC_NOT_ALLOWED)),
            (AcquisitionPolicy(egress_allowed=True), OK, Availability.REQUIRES_APPROVAL,
             (R.SIDE_EFFECT_NOT_GRANTED, R.CLOUD_SYNC_NOT_ALLOWED)),
            (AcquisitionPolicy(egress_allowed=True, cloud_sync_allowed=True), OK,
             Availability.REQUIRES_APPROVAL, (R.SIDE_EFFECT_NOT_GRANTED,)),
            (AcquisitionPolicy(granted=NETWORK), OK, Availability.UNAVAILABLE,
             (R.EGRESS_NOT_ALLOWED, R.CLOUD_SYNC_NOT_ALLOWED)),
            (EMPTY_POLICY, SignalAvailability.DISABLED, Availability.UNAVAILABLE,
             (R.SIGNAL_NOT_OBSERVABLE, R.SIDE_EFFECT_NOT_GRANTED, R.EGRESS_NOT_ALLOWED,
              R.CLOUD_SYNC_NOT_ALLOWED)),
            (GRANT_ALL, OK, Availability.AVAILABLE, ()),
        ],
    )  # fmt: skip
    def test_every_failing_check_in_the_fixed_order(
        self,
        policy: AcquisitionPolicy,
        state: SignalAvailability,
        availability: Availability,
        blocking: tuple[AvailabilityReason, ...],
    ) -> None:
        """The first failing check decides; every later failing check is listed after it."""
        verdict = classify_availability(CI, SignalClass.PROCESS_RESULT, policy, state)
        assert verdict.availability is availability
        assert verdict.blocking_reasons == blocking
        if blocking:
            assert verdict.reason is blocking[0]

    def test_forbidden_lists_the_later_checks_but_not_its_own_side_effect_as_a_grant(
        self,
    ) -> None:
        """A forbidden side effect is not a missing grant (no grant would help); the other
        side effects not granted are."""
        verdict = classify_availability(
            probe(side_effects=(OUTSIDE, SideEffect.PROCESS_SPAWN)),
            SignalClass.PROCESS_RESULT,
            EMPTY_POLICY,
            OK,
        )
        assert verdict.blocking_reasons == (R.SIDE_EFFECT_FORBIDDEN, R.SIDE_EFFECT_NOT_GRANTED)
        only_outside = classify_availability(
            probe(side_effects=(OUTSIDE,)), SignalClass.PROCESS_RESULT, EMPTY_POLICY, OK
        )
        assert only_outside.blocking_reasons == (R.SIDE_EFFECT_FORBIDDEN,)


class TestRuntimeState:
    def test_capabilities_decide_over_notes(self) -> None:
        """A capabilities row wins over a note about the same class."""
        note = MissingSignalNote(SignalClass.TOOL_TRACE, SignalAvailability.DISABLED)
        caps = {SignalClass.TOOL_TRACE: SignalAvailability.AVAILABLE}
        assert runtime_state(SignalClass.TOOL_TRACE, caps, (note,)) is OK

    def test_a_note_decides_when_capabilities_are_silent(self) -> None:
        """Without a capabilities row, the note's state applies."""
        note = MissingSignalNote(SignalClass.TOOL_TRACE, SignalAvailability.UNSUPPORTED)
        state = runtime_state(SignalClass.TOOL_TRACE, {}, (note,))
        assert state is SignalAvailability.UNSUPPORTED

    def test_unlisted_class_is_assumed_available(self) -> None:
        """With neither, the class is taken as AVAILABLE."""
        assert runtime_state(SignalClass.TOOL_TRACE, {}, ()) is OK
