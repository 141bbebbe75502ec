"""The outcome rule and how comparing two resolutions gives a discrimination."""

from __future__ import annotations

import dataclasses

import pytest

from assay.services.planner.discrimination import (
    FIRST_OBSERVATION_VALUE,
    OUTCOME_GROUP_PREFIX,
    discrimination_of,
    outcome_for,
    support_band,
)
from assay.services.planner.model import (
    Discrimination,
    DiscriminationBasis,
    OutcomeAssumption,
    ProbeKind,
    RationaleFlag,
    ResolutionStatus,
    SupportBand,
)
from assay.services.planner.probes import CATALOGUE
from tests.unit.planner.planner_factories import (
    conflicted,
    counted,
    insufficient,
    key,
    resolved,
    view,
)

RERUN = CATALOGUE[ProbeKind.RERUN_TEST]


class TestOutcomeRule:
    def test_runner_up_when_there_is_a_competitor(self) -> None:
        """With a competing value, the outcome asserts the runner-up."""
        outcome = outcome_for(RERUN, conflicted())
        assert (outcome.assumption, outcome.value, outcome.source) == (
            OutcomeAssumption.RUNNER_UP,
            "none",
            "test_result",
        )

    def test_corroborates_a_lone_leader(self) -> None:
        """With a single value, the outcome corroborates the leader."""
        outcome = outcome_for(RERUN, resolved(value={"a": 1}))
        assert (outcome.assumption, outcome.value_key) == (
            OutcomeAssumption.CORROBORATE_LEADER,
            key({"a": 1}),
        )

    def test_placeholder_when_nothing_is_known(self) -> None:
        """With no value at all, the outcome is a first observation placeholder."""
        outcome = outcome_for(RERUN, insufficient())
        assert (outcome.assumption, outcome.value) == (
            OutcomeAssumption.FIRST_OBSERVATION,
            FIRST_OBSERVATION_VALUE,
        )

    def test_fresh_declared_group_for_a_new_source(self) -> None:
        """A source never counted gets its own declared group."""
        outcome = outcome_for(RERUN, resolved(claims=(counted("api_spec", "g1"),)))
        assert (outcome.correlation_group, outcome.declared) == (
            OUTCOME_GROUP_PREFIX + "rerun_test",
            True,
        )

    def test_joins_the_counted_group_of_its_source(self) -> None:
        """Correlated evidence does not compound in the hypothesis either."""
        outcome = outcome_for(RERUN, resolved(claims=(counted("test_result"),)))
        assert (outcome.correlation_group, outcome.declared) == ("test_result|ref", False)


class TestSupportBand:
    @pytest.mark.parametrize(
        ("support", "band"),
        [
            (None, SupportBand.NONE),
            (0.0, SupportBand.WEAK),
            (0.4999, SupportBand.WEAK),
            (0.5, SupportBand.MODERATE),
            (0.7999, SupportBand.MODERATE),
            (0.8, SupportBand.STRONG),
            (1.0, SupportBand.STRONG),
        ],
    )
    def test_thresholds(self, support: float | None, band: SupportBand) -> None:
        """Bands: WEAK < 0.5 <= MODERATE < 0.8 <= STRONG; no value is NONE."""
        assert support_band(support) is band


class TestDiscriminationOf:
    def test_leader_change_is_high(self) -> None:
        """A different leader under the hypothesis: HIGH, LEADER_CHANGED."""
        base = conflicted()
        outcome = outcome_for(RERUN, base)
        hyp = dataclasses.replace(base, leader_key=key("none"))
        assert discrimination_of(base, hyp, outcome) == (
            Discrimination.HIGH,
            DiscriminationBasis.LEADER_CHANGED,
        )

    def test_status_change_is_high(self) -> None:
        """Same leader, different status: HIGH, STATUS_CHANGED."""
        base = conflicted()
        outcome = outcome_for(RERUN, base)
        hyp = dataclasses.replace(base, status=ResolutionStatus.RESOLVED)
        assert discrimination_of(base, hyp, outcome)[1] is DiscriminationBasis.STATUS_CHANGED

    def test_band_move_of_the_asserted_value_is_medium(self) -> None:
        """Only the asserted value's band moves: MEDIUM, SUPPORT_BAND_CHANGED."""
        base = conflicted(leader=("key", 0.95, ()), runner_up=("none", 0.3, ()))
        outcome = outcome_for(RERUN, base)
        hyp = dataclasses.replace(base, values=(base.values[0], view("none", 0.6)))
        assert discrimination_of(base, hyp, outcome) == (
            Discrimination.MEDIUM,
            DiscriminationBasis.SUPPORT_BAND_CHANGED,
        )

    def test_cleared_flag_is_medium(self) -> None:
        """A cleared rationale flag alone: MEDIUM, RATIONALE_FLAG_CLEARED."""
        base = resolved(flags=[RationaleFlag.SINGLE_SOURCE_CORROBORATION])
        outcome = outcome_for(RERUN, base)
        hyp = dataclasses.replace(base, flags=frozenset())
        assert discrimination_of(base, hyp, outcome) == (
            Discrimination.MEDIUM,
            DiscriminationBasis.RATIONALE_FLAG_CLEARED,
        )

    def test_nothing_changed_is_low(self) -> None:
        """An identical resolution: LOW, NO_CHANGE."""
        base = resolved()
        assert discrimination_of(base, base, outcome_for(RERUN, base)) == (
            Discrimination.LOW,
            DiscriminationBasis.NO_CHANGE,
        )
