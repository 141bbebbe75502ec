"""``assay demo``: the whole loop, in one process, on shipped example data.

It starts the three services on free loopback ports with a temporary
database, then walks a conflicted ``idempotency.mode`` through every stage:
the executor resolves and plans, enqueues a human-review case, two fixture
reviewers disagree, a third fixture adjudicates, the label is frozen, and a
second executor run brings the gold label back as a claim that resolves the
conflict.

Honesty is the point of the demo as much as the mechanism. Its reviewers are
MECHANISM_TEST_FIXTURE reviewers, and it says so; their gold label's
provenance is SYNTHETIC_MECHANISM_TEST, so it returns as a
``mechanism_test_fixture`` claim, never as ``human_review``. The builtin
reliability table has no such kind (so against a production resolver a
fixture label cannot count at all); the demo's resolver therefore runs with
the builtin table plus that one row at a low reliability, and prints it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.builders import as_evidence, from_value
from assay.client.evidence import load_evidence_file
from assay.client.gold import SYNTHETIC_SOURCE
from assay.client.planner import AsyncPlannerClient
from assay.client.resolver import AsyncResolverClient
from assay.executor.loop import Executor, Services
from assay.executor.model import RunReport, Settings, StopReason
from assay.executor.render import print_event, print_summary
from assay.executor.stack import local_stack
from assay.services.resolver.policy import DEFAULT_RELIABILITY
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

# Shipped inside the package, so `assay demo` works from a plain (non-editable) install too;
# examples/executor/ holds the same file for people reading the repository (a test pins them).
EXAMPLE = Path(__file__).resolve().parent / "data" / "idempotency-conflict.json"
SUBJECT, PREDICATE = "api:checkout.submit", "idempotency.mode"
# Low on purpose: a scripted answer is not an observation. Equal to generated_mock.
FIXTURE_RELIABILITY = 0.3
REVIEWERS = ("fixture-reviewer-a", "fixture-reviewer-b")
ADJUDICATOR = "fixture-adjudicator-c"
# What each fixture answers: scripted, so the demo is the same every time.
SCRIPT = {"fixture-reviewer-a": "idempotency-key", "fixture-reviewer-b": "none"}
DECISION = "idempotency-key"


def demo_table(directory: Path) -> tuple[str | None, str]:
    """The reliability table file for the demo's resolver, and a line saying what it is."""
    if SYNTHETIC_SOURCE in DEFAULT_RELIABILITY:
        return None, f"builtin table ({SYNTHETIC_SOURCE} {DEFAULT_RELIABILITY[SYNTHETIC_SOURCE]})"
    path = directory / "reliability.json"
    table = {**DEFAULT_RELIABILITY, SYNTHETIC_SOURCE: FIXTURE_RELIABILITY}
    path.write_text(json.dumps({"sources": table}, indent=2, sort_keys=True), encoding="utf-8")
    return str(path), f"builtin table + {SYNTHETIC_SOURCE} {FIXTURE_RELIABILITY} (demo only)"


def state_name(state: int) -> str:
    return adj.CaseState.Name(state).removeprefix("CASE_STATE_")  # type: ignore[arg-type]


