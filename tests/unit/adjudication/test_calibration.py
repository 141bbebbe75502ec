"""Reliability calibration: the Beta posterior, the weighting, and the honesty rules."""

from __future__ import annotations

import math

import pytest
from scipy import stats  # type: ignore[import-untyped]

from assay.errors import InvalidArgument, Reason
from assay.services.adjudication.domain.calibration import (
    CalibrationOptions,
    CalibrationReport,
    LabelOrigin,
    Observation,
    SourceCalibration,
    calibrate,
)
from assay.services.adjudication.domain.calibration_figures import FigureStatus
from assay.services.adjudication.domain.model import Provenance

HUMAN = Provenance.HUMAN_ADJUDICATED
SYNTHETIC = Provenance.SYNTHETIC_MECHANISM_TEST
SPOT = LabelOrigin.SPOT_CHECK
CONFLICT = LabelOrigin.CONFLICT
TABLE = {"api_spec": 0.8, "documentation": 0.6, "human_review": 1.0}


def trials(
    source: str,
    matched: int,
    missed: int,
    *,
    origin: LabelOrigin = SPOT,
    rate: float = 1.0,
    provenance: Provenance = HUMAN,
    prefix: str = "",
) -> list[Observation]:
    """``matched + missed`` claims of ``source``, each on its own label."""
    tag = prefix or f"{source}/{origin.value}/{rate}/{provenance.value}"
    return [
        Observation(f"{tag}/{i}", source, i < matched, provenance, origin, rate)
        for i in range(matched + missed)
    ]


def of(report: CalibrationReport, source: str) -> SourceCalibration:
    return next(s for s in report.sources if s.source == source)


class TestPosterior:
    @pytest.mark.parametrize(("matched", "missed"), [(10, 0), (7, 3), (0, 12), (140, 60)])
    def test_matches_the_closed_form(self, matched: int, missed: int) -> None:
        """k matches in n claims give Beta(1 + k, 1 + n - k): mean and 95% bounds as SciPy's."""
        figure = of(calibrate(trials("api_spec", matched, missed), TABLE), "api_spec").spot_check
        posterior = stats.beta(1 + matched, 1 + missed)
        assert figure.status is FigureStatus.ESTIMATED
        assert figure.count == figure.labels == matched + missed
        assert figure.estimate == matched / (matched + missed)
        assert figure.posterior_mean == pytest.approx(posterior.mean(), abs=1e-12)
        assert figure.low == pytest.approx(posterior.ppf(0.025), abs=1e-9)
        assert figure.high == pytest.approx(posterior.ppf(0.975), abs=1e-9)

    def test_equal_sampling_rates_change_nothing(self) -> None:
        """Spot-checks all sampled at 10% give the same figure as a census."""
        census = of(calibrate(trials("api_spec", 30, 10), TABLE), "api_spec").spot_check
        sampled = of(calibrate(trials("api_spec", 30, 10, rate=0.1), TABLE), "api_spec")
        assert sampled.spot_check == census

    def test_unequal_rates_weight_by_inverse_probability(self) -> None:
        """Two strata: the estimate is the Hájek share, the count Kish's effective size."""
        easy = trials("api_spec", 20, 0, rate=0.1)  # each stands for 10 semantics
        hard = trials("api_spec", 10, 10, rate=0.5)  # each stands for 2
        figure = of(calibrate(easy + hard, TABLE), "api_spec").spot_check
        weights = [10.0] * 20 + [2.0] * 20
        matches = [1] * 20 + [1] * 10 + [0] * 10
        share = sum(w * m for w, m in zip(weights, matches, strict=True)) / sum(weights)
        n_eff = sum(weights) ** 2 / sum(w * w for w in weights)
        posterior = stats.beta(1 + n_eff * share, 1 + n_eff * (1 - share))
        assert figure.count == 40
        assert figure.estimate == pytest.approx(220 / 240)
        assert figure.effective_count == pytest.approx(n_eff)
        assert figure.posterior_mean == pytest.approx(posterior.mean())
        assert figure.low == pytest.approx(posterior.ppf(0.025))

    def test_heavy_weights_on_mixed_outcomes_count_for_less_than_kish_says(self) -> None:
        """When the rarely sampled trials are the uncertain ones, the linearised variance's
        effective size, smaller than Kish's, is the one used."""
        mixed = trials("api_spec", 5, 5, rate=0.1)  # weight 10, half right
        sure = trials("api_spec", 30, 0, rate=1.0)  # weight 1, all right
        figure = of(calibrate(mixed + sure, TABLE), "api_spec").spot_check
        weights = [10.0] * 10 + [1.0] * 30
        matches = [1] * 5 + [0] * 5 + [1] * 30
        total = sum(weights)
        share = sum(w * m for w, m in zip(weights, matches, strict=True)) / total
        kish = total**2 / sum(w * w for w in weights)
        variance = sum(w * w * (m - share) ** 2 for w, m in zip(weights, matches, strict=True))
        linearised = share * (1 - share) / (variance / total**2)
        assert linearised < kish
        assert figure.effective_count == pytest.approx(linearised)
        assert figure.high == pytest.approx(
            stats.beta(1 + linearised * share, 1 + linearised * (1 - share)).ppf(0.975)
        )

    def test_the_order_of_observations_does_not_matter(self) -> None:
        """Every figure is the same, to the last bit, whatever order the claims come in."""
        seen = trials("api_spec", 13, 4, rate=0.3) + trials("api_spec", 9, 9, rate=0.07)
        seen += trials("api_spec", 5, 6, rate=0.9)
        assert calibrate(seen, TABLE) == calibrate(list(reversed(seen)), TABLE)

    def test_declared_outside_the_interval_is_flagged(self) -> None:
        """A source declared 0.8 that is right half the time is flagged; one right 80% is not."""
        half = of(calibrate(trials("api_spec", 50, 50), TABLE), "api_spec").spot_check
        right = of(calibrate(trials("api_spec", 80, 20), TABLE), "api_spec").spot_check
        assert half.declared_outside is True
        assert right.declared_outside is False


