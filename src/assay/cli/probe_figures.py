"""``assay probes`` beside what was measured: observed latency and success, and the judgement.

When the planner reads the executor's observations file, each probe of ``ListProbes``
carries its observed figures and, per predicted discrimination, how often an acquisition
changed the decision. ``observed_table`` prints each kind's declared latency band beside
the observed one (median, 90th percentile, the band that holds it, success rate) and
flags a band that disagrees; ``judgement_table`` prints predicted discrimination against
the observed rate of decision change, per kind and over every kind. A figure drawn from
fewer acquisitions than the planner's minimum reads "insufficient", never a number.
``candidate_latency`` is a plan's latency cell (``assay plan -o wide``): the declared band,
and the observed one the ranking used instead, flagged when they disagree.
"""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import duration_pb2
from rich import box
from rich.table import Table

from assay.v1 import plan_pb2

LATENCY_PREFIX = "LATENCY_BAND_"


def _name(enum: object, number: int, prefix: str) -> str:
    return str(enum.Name(number)).removeprefix(prefix).lower()  # type: ignore[attr-defined]


def seconds(duration: duration_pb2.Duration) -> str:
    value = duration.ToNanoseconds() / 1e9
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def candidate_latency(candidate: plan_pb2.AcquisitionCandidate) -> str:
    """A plan's latency cell: the declared band, and the observed one the ranking used
    instead once the probe kind is measured (``≠`` when a band or more apart)."""
    declared = _name(plan_pb2.LatencyBand, candidate.latency, LATENCY_PREFIX)
    if candidate.measurement_basis != plan_pb2.MEASUREMENT_BASIS_OBSERVED:
        return declared
    observed = _name(plan_pb2.LatencyBand, candidate.observed_latency, LATENCY_PREFIX)
    flag = " ≠ declared" if candidate.latency_disagrees else ""
    return f"{declared}, observed {observed}{flag}"


def _table(title: str, caption: str) -> Table:
    """Horizontal rules only, so an 80-column terminal holds every column."""
    return Table(
        title=title,
        title_justify="left",
        caption=caption,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )


def observed_table(probes: Sequence[plan_pb2.ProbeSpec]) -> Table | None:
    """Declared beside observed, one row per kind; None without an observations file."""
    if not any(p.HasField("observed_cost") for p in probes):
        return None
    minimum = max(p.observed_cost.minimum_acquisitions for p in probes)
    table = _table(
        "latency declared and observed (the executor's recorded acquisitions)",
        f"count: completed acquisitions; figures from {minimum} on; "
        "≠: a band or more from the declared one",
    )
    for column in ("probe", "declared", "count", "median", "p90", "observed", "success"):
        table.add_column(column)
    for p in probes:
        cost = p.observed_cost
        row = [_name(plan_pb2.ProbeKind, p.kind, "PROBE_KIND_")]
        row.append(_name(plan_pb2.LatencyBand, cost.declared_latency, LATENCY_PREFIX))
        row.append(f"{cost.acquisitions}")
        if not cost.measured:
            row += ["insufficient", "-", "-", "-"]
        else:
            band = _name(plan_pb2.LatencyBand, cost.observed_latency, LATENCY_PREFIX)
            if cost.latency_disagrees:
                band += "≠"
            row += [
                seconds(cost.median_latency),
                seconds(cost.p90_latency),
                band,
                f"{cost.success_rate:.0%}",
            ]
        table.add_row(*row)
    return table


def _rate(acquisitions: int, changes: int, minimum: int) -> str:
    if acquisitions < minimum:
        return "insufficient"
    return f"{changes / acquisitions:.0%}"


def judgement_table(probes: Sequence[plan_pb2.ProbeSpec]) -> Table | None:
    """Predicted discrimination against the observed rate of decision change; None
    without an observations file."""
    if not any(p.discrimination_checks for p in probes):
        return None
    minimum = max(c.minimum_acquisitions for p in probes for c in p.discrimination_checks)
    table = _table(
        "the planner's judgement: predicted discrimination, observed decision changes",
        f"count: acquisitions that yielded a claim; changed: the status or leader after it "
        f"differed; a rate from {minimum} on",
    )
    for column in ("probe", "predicted", "count", "changed", "rate"):
        table.add_column(column)
    totals: dict[int, list[int]] = {}
    for p in probes:
        for check in p.discrimination_checks:
            total = totals.setdefault(check.predicted, [0, 0])
            total[0] += check.acquisitions
            total[1] += check.decision_changes
            if not check.acquisitions:
                continue
            rate = (
                f"{check.decision_change_rate:.0%}"
                if check.HasField("decision_change_rate")
                else "insufficient"
            )
            table.add_row(
                _name(plan_pb2.ProbeKind, p.kind, "PROBE_KIND_"),
                _name(plan_pb2.Discrimination, check.predicted, "DISCRIMINATION_"),
                f"{check.acquisitions}",
                f"{check.decision_changes}",
                rate,
            )
    for predicted, (acquisitions, changes) in sorted(totals.items()):
        table.add_row(
            "all probes",
            _name(plan_pb2.Discrimination, predicted, "DISCRIMINATION_"),
            f"{acquisitions}",
            f"{changes}",
            _rate(acquisitions, changes, minimum),
        )
    return table
