"""Observed figures per probe kind, the disagreement flag, the judgement rows, and how the
ranking uses them once a kind is measured."""

from __future__ import annotations

import dataclasses

import pytest

from assay.services.planner.domain.measured import (
    MINIMUM_ACQUISITIONS,
    MeasuredCost,
    Observation,
    band_of,
    measure,
    median,
    nearest_rank,
)
from assay.services.planner.domain.model import (
    Discrimination,
    LatencyBand,
    MeasurementBasis,
    ProbeKind,
)
from assay.services.planner.domain.ranking import cost_points, rank, value_points
from tests.unit.planner.planner_factories import candidate, probe

HASH = ProbeKind.VERIFY_ARTIFACT_HASH
DECLARED = {HASH: LatencyBand.SECONDS, ProbeKind.RERUN_TEST: LatencyBand.MINUTES}


def seen(
    latency: float,
    succeeded: bool = True,
    completed: bool = True,
    predicted: Discrimination = Discrimination.HIGH,
    changed: bool | None = True,
    kind: ProbeKind = HASH,
) -> Observation:
    return Observation(kind, completed, succeeded, latency, predicted, changed)


class TestFigures:
    @pytest.mark.parametrize(
        ("seconds", "band"),
        [
            (0.0, LatencyBand.SECONDS),
            (59.999, LatencyBand.SECONDS),
            (60.0, LatencyBand.MINUTES),
            (3599.0, LatencyBand.MINUTES),
            (3600.0, LatencyBand.HOURS),
            (86400.0 * 3, LatencyBand.HOURS),
        ],
    )
    def test_bands_end_where_the_executors_check_ends_them(
        self, seconds: float, band: LatencyBand
    ) -> None:
        """A band is an upper bound: SECONDS under a minute, MINUTES under an hour."""
        assert band_of(seconds) is band

    def test_percentiles_by_nearest_rank_and_the_median(self) -> None:
        """p90 of 1..10 is 9 (nearest rank), of 1..20 is 18; medians average the middle two."""
        assert nearest_rank([float(i) for i in range(1, 11)], 0.9) == 9.0
        assert nearest_rank([float(i) for i in range(1, 21)], 0.9) == 18.0
        assert nearest_rank([5.0], 0.9) == 5.0
        assert median([1.0, 2.0, 3.0, 10.0]) == 2.5
        assert median([1.0, 2.0, 30.0]) == 2.0

    def test_below_the_minimum_a_kind_keeps_its_declared_band(self) -> None:
        """One short of the minimum: counted, not measured, no band, no flag."""
        cost = measure([seen(120.0)] * (MINIMUM_ACQUISITIONS - 1), DECLARED).costs[HASH]
        assert cost.acquisitions == MINIMUM_ACQUISITIONS - 1
        assert not cost.measured
        assert cost.observed_band is LatencyBand.UNSPECIFIED
        assert cost.latency is LatencyBand.SECONDS
        assert cost.basis is MeasurementBasis.DECLARED
        assert not cost.disagrees
        assert cost.success_share == 1.0

    def test_at_the_minimum_the_observed_band_and_success_rate_count(self) -> None:
        """Twenty acquisitions, the slowest two over a minute: p90 (the 18th) is the last
        under a minute, so SECONDS agrees; one more slow one moves p90 into MINUTES."""
        fast = [seen(1.0 + i, succeeded=i % 4 != 0) for i in range(18)]
        slow = [seen(600.0)] * 2
        cost = measure(fast + slow, DECLARED).costs[HASH]
        assert cost.measured
        assert cost.basis is MeasurementBasis.OBSERVED
        assert cost.p90_seconds == 18.0
        assert cost.observed_band is LatencyBand.SECONDS
        assert not cost.disagrees
        assert cost.success_rate == pytest.approx(15 / 20)
        slower = measure(fast[1:] + slow + [seen(600.0)], DECLARED).costs[HASH]
        assert slower.observed_band is LatencyBand.MINUTES
        assert slower.disagrees
        assert slower.latency is LatencyBand.MINUTES

    def test_pending_acquisitions_are_not_counted(self) -> None:
        """A case waiting for reviewers took no measurable time yet: not an acquisition."""
        observations = [seen(0.01, completed=False, succeeded=False)] * 30
        cost = measure(observations, DECLARED).costs[HASH]
        assert cost.acquisitions == 0
        assert cost == MeasuredCost(LatencyBand.SECONDS)

    def test_a_kind_outside_the_catalogue_is_ignored(self) -> None:
        """Only the declared kinds get figures."""
        figures = measure([seen(1.0, kind=ProbeKind.QUERY_CI_STATUS)], DECLARED)
        assert set(figures.costs) == set(DECLARED)
        assert figures.costs[HASH].acquisitions == 0


