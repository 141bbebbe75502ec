"""How an executor run reads: one short line per step for people, a plain dict for ``--json``.

Both ``assay executor run`` and ``assay demo`` print through here, so the
newcomer's first look and the operator's daily tool describe a run the same
way. Approvals are always printed: an action taken on an approval must be
visible in the output, not only in a log: a recorded one by its id and its
approvers, a local ``--approve`` as what it is (whoever ran the executor, not in
the ledger). An approver's reason is someone else's text, shown as data.

What a run shows of data (leaders, probe details, case ids, skip reasons) goes into the
markup through ``assay.safe_text.markup``: escaped and never read as markup. ``report_dict``
spells its keys in camelCase, as proto JSON and every other command's ``-o json`` do.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from google.protobuf import json_format
from rich.console import Console

from assay.executor.model import (
    Acquisition,
    ApprovalAsked,
    ApprovalOutcome,
    ApprovalRecord,
    Outcome,
    RunReport,
    Step,
)
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
    grants = escape(", ".join(acquisition.approved_grants))
    approved = ""
    if acquisition.approval_id:
        approved = (
            f"\n      [magenta]under approval {escape(acquisition.approval_id)} "
            f"(consumed): {grants}[/magenta]"
        )
    elif acquisition.approved_grants:
        approved = (
            f"\n      [magenta]approved locally (--approve {escape(acquisition.probe)}, by "
            f"whoever runs the executor; not recorded in the ledger): {grants}[/magenta]"
        )
    return (
        f"{escape(acquisition.probe)} [{style}]{acquisition.outcome}[/{style}] — "
        f"{escape(acquisition.detail)}\n      {timing}{approved}"
    )


def asked_text(event: ApprovalAsked) -> str:
    """An approval request the run now waits on: its id and who must decide."""
    people = "approver" if event.quorum == 1 else "distinct approvers"
    return (
        f"approval {escape(event.approval_id)} requested for {escape(event.probe)} "
        f"({escape(event.candidate_id)}); waiting up to {event.wait_seconds:g}s for "
        f"{event.quorum} {people} of tenant {escape(event.tenant)} (role approver; "
        f"not {escape(event.requester)}, the requester)"
    )


def approval_text(record: ApprovalRecord) -> str:
    """How an approval ended for the run; the decider's reason shown as data."""
    named = f"approval {escape(record.approval_id)}" if record.approval_id else "approval"
    by = f" by {escape(', '.join(record.decided_by))}" if record.decided_by else ""
    if record.outcome is ApprovalOutcome.CONSUMED:
        return f"{named} [green]GRANTED[/green]{by}, consumed by this run"
    said = f': "{escape(record.reason)}"' if record.reason else ""
    return f"{named} [red]{record.outcome}[/red]{by}{said}"


def print_event(console: Console, event: Step | Acquisition | ApprovalAsked) -> None:
    """One executor event, as it happens."""
    if isinstance(event, Acquisition):
        console.print(f"  collect  {acquisition_text(event)}")
        return
    if isinstance(event, ApprovalAsked):
        console.print(f"    ask    {asked_text(event)}")
        return
    console.print(
        f"  step {event.iteration}  {status_text(event.status, event.leader, event.support)}"
    )
    for skip in event.skipped:
        console.print(f"      [dim]skipped {escape(skip.candidate_id)}: {skip.reason}[/dim]")
    if event.approval is not None:
        console.print(f"    decide {approval_text(event.approval)}")
    if event.acquisition is not None:
        console.print(f"    act    {acquisition_text(event.acquisition)}")


def print_summary(console: Console, report: RunReport) -> None:
    """How the run ended."""
    status = status_text(report.final_status, report.final_leader, report.final_support)
    console.print(f"  stopped: [bold]{report.stop_reason}[/bold]; final: {status}")
    if report.pending_cases:
        console.print(f"  waiting for reviewers on: {escape(', '.join(report.pending_cases))}")
    if report.spot_check_case:
        console.print(f"  sampled for a spot-check review: {escape(report.spot_check_case)}")
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
                "approval": None if s.approval is None else _camel_keys(asdict(s.approval)),
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
        "spotCheckCase": report.spot_check_case,
        "approvalsUsed": report.approvals_used,
        "evidence": json_format.MessageToDict(report.evidence),
    }
