"""Gap derivation from the resolution, from missing-signal notes, from capabilities, and none."""

from __future__ import annotations

import pytest

from assay.services.planner.domain.gaps import derive_gaps, most_restrictive
from assay.services.planner.domain.model import (
    GapKind,
    GapSource,
    MissingSignalNote,
    RationaleFlag,
    SignalAvailability,
    SignalClass,
)
from tests.unit.planner.planner_factories import (
    conflicted,
    counted,
    insufficient,
    plan_input,
    resolved,
)

CONCERNING = [
    SignalAvailability.UNSUPPORTED,
    SignalAvailability.UNAVAILABLE,
    SignalAvailability.COLLECTION_FAILED,
    SignalAvailability.REDACTED,
    SignalAvailability.DISABLED,
]


def kinds(plan_in: object) -> list[GapKind]:
    return [g.kind for g in derive_gaps(plan_in)]  # type: ignore[arg-type]


class TestResolutionGaps:
    def test_conflicted_is_an_unresolved_conflict(self) -> None:
        """A CONFLICTED resolution yields UNRESOLVED_CONFLICT from the resolution."""
        gaps = derive_gaps(plan_input(conflicted()))
        assert [(g.kind, g.source) for g in gaps] == [
            (GapKind.UNRESOLVED_CONFLICT, GapSource.RESOLUTION)
        ]

    @pytest.mark.parametrize(
        ("flag", "kind"),
        [
            (RationaleFlag.ALL_SUPPORT_DISCOUNTED, GapKind.ALL_SUPPORT_DISCOUNTED),
            (RationaleFlag.SINGLE_SOURCE_CORROBORATION, GapKind.SINGLE_SOURCE_CORROBORATION),
            (RationaleFlag.INDEPENDENCE_UNVERIFIED, GapKind.INDEPENDENCE_UNVERIFIED),
            (RationaleFlag.STALE_SUPPORT, GapKind.STALE_SUPPORT),
        ],
    )
    def test_each_rationale_flag_is_its_own_gap(self, flag: RationaleFlag, kind: GapKind) -> None:
        """Each of the four rationale flags becomes exactly its gap kind."""
        assert kinds(plan_input(resolved(flags=[flag]))) == [kind]

    def test_all_four_flags_are_ordered_by_kind(self) -> None:
        """Several flags give several gaps, in GapKind order."""
        flags = list(RationaleFlag)[1:]
        assert kinds(plan_input(resolved(flags=reversed(flags)))) == [
            GapKind.ALL_SUPPORT_DISCOUNTED,
            GapKind.SINGLE_SOURCE_CORROBORATION,
            GapKind.INDEPENDENCE_UNVERIFIED,
            GapKind.STALE_SUPPORT,
        ]

    def test_two_declared_groups_and_nothing_else_is_no_gap(self) -> None:
        """RESOLVED with two declared groups, no flags, no notes: no gap at all."""
        assert derive_gaps(plan_input(resolved())) == ()

    @pytest.mark.parametrize(
        "claims",
        [
            (counted("api_spec", "g1"),),
            (counted("api_spec"), counted("test_result")),
            (counted("api_spec", "g1"), counted("test_result")),
        ],
        ids=["one-declared", "two-defaulted", "one-declared-one-defaulted"],
    )
    def test_fewer_than_two_declared_groups_is_uncorroborated(self, claims: tuple) -> None:  # type: ignore[type-arg]
        """Without two declared groups, an unflagged RESOLVED leader is UNCORROBORATED."""
        assert kinds(plan_input(resolved(claims=claims))) == [GapKind.UNCORROBORATED]