class TestHonesty:
    @pytest.mark.parametrize(("count", "status"), [(0, "INSUFFICIENT"), (9, "INSUFFICIENT"),
                                                   (10, "ESTIMATED")])  # fmt: skip
    def test_below_the_minimum_there_is_no_number(self, count: int, status: str) -> None:
        """Fewer claims than the minimum read INSUFFICIENT with counts only."""
        figure = of(calibrate(trials("api_spec", count, 0), TABLE), "api_spec").spot_check
        assert figure.status is FigureStatus(status)
        assert figure.count == count
        if figure.status is FigureStatus.INSUFFICIENT:
            numbers = (figure.estimate, figure.posterior_mean, figure.low, figure.high)
            assert numbers == (None, None, None, None)
            assert figure.declared_outside is None

    def test_the_minimum_is_of_effective_trials(self) -> None:
        """Twelve claims whose weights make them worth fewer than ten are INSUFFICIENT."""
        seen = trials("api_spec", 2, 0, rate=0.01) + trials("api_spec", 10, 0, rate=1.0)
        figure = of(calibrate(seen, TABLE), "api_spec").spot_check
        assert figure.count == 12
        assert figure.effective_count < 10
        assert figure.status is FigureStatus.INSUFFICIENT

    def test_a_higher_minimum_is_honoured(self) -> None:
        """The caller may demand more than the default."""
        report = calibrate(trials("api_spec", 20, 5), TABLE, CalibrationOptions(min_count=30))
        assert of(report, "api_spec").spot_check.status is FigureStatus.INSUFFICIENT

    def test_every_declared_kind_is_reported(self) -> None:
        """Kinds without any observation are listed, INSUFFICIENT with a count of 0."""
        report = calibrate(trials("api_spec", 10, 0), TABLE)
        assert [s.source for s in report.sources] == sorted(TABLE)
        assert of(report, "documentation").spot_check.count == 0
        assert of(report, "documentation").declared == 0.6

    def test_synthetic_labels_are_left_out_by_default(self) -> None:
        """Synthetic labels count for nothing unless asked for, and are counted as left out."""
        seen = trials("api_spec", 10, 0) + trials("api_spec", 0, 10, provenance=SYNTHETIC)
        report = calibrate(seen, TABLE)
        figure = of(report, "api_spec").spot_check
        assert (figure.count, figure.estimate, figure.synthetic) == (10, 1.0, False)
        assert report.synthetic_labels_left_out == 10
        assert report.synthetic is False

    def test_synthetic_labels_asked_for_mark_every_figure(self) -> None:
        """Once a synthetic label is used, every figure of the report says so."""
        seen = trials("api_spec", 10, 0) + trials("documentation", 0, 10, provenance=SYNTHETIC)
        report = calibrate(seen, TABLE, CalibrationOptions(include_synthetic=True))
        assert report.synthetic is True
        assert of(report, "documentation").spot_check.estimate == 0.0
        assert all(s.spot_check.synthetic and s.conflict_only.synthetic for s in report.sources)

    def test_asking_for_synthetic_labels_when_there_are_none_marks_nothing(self) -> None:
        """The mark says what was used, not what was allowed."""
        report = calibrate(trials("api_spec", 10, 0), TABLE, CalibrationOptions(True))
        assert report.synthetic is False
        assert not of(report, "api_spec").spot_check.synthetic

    def test_conflicts_are_reported_apart_from_spot_checks(self) -> None:
        """The conflict-only figure is unweighted and separate; the label shares are given."""
        seen = trials("api_spec", 40, 10, rate=0.25) + trials("api_spec", 5, 15, origin=CONFLICT)
        report = calibrate(seen, TABLE)
        found = of(report, "api_spec")
        assert found.spot_check.estimate == 0.8
        assert found.conflict_only.estimate == 0.25
        assert found.conflict_only.effective_count == 20
        assert (report.spot_check_labels, report.conflict_labels) == (50, 20)
        assert report.conflict_share == pytest.approx(20 / 70)

    def test_claims_of_one_label_count_it_once(self) -> None:
        """Three claims on one gold label are three trials and one label used."""
        seen = [Observation("case-1", "api_spec", True, HUMAN, SPOT, 0.5) for _ in range(3)]
        report = calibrate(seen, TABLE)
        assert (of(report, "api_spec").spot_check.count, report.spot_check_labels) == (3, 1)
        assert of(report, "api_spec").spot_check.labels == 1

    def test_no_labels_no_share(self) -> None:
        """Without labels the conflict share is absent, not 0."""
        assert calibrate([], TABLE).conflict_share is None


