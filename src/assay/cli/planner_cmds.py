"""``assay plan`` and ``assay probes``: ask the Planner from the shell.

``plan`` sends a PlanEvidenceRequest written as proto JSON (the files in
``examples/plan/`` are such requests; grpcurl accepts the same file) and
prints the gaps, the ranked candidates with every dimension and the reason
behind their availability, and the list of what would help but cannot be
acquired here. The order of the candidates *is* the ranking: no score exists
on the wire, so none is printed. Calls go through ``assay.client.PlannerClient``.

The default table fits an 80-column terminal without breaking a word: each candidate's
rank, probe and signal, availability (with what to grant) and discrimination; ``-o wide``
adds what it would find, independence, recency, cost and latency, risk and privacy and the
gaps it addresses. Subjects, values and notes are shown through ``assay.safe_text``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from google.protobuf import json_format
from rich import box
from rich.table import Table

from assay.cli import probe_figures
from assay.cli.common import (
    CliError,
    Remote,
    add_json_argument,
    add_target_argument,
    console,
    emit,
    id_columns,
    is_wide,
    print_table,
    read_text,
)
from assay.client import PlannerClient
from assay.safe_text import markup as _m
from assay.v1 import plan_pb2, planner_service_pb2, resolution_pb2

DEFAULT_TARGET = "127.0.0.1:50052"


def register(subparsers: Any) -> None:
    plan = subparsers.add_parser(
        "plan", help="plan which evidence to acquire next for one subject and predicate"
    )
    plan.add_argument(
        "file",
        help="a PlanEvidenceRequest as JSON: subject, predicate, evidence, missingSignals, "
        "capabilities, policy (see examples/plan/; '-': stdin)",
    )
    add_target_argument(plan, "planner", DEFAULT_TARGET)
    add_json_argument(plan)
    plan.set_defaults(handler=_plan)

    probes = subparsers.add_parser("probes", help="list the planner's probe catalogue")
    probes.add_argument(
        "--judgement",
        action="store_true",
        help="print the planner's predicted discrimination against the observed rate of "
        "decision change, per probe kind (needs the planner's --observations)",
    )
    add_target_argument(probes, "planner", DEFAULT_TARGET)
    add_json_argument(probes)
    probes.set_defaults(handler=_probes)


def load_plan_request(path: str) -> planner_service_pb2.PlanEvidenceRequest:
    """Read a request file (``-``: standard input); every problem is one line naming it."""
    text = read_text(path, "the request")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: expected a JSON object (a PlanEvidenceRequest)")
    try:
        return json_format.ParseDict(data, planner_service_pb2.PlanEvidenceRequest())
    except json_format.ParseError as error:
        message = " ".join(str(error).split())
        raise CliError(f"{path}: not a PlanEvidenceRequest: {message}") from None


def _name(enum: Any, number: int, prefix: str) -> str:
    return str(enum.Name(number)).removeprefix(prefix).lower()


def _names(enum: Any, numbers: Any, prefix: str) -> str:
    return ", ".join(_name(enum, n, prefix) for n in numbers) or "-"


def _availability(c: plan_pb2.AcquisitionCandidate) -> str:
    """The availability and exactly why: missing grants, the blocked state, the forbidden effect."""
    text = _name(plan_pb2.Availability, c.availability, "AVAILABILITY_")
    reason = c.availability_reason
    if reason == plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED:
        grants = _names(plan_pb2.SideEffectClass, c.missing_grants, "SIDE_EFFECT_CLASS_")
        return f"{text}: grant {grants}"
    if reason == plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_FORBIDDEN:
        effects = _names(plan_pb2.SideEffectClass, c.forbidden_side_effects, "SIDE_EFFECT_CLASS_")
        return f"{text}: needs {effects}"
    if reason == plan_pb2.AVAILABILITY_REASON_SIGNAL_NOT_OBSERVABLE:
        state = _name(
            plan_pb2.SignalAvailability, c.target_signal_availability, "SIGNAL_AVAILABILITY_"
        )
        return f"{text}: signal {state}"
    if reason == plan_pb2.AVAILABILITY_REASON_ALL_REQUIREMENTS_MET:
        return text
    return f"{text}: {_name(plan_pb2.AvailabilityReason, reason, 'AVAILABILITY_REASON_')}"


# The columns every candidate table shows; ``-o wide`` shows ``_WIDE_COLUMNS`` after them.
_COLUMNS = ("probe → signal", "availability", "discrimination")
_WIDE_COLUMNS = (
    "if it finds",
    "independence",
    "recency",
    "cost / latency",
    "risk / privacy",
    "gaps",
)


def _compact_table(title: str, wide: bool) -> Table:
    """A boxed table for ``-o wide``; otherwise horizontal rules only, so that an
    80-column terminal holds the longest enum names of the narrow columns side by side."""
    if wide:
        return Table(title=title, title_justify="left")
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )


def _candidate_table(title: str, candidates: Any, ranked: bool) -> Table:
    """The candidates, one per row: ``_COLUMNS`` with horizontal rules only (an 80-column
    terminal holds the longest enum names side by side), or every column with ``-o wide``."""
    wide = is_wide()
    table = _compact_table(title, wide)
    columns = ["#"] if ranked else []
    columns += [*_COLUMNS, *(_WIDE_COLUMNS if wide else ())]
    for column in columns:
        table.add_column(column)
    for i, c in enumerate(candidates, start=1):
        discrimination = _name(plan_pb2.Discrimination, c.discrimination, "DISCRIMINATION_")
        basis = _name(plan_pb2.DiscriminationBasis, c.discrimination_basis, "DISCRIMINATION_BASIS_")
        row = [str(i)] if ranked else []
        row += [
            f"{_name(plan_pb2.ProbeKind, c.probe, 'PROBE_KIND_')} → "
            f"{_name(plan_pb2.SignalClass, c.target_signal_class, 'SIGNAL_CLASS_')}",
            _availability(c),
            f"{discrimination}: {basis}",
        ]
        if not wide:
            table.add_row(*row)
            continue
        row += [
            c.outcome_value_key,
            _name(plan_pb2.Independence, c.independence, "INDEPENDENCE_"),
            _name(plan_pb2.Recency, c.recency, "RECENCY_"),
            f"{_name(plan_pb2.CostBand, c.cost, 'COST_BAND_')} / "
            f"{probe_figures.candidate_latency(c)}",
            f"{_name(plan_pb2.ActionRisk, c.action_risk, 'ACTION_RISK_')} / "
            f"{_name(plan_pb2.PrivacyExposure, c.privacy, 'PRIVACY_EXPOSURE_')}",
            ", ".join(c.addresses_gap_ids),
        ]
        table.add_row(*row)
    return table


def print_plan(out: Any, plan: plan_pb2.EvidencePlan) -> None:
    status = _name(resolution_pb2.ResolutionStatus, plan.resolution_status, "RESOLUTION_STATUS_")
    band = _name(plan_pb2.SupportBand, plan.leader_support_band, "SUPPORT_BAND_")
    title = f"{_m(plan.subject)} · {_m(plan.predicate)}  {status}"
    if plan.leader_value_key:
        title += f"  leader {_m(plan.leader_value_key)} (support {band})"
    if plan.requires_review:
        title += "  [bold red]REQUIRES REVIEW[/]"
    out.print(title)
    outcome = _name(plan_pb2.PlanOutcome, plan.outcome, "PLAN_OUTCOME_")
    out.print(f"outcome: [bold]{outcome}[/]  (a recommendation: nothing here is executed)")
    if not plan.gaps:
        return
    gaps = Table(title="gaps", title_justify="left")
    for column in ("gap", "source", "signal availability", "notes"):
        gaps.add_column(column)
    id_columns(gaps, "gap")
    for g in plan.gaps:
        state = (
            _name(plan_pb2.SignalAvailability, g.signal_availability, "SIGNAL_AVAILABILITY_")
            if g.signal_availability
            else "-"
        )
        gaps.add_row(
            g.gap_id,
            _name(plan_pb2.GapSource, g.source, "GAP_SOURCE_"),
            state,
            "; ".join(g.notes) or "-",
        )
    print_table(gaps, out)
    print_table(_candidate_table("candidates, best first", plan.candidates, ranked=True), out)
    if plan.unavailable:
        print_table(
            _candidate_table(
                "unavailable here (would help, cannot be acquired)", plan.unavailable, False
            ),
            out,
        )
    if not is_wide():
        out.print(
            "[dim](-o wide: what each candidate would find, independence, recency, cost, "
            "risk and the gaps it addresses)[/]"
        )


def _plan(args: argparse.Namespace) -> int:
    request = load_plan_request(args.file)
    remote = Remote.of(args, "planner")
    with remote.client(PlannerClient) as client:
        response = remote.call(lambda: client.plan_evidence(request), context=args.file)
    return emit(args, response, lambda: print_plan(console(), response.plan))


def _probes(args: argparse.Namespace) -> int:
    remote = Remote.of(args, "planner")
    with remote.client(PlannerClient) as client:
        response = remote.call(lambda: client.list_probes())
    if args.judgement:
        return emit(args, response, lambda: _print_judgement(response), list(response.probes))
    return emit(args, response, lambda: _print_probes(response), list(response.probes))


def _print_judgement(response: planner_service_pb2.ListProbesResponse) -> None:
    table = probe_figures.judgement_table(response.probes)
    if table is None:
        console().print(
            "no observations: the planner reads none (assay serve planner --observations FILE, "
            "the file assay executor run --observations writes)"
        )
        return
    print_table(table)


_PROBE_COLUMNS = ("probe", "observes", "side effects")
_PROBE_WIDE_COLUMNS = ("source kind", "cost", "latency", "risk", "privacy", "network")


def _print_probes(response: planner_service_pb2.ListProbesResponse) -> None:
    """The catalogue: what each probe observes and the side effects it needs (80 columns);
    ``-o wide`` adds its source kind, cost, latency, risk, privacy and network needs."""
    wide = is_wide()
    table = _compact_table("probe catalogue", wide)
    for column in (*_PROBE_COLUMNS, *(_PROBE_WIDE_COLUMNS if wide else ())):
        table.add_column(column)
    for p in response.probes:
        network = [
            n for n, on in (("egress", p.needs_egress), ("cloud sync", p.needs_cloud_sync)) if on
        ]
        observes = (
            "any class"
            if len(p.target_signal_classes) > 3
            else _names(plan_pb2.SignalClass, p.target_signal_classes, "SIGNAL_CLASS_")
        )
        row = [
            _name(plan_pb2.ProbeKind, p.kind, "PROBE_KIND_"),
            observes,
            _names(plan_pb2.SideEffectClass, p.required_side_effects, "SIDE_EFFECT_CLASS_"),
        ]
        if wide:
            row += [
                p.expected_source_kind,
                _name(plan_pb2.CostBand, p.cost, "COST_BAND_"),
                _name(plan_pb2.LatencyBand, p.latency, "LATENCY_BAND_"),
                _name(plan_pb2.ActionRisk, p.action_risk, "ACTION_RISK_"),
                _name(plan_pb2.PrivacyExposure, p.privacy, "PRIVACY_EXPOSURE_"),
                ", ".join(network) or "-",
            ]
        table.add_row(*row)
    print_table(table)
    observed = probe_figures.observed_table(response.probes)
    if observed is not None:
        print_table(observed)
    if not wide:
        console().print("[dim](-o wide: source kind, cost, latency, risk, privacy, network)[/]")