class TestJudgement:
    def test_rows_count_acquisitions_that_observed_and_their_changes(self) -> None:
        """Per predicted band: only acquisitions that yielded a claim with a known before and
        after; a rate only at the minimum."""
        high = [seen(1.0, changed=i < 5) for i in range(MINIMUM_ACQUISITIONS)]
        low = [seen(1.0, predicted=Discrimination.LOW, changed=False)] * 3
        failed = [seen(1.0, succeeded=False, changed=False)] * 4
        unknown = [seen(1.0, changed=None)] * 4
        checks = measure(high + low + failed + unknown, DECLARED).checks[HASH]
        by_band = {c.predicted: c for c in checks}
        assert [c.predicted for c in checks] == [
            Discrimination.HIGH,
            Discrimination.MEDIUM,
            Discrimination.LOW,
        ]
        assert (
            by_band[Discrimination.HIGH].acquisitions,
            by_band[Discrimination.HIGH].changes,
        ) == (
            MINIMUM_ACQUISITIONS,
            5,
        )
        assert by_band[Discrimination.HIGH].rate == pytest.approx(5 / MINIMUM_ACQUISITIONS)
        assert by_band[Discrimination.LOW].acquisitions == 3
        assert by_band[Discrimination.LOW].rate is None  # insufficient
        assert by_band[Discrimination.MEDIUM].acquisitions == 0


class TestRankingWithMeasurements:
    def measured(self, latency: float, success: float) -> MeasuredCost:
        return MeasuredCost(
            LatencyBand.SECONDS, MINIMUM_ACQUISITIONS, latency, latency, success_rate=success
        )

    def test_unmeasured_figures_change_nothing(self) -> None:
        """Below the minimum the candidate's value and cost are the declared ones."""
        plain = candidate(probe(), evsi=0.4)
        few = dataclasses.replace(plain, measured=MeasuredCost(LatencyBand.SECONDS, 3, 900.0))
        assert (value_points(few), cost_points(few)) == (value_points(plain), cost_points(plain))

    def test_an_observed_slow_band_costs_more_and_failures_lower_the_value(self) -> None:
        """Measured at p90 over a minute: the MINUTES penalty; half failing: half the value."""
        plain = candidate(probe(), evsi=0.4)
        slow = dataclasses.replace(plain, measured=self.measured(900.0, 0.5))
        assert cost_points(slow) > cost_points(plain)
        assert value_points(slow) == round(value_points(plain) / 2)

    def test_a_probe_that_always_fails_falls_below_one_that_works(self) -> None:
        """Two equal candidates: the one whose acquisitions never yield a claim ranks last."""
        works = candidate(probe(ProbeKind.INSPECT_VCS_STATE), evsi=0.5)
        fails = dataclasses.replace(
            candidate(probe(ProbeKind.RERUN_TEST), evsi=0.5), measured=self.measured(1.0, 0.0)
        )
        assert rank([fails, works]) == [works, fails]
        assert rank([dataclasses.replace(fails, measured=None), works])[0].probe.kind is (
            ProbeKind.RERUN_TEST
        )