class TestBadInput:
    def test_an_unknown_source_kind_is_named(self) -> None:
        """A kind missing from the declared table is UNKNOWN_SOURCE, the known kinds attached."""
        seen = [*trials("api_spec", 1, 0), Observation("x", "oracle", True, HUMAN, SPOT)]
        with pytest.raises(InvalidArgument) as caught:
            calibrate(seen, TABLE)
        assert caught.value.reason is Reason.UNKNOWN_SOURCE
        assert [v.field for v in caught.value.violations] == ["observations[1].source"]
        assert caught.value.metadata["known_sources"] == "api_spec,documentation,human_review"

    @pytest.mark.parametrize("rate", [0.0, -0.5, 1.5, math.nan, math.inf])
    def test_a_sampling_rate_outside_zero_to_one_is_named(self, rate: float) -> None:
        """A probability of being sampled must be in (0, 1]."""
        with pytest.raises(InvalidArgument) as caught:
            calibrate([Observation("x", "api_spec", True, HUMAN, SPOT, rate)], TABLE)
        assert [v.field for v in caught.value.violations] == ["observations[0].sampling_rate"]

    def test_every_problem_is_named_at_once(self) -> None:
        """A missing label id, a label with two origins and an unknown kind, in one error."""
        seen = [
            Observation("", "api_spec", True, HUMAN, SPOT),
            Observation("a", "api_spec", True, HUMAN, SPOT, 0.5),
            Observation("a", "api_spec", True, HUMAN, CONFLICT, 0.5),
            Observation("b", "nope", True, HUMAN, SPOT),
        ]
        with pytest.raises(InvalidArgument) as caught:
            calibrate(seen, TABLE)
        fields = [v.field for v in caught.value.violations]
        assert fields == ["observations[0].label_id", "observations[2]", "observations[3].source"]

    def test_a_label_with_two_provenances_is_named(self) -> None:
        """A label is human or synthetic as a whole, never a mixture."""
        seen = [
            Observation("a", "api_spec", True, HUMAN, SPOT),
            Observation("a", "documentation", True, SYNTHETIC, SPOT),
        ]
        with pytest.raises(InvalidArgument) as caught:
            calibrate(seen, TABLE, CalibrationOptions(include_synthetic=True))
        assert [v.field for v in caught.value.violations] == ["observations[1]"]

    @pytest.mark.parametrize(
        "table", [{"api_spec": 1.2}, {"api_spec": -0.1}, {}, {"api_spec": math.nan}]
    )
    def test_a_declared_table_the_resolver_refuses_is_refused(
        self, table: dict[str, float]
    ) -> None:
        """The declared table must be one ``--reliability-table`` would load."""
        with pytest.raises(InvalidArgument) as caught:
            calibrate([], table)
        assert [v.field for v in caught.value.violations] == ["declared"]

    def test_a_minimum_below_one_is_refused(self) -> None:
        with pytest.raises(InvalidArgument, match="min_count"):
            calibrate([], TABLE, CalibrationOptions(min_count=0))
