"""``assay probes``' observed and judgement tables and ``assay plan -o wide``'s latency cell,
from hand-built messages: a figure below the minimum reads "insufficient", never a number."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from assay.cli import probe_figures
from assay.v1 import plan_pb2

P = plan_pb2


def text(table: Table | None) -> str:
    assert table is not None
    out = Console(file=io.StringIO(), width=120, color_system=None)
    out.print(table)
    assert isinstance(out.file, io.StringIO)
    return out.file.getvalue()


def row(rendered: str, *starts: str) -> list[str]:
    (line,) = [x for x in rendered.splitlines() if x.split()[: len(starts)] == list(starts)]
    return line.split()


def spec(
    kind: plan_pb2.ProbeKind.ValueType, acquisitions: int, measured: bool = False
) -> plan_pb2.ProbeSpec:
    probe = P.ProbeSpec(kind=kind)
    cost = probe.observed_cost
    cost.acquisitions, cost.minimum_acquisitions = acquisitions, 20
    cost.declared_latency = P.LATENCY_BAND_SECONDS
    if measured:
        cost.measured = True
        cost.median_latency.FromMilliseconds(350)
        cost.p90_latency.FromSeconds(95)
        cost.success_rate = 0.5
        cost.observed_latency = P.LATENCY_BAND_MINUTES
        cost.latency_disagrees = True
    return probe


class TestObservedTable:
    def test_declared_beside_observed_and_insufficient_below_the_minimum(self) -> None:
        """A measured kind shows its figures and the ≠ flag; an unmeasured one no figure."""
        rendered = text(
            probe_figures.observed_table(
                [
                    spec(P.PROBE_KIND_RERUN_TEST, 3),
                    spec(P.PROBE_KIND_VERIFY_ARTIFACT_HASH, 25, True),
                ]
            )
        )
        assert row(rendered, "rerun_test") == [
            "rerun_test",
            "seconds",
            "3",
            "insufficient",
            "-",
            "-",
            "-",
        ]
        assert row(rendered, "verify_artifact_hash") == [
            "verify_artifact_hash", "seconds", "25", "350", "ms", "95.0", "s", "minutes≠", "50%",
        ]  # fmt: skip

    def test_nothing_without_an_observations_file(self) -> None:
        """No probe carries figures: no table (the catalogue is printed alone)."""
        assert probe_figures.observed_table([P.ProbeSpec(kind=P.PROBE_KIND_RERUN_TEST)]) is None
        assert probe_figures.judgement_table([P.ProbeSpec(kind=P.PROBE_KIND_RERUN_TEST)]) is None


class TestJudgementTable:
    def test_rates_only_from_the_minimum_per_kind_and_over_all(self) -> None:
        """A kind's row below 20 is insufficient even when the sum over kinds is not."""
        probes = []
        for kind, count, changes in (
            (P.PROBE_KIND_RERUN_TEST, 12, 3),
            (P.PROBE_KIND_INSPECT_VCS_STATE, 12, 9),
        ):
            probe = P.ProbeSpec(kind=kind)
            probe.discrimination_checks.add(
                predicted=P.DISCRIMINATION_HIGH,
                acquisitions=count,
                decision_changes=changes,
                minimum_acquisitions=20,
            )
            probes.append(probe)
        rendered = text(probe_figures.judgement_table(probes))
        assert row(rendered, "rerun_test") == ["rerun_test", "high", "12", "3", "insufficient"]
        assert row(rendered, "all", "probes") == ["all", "probes", "high", "24", "12", "50%"]


class TestPlanLatency:
    @pytest.mark.parametrize(
        ("basis", "observed", "disagrees", "shown"),
        [
            (P.MEASUREMENT_BASIS_UNSPECIFIED, 0, False, "seconds"),
            (P.MEASUREMENT_BASIS_DECLARED, 0, False, "seconds"),
            (
                P.MEASUREMENT_BASIS_OBSERVED,
                P.LATENCY_BAND_SECONDS,
                False,
                "seconds, observed seconds",
            ),
            (
                P.MEASUREMENT_BASIS_OBSERVED,
                P.LATENCY_BAND_HOURS,
                True,
                "seconds, observed hours ≠ declared",
            ),
        ],
    )
    def test_the_band_the_ranking_used_and_the_flag(
        self, basis: int, observed: int, disagrees: bool, shown: str
    ) -> None:
        """Declared alone until measured; then the observed band beside it, flagged apart."""
        candidate = P.AcquisitionCandidate(
            latency=P.LATENCY_BAND_SECONDS,
            measurement_basis=basis,  # type: ignore[arg-type]
            observed_latency=observed,  # type: ignore[arg-type]
            latency_disagrees=disagrees,
        )
        assert probe_figures.candidate_latency(candidate) == shown
