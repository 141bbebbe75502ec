"""The probe catalogue and its mapping to gaps and signal classes."""

from __future__ import annotations

import pytest

from assay.services.planner.domain.model import (
    ActionRisk,
    GapKind,
    ProbeKind,
    SideEffect,
    SignalClass,
)
from assay.services.planner.domain.probes import (
    AUTOMATABLE_CLASSES,
    CATALOGUE,
    action_risk,
    probes_for_class,
    probes_for_gap,
)
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from tests.unit.planner.planner_factories import probe

RUNTIME_CLASSES = [
    c for c in SignalClass if c not in (SignalClass.UNSPECIFIED, SignalClass.HUMAN_JUDGEMENT)
]


class TestCatalogue:
    def test_every_probe_kind_is_catalogued(self) -> None:
        """The catalogue has exactly one entry per ProbeKind."""
        assert set(CATALOGUE) == set(ProbeKind) - {ProbeKind.UNSPECIFIED}

    @pytest.mark.parametrize("kind", list(CATALOGUE))
    def test_expected_source_is_in_the_resolvers_builtin_table(self, kind: ProbeKind) -> None:
        """A probe's claims would come from a source kind the resolver knows."""
        assert CATALOGUE[kind].expected_source in DEFAULT_RELIABILITY

    def test_human_review_needs_no_side_effect_and_targets_every_class(self) -> None:
        """HUMAN_REVIEW is always reachable: no side effects, any class, not runtime-gated."""
        human = CATALOGUE[ProbeKind.HUMAN_REVIEW]
        assert human.side_effects == ()
        assert not human.observes_via_runtime
        assert set(RUNTIME_CLASSES) <= set(human.targets)

    def test_network_probes_declare_network_call(self) -> None:
        """Every probe that needs egress declares NETWORK_CALL, and vice versa."""
        for p in CATALOGUE.values():
            assert p.needs_egress == (SideEffect.NETWORK_CALL in p.side_effects), p.kind


class TestProbesForClass:
    @pytest.mark.parametrize("cls", [c for c in RUNTIME_CLASSES if c not in AUTOMATABLE_CLASSES])
    def test_other_classes_map_to_human_review_only(self, cls: SignalClass) -> None:
        """Classes other than process result, tool trace and payload: HUMAN_REVIEW only."""
        assert [p.kind for p in probes_for_class(cls)] == [ProbeKind.HUMAN_REVIEW]

    @pytest.mark.parametrize(
        ("cls", "kinds"),
        [
            (
                SignalClass.PROCESS_RESULT,
                [ProbeKind.RERUN_TEST, ProbeKind.QUERY_CI_STATUS, ProbeKind.HUMAN_REVIEW],
            ),
            (
                SignalClass.TOOL_TRACE,
                [ProbeKind.BOUNDED_REPLAY_EXPERIMENT, ProbeKind.HUMAN_REVIEW],
            ),
            (
                SignalClass.TOOL_RESULT_PAYLOAD,
                [
                    ProbeKind.INSPECT_VCS_STATE,
                    ProbeKind.VERIFY_ARTIFACT_HASH,
                    ProbeKind.HUMAN_REVIEW,
                ],
            ),
        ],
    )
    def test_automatable_classes_have_automated_probes(
        self, cls: SignalClass, kinds: list[ProbeKind]
    ) -> None:
        """The three automatable classes each have their own probes plus HUMAN_REVIEW."""
        assert [p.kind for p in probes_for_class(cls)] == kinds


class TestProbesForGap:
    @pytest.mark.parametrize("kind", [k for k in GapKind if k is not GapKind.UNSPECIFIED])
    def test_every_gap_kind_has_human_review(self, kind: GapKind) -> None:
        """Every gap kind, for any class, can be answered by HUMAN_REVIEW."""
        pairs = probes_for_gap(kind, SignalClass.RAW_REASONING)
        assert ProbeKind.HUMAN_REVIEW in [p.kind for p, _ in pairs]

    def test_signal_gaps_aim_at_their_class(self) -> None:
        """A signal gap's candidates observe the gap's class."""
        pairs = probes_for_gap(GapKind.MISSING_SIGNAL, SignalClass.PROCESS_RESULT)
        assert {cls for _, cls in pairs} == {SignalClass.PROCESS_RESULT}

    def test_resolution_gaps_aim_at_each_probes_primary_class(self) -> None:
        """Resolution gaps name no class: each probe observes its own, a person judges."""
        pairs = dict((p.kind, cls) for p, cls in probes_for_gap(GapKind.UNRESOLVED_CONFLICT))
        assert pairs[ProbeKind.RERUN_TEST] is SignalClass.PROCESS_RESULT
        assert pairs[ProbeKind.HUMAN_REVIEW] is SignalClass.HUMAN_JUDGEMENT


class TestActionRisk:
    @pytest.mark.parametrize(
        ("effects", "risk"),
        [
            ((), ActionRisk.NONE),
            ((SideEffect.FILESYSTEM_READ, SideEffect.VCS_READ), ActionRisk.READ_ONLY),
            ((SideEffect.FILESYSTEM_READ, SideEffect.PROCESS_SPAWN), ActionRisk.LOCAL_EFFECTS),
            ((SideEffect.FILESYSTEM_WRITE_WORKTREE,), ActionRisk.LOCAL_EFFECTS),
            ((SideEffect.PROCESS_SPAWN, SideEffect.NETWORK_CALL), ActionRisk.EXTERNAL_EFFECTS),
            ((SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE,), ActionRisk.EXTERNAL_EFFECTS),
        ],
    )
    def test_worst_side_effect_decides(
        self, effects: tuple[SideEffect, ...], risk: ActionRisk
    ) -> None:
        """The action risk is the worst of the probe's side effects."""
        assert action_risk(probe(side_effects=effects)) is risk
