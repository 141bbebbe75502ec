"""Whole plans from hand-built resolutions: reachability, the split, outcomes, determinism."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from assay.services.planner.domain.model import (
    AcquisitionPolicy,
    Availability,
    AvailabilityReason,
    AvailabilityVerdict,
    Discrimination,
    GapKind,
    MissingSignalNote,
    PlanInput,
    PlanOutcome,
    ProbeKind,
    RationaleFlag,
    SideEffect,
    SignalAvailability,
    SignalClass,
)
from assay.services.planner.domain.plan import Draft, draft_plan, finish_plan
from assay.services.planner.wire import convert
from tests.unit.planner.planner_factories import (
    EMPTY_POLICY,
    GRANT_ALL,
    READ_ONLY,
    conflicted,
    counted,
    flips_for,
    insufficient,
    make_plan,
    plan_input,
    probe,
    resolved,
)

NOTE = MissingSignalNote(SignalClass.TOOL_TRACE, SignalAvailability.COLLECTION_FAILED, "crashed")
CAPS = {
    SignalClass.PROCESS_RESULT: SignalAvailability.UNSUPPORTED,
    SignalClass.RAW_REASONING: SignalAvailability.REDACTED,
}

INPUTS: dict[str, PlanInput] = {
    "conflicted": plan_input(conflicted()),
    "all-flags": plan_input(resolved(flags=list(RationaleFlag)[1:])),
    "uncorroborated": plan_input(resolved(claims=(counted("api_spec"),))),
    "empty": plan_input(insufficient()),
    "excluded": plan_input(insufficient(excluded=2)),
    "note": plan_input(insufficient(), notes=[NOTE]),
    "capabilities": plan_input(resolved(), capabilities=CAPS),
    "everything": plan_input(conflicted(), notes=[NOTE], capabilities=CAPS),
}


class TestReachability:
    @pytest.mark.parametrize("name", list(INPUTS))
    def test_every_gap_has_an_available_human_review_under_an_empty_policy(self, name: str) -> None:
        """With nothing granted, each gap is still addressed by an AVAILABLE HUMAN_REVIEW."""
        plan = make_plan(dataclasses.replace(INPUTS[name], policy=EMPTY_POLICY))
        assert plan.gaps
        for gap in plan.gaps:
            assert any(
                c.probe.kind is ProbeKind.HUMAN_REVIEW
                and c.verdict.availability is Availability.AVAILABLE
                and gap.gap_id in c.gap_ids
                for c in plan.candidates
            ), gap.gap_id


class TestSplit:
    @pytest.mark.parametrize("name", list(INPUTS))
    @pytest.mark.parametrize("policy", [EMPTY_POLICY, READ_ONLY, GRANT_ALL], ids=str)
    def test_nothing_dropped_and_lists_hold_the_right_availabilities(
        self, name: str, policy: AcquisitionPolicy
    ) -> None:
        """Ranked: AVAILABLE/REQUIRES_APPROVAL only; unavailable: the rest; none lost."""
        plan_in = dataclasses.replace(INPUTS[name], policy=policy)
        draft = draft_plan(plan_in)
        plan = make_plan(plan_in)
        ranked = {c.verdict.availability for c in plan.candidates}
        blocked = {c.verdict.availability for c in plan.unavailable}
        assert ranked <= {Availability.AVAILABLE, Availability.REQUIRES_APPROVAL}
        assert blocked <= {Availability.UNAVAILABLE, Availability.FORBIDDEN}
        assert sorted(c.candidate_id for c in plan.candidates + plan.unavailable) == sorted(
            c.candidate_id for c in draft.candidates
        )

    def test_forbidden_goes_to_unavailable_even_when_granted(self) -> None:
        """A FORBIDDEN candidate lands in `unavailable`, not in the ranked list."""
        plan_in = plan_input(conflicted(), policy=GRANT_ALL)
        draft = draft_plan(plan_in)
        forbidden_probe = probe(
            kind=ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
            side_effects=(SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE,),
        )
        forbidden = dataclasses.replace(
            draft.candidates[0],
            probe=forbidden_probe,
            verdict=AvailabilityVerdict(
                Availability.FORBIDDEN,
                AvailabilityReason.SIDE_EFFECT_FORBIDDEN,
                forbidden=(SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE,),
            ),
        )
        patched = Draft(plan_in, draft.gaps, (forbidden, *draft.candidates[1:]), draft.outcomes)
        plan = finish_plan(patched, [plan_in.resolution] * len(draft.outcomes))
        assert forbidden.candidate_id in [c.candidate_id for c in plan.unavailable]
        assert forbidden.candidate_id not in [c.candidate_id for c in plan.candidates]

    def test_network_probe_without_egress_is_listed_with_the_reason(self) -> None:
        """Granted NETWORK_CALL but no egress: CI status is unavailable, EGRESS_NOT_ALLOWED."""
        policy = AcquisitionPolicy(granted=frozenset({SideEffect.NETWORK_CALL}))
        plan = make_plan(plan_input(conflicted(), policy=policy))
        (ci,) = [c for c in plan.unavailable if c.probe.kind is ProbeKind.QUERY_CI_STATUS]
        assert ci.verdict.reason is AvailabilityReason.EGRESS_NOT_ALLOWED

    def test_capability_gap_blocks_runtime_probes_but_not_a_person(self) -> None:
        """An unobservable class with no note: its runtime probes are unavailable, review is not."""
        plan = make_plan(plan_input(resolved(), capabilities=CAPS, policy=GRANT_ALL))
        assert [g.kind for g in plan.gaps] == [GapKind.UNOBSERVABLE_SIGNAL] * 2
        blocked = {c.candidate_id: c.verdict for c in plan.unavailable}
        assert blocked["rerun_test/process_result"].signal_availability is (
            SignalAvailability.UNSUPPORTED
        )
        assert "human_review/process_result" in [c.candidate_id for c in plan.candidates]


class TestOutcome:
    @pytest.mark.parametrize(
        ("plan_in", "outcome"),
        [
            (plan_input(resolved()), PlanOutcome.NO_GAP_IDENTIFIED),
            (
                plan_input(resolved(claims=(counted("a", "g1"),))),
                PlanOutcome.ACQUISITION_RECOMMENDED,
            ),
            (
                plan_input(resolved(claims=(counted("a", "g1"), counted("b")))),
                PlanOutcome.ACQUISITION_RECOMMENDED,
            ),
            (
                plan_input(resolved(flags=[RationaleFlag.STALE_SUPPORT])),
                PlanOutcome.ACQUISITION_RECOMMENDED,
            ),
            (plan_input(resolved(), notes=[NOTE]), PlanOutcome.ACQUISITION_RECOMMENDED),
            (plan_input(resolved(), capabilities=CAPS), PlanOutcome.ACQUISITION_RECOMMENDED),
            (plan_input(conflicted()), PlanOutcome.ACQUISITION_RECOMMENDED),
            (plan_input(insufficient()), PlanOutcome.ACQUISITION_RECOMMENDED),
        ],
        ids=[
            "corroborated",
            "one-group",
            "one-declared-one-defaulted",
            "flagged",
            "missing-note",
            "capability-gap",
            "conflicted",
            "empty",
        ],
    )
    def test_no_gap_identified_only_under_the_corroboration_condition(
        self, plan_in: PlanInput, outcome: PlanOutcome
    ) -> None:
        """NO_GAP_IDENTIFIED iff resolved, >= 2 declared groups, no flag, no signal gap."""
        plan = make_plan(plan_in)
        assert plan.outcome is outcome
        assert (plan.candidates == () and plan.unavailable == ()) == (
            outcome is PlanOutcome.NO_GAP_IDENTIFIED
        )


class TestDiscriminationInThePlan:
    def test_a_probe_that_could_flip_ranks_above_one_that_could_not(self) -> None:
        """Of two otherwise equal read-only probes, the one whose outcome flips ranks first."""
        plan_in = plan_input(conflicted(), policy=READ_ONLY)
        for flipping, other in (
            ("artifact_hash", "vcs_state"),
            ("vcs_state", "artifact_hash"),
        ):
            plan = make_plan(plan_in, flips_for(flipping))
            order = [c.probe.expected_source for c in plan.candidates]
            assert order.index(flipping) < order.index(other)
            (flip,) = [c for c in plan.candidates if c.probe.expected_source == flipping]
            assert flip.discrimination is Discrimination.HIGH

    def test_outcomes_are_deduplicated_per_source_group_and_value(self) -> None:
        """One hypothesis per distinct outcome: candidates of one source share theirs."""
        draft = draft_plan(plan_input(conflicted(), notes=[NOTE], capabilities=CAPS))
        per_candidate = sum(len(c.outcomes) for c in draft.candidates)
        assert len(draft.outcomes) < per_candidate
        assert len({o.dedup_key for o in draft.outcomes}) == len(draft.outcomes)

    def test_finish_rejects_a_wrong_number_of_answers(self) -> None:
        """finish_plan needs exactly one hypothetical resolution per outcome."""
        draft = draft_plan(plan_input(conflicted()))
        with pytest.raises(ValueError, match="hypothetical resolutions"):
            finish_plan(draft, [])


class TestDeterminism:
    def test_any_order_of_notes_and_capabilities_gives_identical_bytes(self) -> None:
        """Permuting notes and capability rows never changes the serialized plan."""
        notes = [
            NOTE,
            MissingSignalNote(SignalClass.FINAL_RESPONSE, SignalAvailability.DISABLED, "off"),
            MissingSignalNote(SignalClass.TOOL_TRACE, SignalAvailability.UNAVAILABLE, "later"),
        ]
        outputs = set()
        for perm in itertools.permutations(notes):
            caps = dict(reversed(list(CAPS.items()))) if perm[0] is NOTE else CAPS
            plan = make_plan(plan_input(conflicted(), notes=perm, capabilities=caps))
            outputs.add(convert.plan(plan).SerializeToString(deterministic=True))
        assert len(outputs) == 1


class TestRequiredReview:
    def test_a_person_moves_up_when_the_resolver_requires_review(self) -> None:
        """A conflicted safety predicate puts HUMAN_REVIEW higher than the same plan without."""

        def position(requires_review: bool) -> int:
            plan = make_plan(
                plan_input(conflicted(requires_review=requires_review), policy=GRANT_ALL)
            )
            kinds = [c.probe.kind for c in plan.candidates]
            return kinds.index(ProbeKind.HUMAN_REVIEW)

        assert position(True) < position(False)