async def run_demo(console: Console, example: Path = EXAMPLE) -> int:
    """Walk the loop; exit code 0 when the conflict ends RESOLVED."""
    loaded = load_evidence_file(example)
    with tempfile.TemporaryDirectory(prefix="assay-demo-") as scratch:
        table_path, table_line = demo_table(Path(scratch))
        async with local_stack(Path(scratch) / "assay.db", table_path) as stack:
            console.print(f"[bold]Assay demo[/bold] — the loop on {escape(str(example.name))}")
            console.print(
                f"  resolver {stack.resolver} · planner {stack.planner} · "
                f"adjudication {stack.adjudication} (temporary database)"
            )
            console.print(f"  reliability table: {table_line}")
            console.print(
                "  [yellow]The reviewers below are MECHANISM_TEST_FIXTURE test fixtures: "
                "scripted stand-ins, not people.[/yellow]"
            )
            async with (
                AsyncResolverClient(stack.resolver, timeout=10) as resolver,
                AsyncPlannerClient(stack.planner, timeout=10) as planner,
                AsyncAdjudicationClient(stack.adjudication, timeout=10) as adjudication,
            ):
                services = Services(resolver, planner, adjudication)
                evidence = as_evidence(loaded.evidence)
                console.print(f"\n[bold]1. Evidence[/bold] about {PREDICATE} of {SUBJECT}")
                for claim in evidence.claims:
                    value = json.dumps(from_value(claim.value))
                    console.print(
                        f"  {claim.id:<11} {claim.source:<14} {escape(value):<18} "
                        f"confidence {claim.confidence:g}"
                    )
                console.print("\n[bold]2. Executor[/bold] (no side effects granted, no approvals)")
                settings = Settings(SUBJECT, PREDICATE, tenant="demo")
                first = await Executor(services, settings, lambda e: print_event(console, e)).run(
                    evidence
                )
                print_summary(console, first)
                if first.stop_reason is not StopReason.AWAITING_REVIEW:
                    console.print("[red]expected a human-review case; stopping[/red]")
                    return 1
                case_id = first.pending_cases[0]
                await review(console, adjudication, case_id)
                console.print("\n[bold]4. Executor again[/bold], collecting the gold label")
                again = Settings(SUBJECT, PREDICATE, tenant="demo", cases=(case_id,))
                second = await Executor(services, again, lambda e: print_event(console, e)).run(
                    evidence
                )
                print_summary(console, second)
                return conclude(console, second)


async def review(console: Console, client: AsyncAdjudicationClient, case_id: str) -> None:
    """Fixture reviewers disagree, a fixture adjudicator decides, the label is frozen."""
    console.print(f"\n[bold]3. Review[/bold] of {case_id} (blinded; no majority vote)")
    for reviewer in (*REVIEWERS, ADJUDICATOR):
        await client.add_reviewer(reviewer, "MECHANISM_TEST_FIXTURE", attested_by="assay demo")
    console.print(
        f"  registered {', '.join(REVIEWERS)} and {ADJUDICATOR} as MECHANISM_TEST_FIXTURE"
    )
    queue = [c async for c in client.queue(REVIEWERS[0])]
    shown = queue[0]
    fields = ", ".join(f.name for f, _ in shown.ListFields())
    console.print(f"  a reviewer sees: {fields} — the case has no verdict field at all")
    for reviewer in REVIEWERS:
        answer = await client.review(case_id, reviewer, SCRIPT[reviewer])
        console.print(
            f"  {reviewer} (fixture) labels {json.dumps(SCRIPT[reviewer])} -> "
            f"{state_name(answer.state)}"
        )
    decided = await client.adjudicate(case_id, ADJUDICATOR, DECISION)
    console.print(
        f"  {ADJUDICATOR} (fixture) decides {json.dumps(DECISION)} -> "
        f"{state_name(decided.state)} (ADJUDICATOR_DECISION)"
    )
    revision = await client.freeze(case_id)
    provenance = gold_pb2.LabelingProvenance.Name(revision.provenance).removeprefix(
        "LABELING_PROVENANCE_"
    )
    console.print(
        f"  frozen: gold label r{revision.revision}, provenance [bold]{provenance}[/bold], "
        f"{revision.digest[:23]}…"
    )
    chain = await client.verify_audit_chain()
    verdict = "verified" if chain.ok else f"BROKEN at {chain.first_bad_sequence}"
    console.print(f"  audit chain {verdict} ({chain.events_checked} events)")


def conclude(console: Console, report: RunReport) -> int:
    """The outcome, and what it does and does not mean."""
    resolved = report.final_status == "RESOLVED"
    style = "green" if resolved else "red"
    console.print(
        f"\n[bold]5. Outcome[/bold]: {PREDICATE} of {SUBJECT} is "
        f"[{style}]{report.final_status}[/{style}] = {escape(report.final_leader)}"
    )
    console.print(
        "  The deciding label came from test fixtures: its provenance is "
        "SYNTHETIC_MECHANISM_TEST, so it came back as a "
        f"'{SYNTHETIC_SOURCE}' claim (reliability {FIXTURE_RELIABILITY} here), never as "
        "'human_review'. Only a label whose every contributor is a HUMAN reviewer returns as "
        "'human_review' (reliability 1.0). The builtin table has no "
        f"'{SYNTHETIC_SOURCE}' row, so a production resolver would not count this label at all."
    )
    return 0 if resolved else 1