class TestEmptyEvidence:
    def test_no_claims_and_no_notes_is_no_evidence_at_all(self) -> None:
        """Nobody looked: NO_EVIDENCE_AT_ALL, from the empty evidence."""
        gaps = derive_gaps(plan_input(insufficient()))
        assert [(g.kind, g.source) for g in gaps] == [
            (GapKind.NO_EVIDENCE_AT_ALL, GapSource.EMPTY_EVIDENCE)
        ]

    def test_a_missing_signal_note_replaces_no_evidence_at_all(self) -> None:
        """Somebody looked and found it missing: a MISSING_SIGNAL gap, not NO_EVIDENCE_AT_ALL."""
        note = MissingSignalNote(
            SignalClass.TOOL_TRACE, SignalAvailability.COLLECTION_FAILED, "collector crashed"
        )
        gaps = derive_gaps(plan_input(insufficient(), notes=[note]))
        assert [(g.kind, g.signal_class, g.notes) for g in gaps] == [
            (GapKind.MISSING_SIGNAL, SignalClass.TOOL_TRACE, ("collector crashed",))
        ]

    def test_all_claims_excluded_is_no_active_claims(self) -> None:
        """Claims that were all reviewed out or superseded are not 'no evidence at all'."""
        assert kinds(plan_input(insufficient(excluded=3))) == [GapKind.NO_ACTIVE_CLAIMS]


class TestNoteGaps:
    @pytest.mark.parametrize("state", CONCERNING)
    def test_concerning_note_is_a_missing_signal_gap(self, state: SignalAvailability) -> None:
        """Each concerning availability in a note yields a MISSING_SIGNAL gap with that state."""
        note = MissingSignalNote(SignalClass.FINAL_RESPONSE, state)
        gaps = derive_gaps(plan_input(resolved(), notes=[note]))
        assert [(g.kind, g.source, g.signal_availability) for g in gaps] == [
            (GapKind.MISSING_SIGNAL, GapSource.MISSING_SIGNAL_NOTE, state)
        ]

    def test_available_note_is_ignored(self) -> None:
        """A note whose availability is AVAILABLE is not a gap."""
        note = MissingSignalNote(SignalClass.FINAL_RESPONSE, SignalAvailability.AVAILABLE)
        assert derive_gaps(plan_input(resolved(), notes=[note])) == ()

    def test_notes_for_one_class_merge_to_the_most_restrictive(self) -> None:
        """Two notes about one class make one gap with the stronger state and both texts."""
        notes = [
            MissingSignalNote(SignalClass.TOOL_TRACE, SignalAvailability.COLLECTION_FAILED, "b"),
            MissingSignalNote(SignalClass.TOOL_TRACE, SignalAvailability.DISABLED, "a"),
        ]
        (gap,) = derive_gaps(plan_input(resolved(), notes=notes))
        assert (gap.signal_availability, gap.notes) == (SignalAvailability.DISABLED, ("a", "b"))

    def test_most_restrictive_of_nothing_concerning_is_available(self) -> None:
        """With no concerning state the merge says AVAILABLE."""
        assert most_restrictive([SignalAvailability.AVAILABLE]) is SignalAvailability.AVAILABLE


class TestCapabilityGaps:
    def test_unobservable_class_is_a_gap_even_with_no_note(self) -> None:
        """A class the runtime cannot observe surfaces although nobody noted it missing."""
        gaps = derive_gaps(
            plan_input(
                resolved(),
                capabilities={SignalClass.PROCESS_RESULT: SignalAvailability.UNSUPPORTED},
            )
        )
        assert [(g.kind, g.source, g.signal_class, g.signal_availability) for g in gaps] == [
            (
                GapKind.UNOBSERVABLE_SIGNAL,
                GapSource.CAPABILITIES,
                SignalClass.PROCESS_RESULT,
                SignalAvailability.UNSUPPORTED,
            )
        ]

    def test_available_capability_is_not_a_gap(self) -> None:
        """An AVAILABLE capability row adds nothing."""
        caps = {SignalClass.PROCESS_RESULT: SignalAvailability.AVAILABLE}
        assert derive_gaps(plan_input(resolved(), capabilities=caps)) == ()

    def test_gap_ids_are_stable_and_name_the_class(self) -> None:
        """Signal gaps have ids '<kind>/<class>'; resolution gaps just '<kind>'."""
        caps = {SignalClass.RAW_REASONING: SignalAvailability.REDACTED}
        gaps = derive_gaps(plan_input(conflicted(), capabilities=caps))
        assert [g.gap_id for g in gaps] == [
            "unresolved_conflict",
            "unobservable_signal/raw_reasoning",
        ]
