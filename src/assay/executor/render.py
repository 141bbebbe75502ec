"""How an executor run reads: one short line per step for people, a plain dict for ``--json``.

Both ``assay executor run`` and ``assay demo`` print through here, so the
newcomer's first look and the operator's daily tool describe a run the same
way. Approvals are always printed: an action taken on an operator's approval
must be visible in the output, not only in a log.

What a run shows of data (leaders, probe details, case ids, skip reasons) goes into the
markup through ``assay.safe_text.markup``: escaped and never read as markup. ``report_dict``
spells its keys in camelCase, as proto JSON and every other command's ``-o json`` do.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from google.protobuf import json_format
from rich.console import Console

from assay.executor.model import Acquisition, Outcome, RunReport, Step
from assay.safe_text import markup as escape

OUTCOME_STYLE = {
    Outcome.OBSERVED: "green",
    Outcome.GOLD_LABEL_RETURNED: "green",
    Outcome.CASE_ENQUEUED: "cyan",
    Outcome.AWAITING_REVIEW: "yellow",
    Outcome.NO_LABEL: "yellow",
    Outcome.SOURCE_NOT_ACCEPTED: "red",
    Outcome.FAILED: "red",
}
STATUS_STYLE = {"RESOLVED": "green", "CONFLICTED": "yellow", "INSUFFICIENT": "red"}


def status_text(status: str, leader: str, support: float) -> str:
    style = STATUS_STYLE.get(status, "white")
    lead = f" leader {escape(leader)} (support {support:.2f}, display only)" if leader else ""
    return f"[{style}]{escape(status)}[/{style}]{lead}"


def acquisition_text(acquisition: Acquisition) -> str:
    style = OUTCOME_STYLE.get(acquisition.outcome, "white")
    fits = acquisition.within_declared_latency
    observed = f"{acquisition.latency_seconds:.3f}s"
    if acquisition.outcome is Outcome.CASE_ENQUEUED:
        observed = f"enqueued in {observed}; the review's own latency is measured when it returns"
    elif acquisition.probe == "HUMAN_REVIEW" and acquisition.candidate_id.startswith("case/"):
        observed += " from enqueue to freeze"
    else:
        observed += " observed"
    timing = f"{observed}, declared {escape(acquisition.declared_latency)}"
    if acquisition.declared_cost:
        timing += f" (cost {escape(acquisition.declared_cost)})"
    if fits is False:
        timing += " [red](slower than declared)[/red]"
    approved = (
        f"\n      [magenta]approved by operator (--approve {escape(acquisition.probe)}): "
        f"{escape(', '.join(acquisition.approved_grants))}[/magenta]"
        if acquisition.approved_grants
        else ""
    )
    return (
        f"{escape(acquisition.probe)} [{style}]{acquisition.outcome}[/{style}] — "
        f"{escape(acquisition.detail)}\n      {timing}{approved}"
    )


def print_event(console: Console, event: Step | Acquisition) -> None:
    """One executor event, as it happens."""
    if isinstance(event, Acquisition):
        console.print(f"  collect  {acquisition_text(event)}")
        return
    console.print(
        f"  step {event.iteration}  {status_text(event.status, event.leader, event.support)}"
    )
    for skip in event.skipped:
        console.print(f"      [dim]skipped {escape(skip.candidate_id)}: {skip.reason}[/dim]")
    if event.acquisition is not None:
        console.print(f"    act    {acquisition_text(event.acquisition)}")


def print_summary(console: Console, report: RunReport) -> None:
    """How the run ended."""
    status = status_text(report.final_status, report.final_leader, report.final_support)
    console.print(f"  stopped: [bold]{report.stop_reason}[/bold]; final: {status}")
    if report.pending_cases:
        console.print(f"  waiting for reviewers on: {escape(', '.join(report.pending_cases))}")
    for approval in report.approvals_used:
        console.print(f"  [magenta]approval used: {escape(approval)}[/magenta]")


def camel(name: str) -> str:
    """A field name as proto JSON spells it: ``within_declared_latency`` ->
    ``withinDeclaredLatency``."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _camel_keys(fields: dict[str, Any]) -> dict[str, Any]:
    return {camel(key): value for key, value in fields.items()}


def report_dict(report: RunReport) -> dict[str, Any]:
    """The report as plain JSON-ready data, keys in camelCase (evidence in proto JSON)."""

    def acquisition(a: Acquisition | None) -> dict[str, Any] | None:
        if a is None:
            return None
        return _camel_keys({**asdict(a), "within_declared_latency": a.within_declared_latency})

    return {
        "subject": report.subject,
        "predicate": report.predicate,
        "collected": [acquisition(a) for a in report.collected],
        "steps": [
            {
                "iteration": s.iteration,
                "status": s.status,
                "leader": s.leader,
                "support": s.support,
                "skipped": [_camel_keys(asdict(k)) for k in s.skipped],
                "acquisition": acquisition(s.acquisition),
            }
            for s in report.steps
        ],
        "stopReason": str(report.stop_reason),
        "final": {
            "status": report.final_status,
            "leader": report.final_leader,
            "support": report.final_support,
        },
        "pendingCases": report.pending_cases,
        "approvalsUsed": report.approvals_used,
        "evidence": json_format.MessageToDict(report.evidence),
    }
