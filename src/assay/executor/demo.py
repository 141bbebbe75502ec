"""``assay demo``: the whole loop, in one process, on shipped example data, over TLS with tokens.

It writes throwaway credentials (a local CA, a server certificate, a signing key, a token per
example principal) to a temporary folder, starts the three services on free loopback ports
with TLS and authentication on, and walks a conflicted ``idempotency.mode`` through every
stage, each step by the principal whose job it is: the operator's executor resolves, plans
and enqueues a case for tenant ``acme``; alice and bob disagree; carol adjudicates; the
operator freezes the label; a second run brings it back as a claim that resolves the
conflict. Two refusals show the boundary holding (mallory of ``globex`` cannot see the case;
alice may not freeze), the audit ledger shows who did what, and ``demo_approval.py`` shows an
action that needs approval: the requester refused his own, the action taken on dave's grant.

Honesty is the point as much as the mechanism: the scripted reviewers are
MECHANISM_TEST_FIXTURE, and it says so; their label returns as ``mechanism_test_fixture``,
never ``human_review``, a kind the builtin table lacks (``demo_table`` adds it).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.builders import as_evidence, from_value
from assay.client.credentials import Credentials
from assay.client.evidence import load_evidence_file
from assay.client.gold import SYNTHETIC_SOURCE
from assay.client.planner import AsyncPlannerClient
from assay.client.resolver import AsyncResolverClient
from assay.executor.demo_approval import DEMO_PRINCIPALS, ask_before_acting, refused
from assay.executor.loop import Executor, Services
from assay.executor.model import RunReport, Settings, StopReason
from assay.executor.render import print_event, print_summary
from assay.executor.stack import LocalStack, local_stack
from assay.runtime.auth.dev_credentials import DevCredentials, write_dev_credentials
from assay.runtime.security import Security
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2

# Shipped inside the package, so `assay demo` works from a plain (non-editable) install too;
# examples/executor/ holds the same file for people reading the repository (a test pins them).
EXAMPLE = Path(__file__).resolve().parent / "data" / "idempotency-conflict.json"
SUBJECT, PREDICATE = "api:checkout.submit", "idempotency.mode"
TENANT = "acme"
# Low on purpose: a scripted answer is not an observation. Equal to generated_mock.
FIXTURE_RELIABILITY = 0.3
# Reviewer ids equal the token subjects: the server accepts a review or a decision only
# from the principal the reviewer is bound to.
OPERATOR = "operator"
REVIEWERS = ("alice", "bob")
ADJUDICATOR = "carol"
OUTSIDER = "mallory"
# What each fixture answers: scripted, so the demo is the same every time.
SCRIPT = {"alice": "idempotency-key", "bob": "none"}
DECISION = "idempotency-key"
TIMEOUT = 10.0


def demo_table(directory: Path) -> tuple[str | None, str]:
    """The reliability table file for the demo's resolver, and a line saying what it is:
    the builtin table plus ``mechanism_test_fixture`` at a low reliability, printed so the
    demo never hides that a fixture's label was allowed to count."""
    if SYNTHETIC_SOURCE in DEFAULT_RELIABILITY:
        return None, f"builtin table ({SYNTHETIC_SOURCE} {DEFAULT_RELIABILITY[SYNTHETIC_SOURCE]})"
    path = directory / "reliability.json"
    table = {**DEFAULT_RELIABILITY, SYNTHETIC_SOURCE: FIXTURE_RELIABILITY}
    path.write_text(json.dumps({"sources": table}, indent=2, sort_keys=True), encoding="utf-8")
    return str(path), f"builtin table + {SYNTHETIC_SOURCE} {FIXTURE_RELIABILITY} (demo only)"


def state_name(state: int) -> str:
    return adj.CaseState.Name(state).removeprefix("CASE_STATE_")  # type: ignore[arg-type]


def principals_line() -> str:
    """Who holds what, from the same table the credentials were written from."""
    shown = []
    for grantee in DEMO_PRINCIPALS:
        tenants = "all tenants" if "*" in grantee.tenants else ", ".join(grantee.tenants)
        where = f"; {tenants}" if grantee.tenants else ""
        shown.append(f"{grantee.name} ({', '.join(grantee.roles)}{where})")
    return " · ".join(shown)


@dataclass
class Team:
    """One client per principal, each carrying that principal's token and trusting the CA."""

    resolver: AsyncResolverClient
    planner: AsyncPlannerClient
    desks: dict[str, AsyncAdjudicationClient]

    def as_(self, name: str) -> AsyncAdjudicationClient:
        return self.desks[name]


@contextlib.asynccontextmanager
async def team(stack: LocalStack, creds: DevCredentials) -> AsyncIterator[Team]:
    def of(name: str) -> Credentials:
        return Credentials.from_folder(creds.root, name)

    async with contextlib.AsyncExitStack() as clients:
        enter = clients.enter_async_context
        resolver = await enter(
            AsyncResolverClient(stack.resolver, timeout=TIMEOUT, credentials=of(OPERATOR))
        )
        planner = await enter(
            AsyncPlannerClient(stack.planner, timeout=TIMEOUT, credentials=of(OPERATOR))
        )
        desks = {
            name: await enter(
                AsyncAdjudicationClient(stack.adjudication, timeout=TIMEOUT, credentials=of(name))
            )
            for name in (OPERATOR, *REVIEWERS, ADJUDICATOR, OUTSIDER)
        }
        yield Team(resolver, planner, desks)


async def run_demo(console: Console, example: Path = EXAMPLE) -> int:
    """Walk the loop; exit code 0 when the conflict ends RESOLVED and both refusals held."""
    loaded = load_evidence_file(example)
    with tempfile.TemporaryDirectory(prefix="assay-demo-") as scratch:
        root = Path(scratch)
        table_path, table_line = demo_table(root)
        creds = write_dev_credentials(root / "credentials", DEMO_PRINCIPALS)
        security = Security.from_credentials(creds.root)
        async with (
            local_stack(
                root / "assay.db", table_path, security=security, allow_fixture_reviewers=True
            ) as stack,
            team(stack, creds) as people,
        ):
            console.print(f"[bold]Assay demo[/bold] — the loop on {escape(str(example.name))}")
            console.print(
                f"  resolver {stack.resolver} · planner {stack.planner} · "
                f"adjudication {stack.adjudication} (temporary database)"
            )
            console.print(
                "  TLS on, certificates from a throwaway local CA; every call carries its "
                "caller's bearer token (an ES256 JWT; tokens are never printed)"
            )
            console.print(f"  principals: {principals_line()}")
            console.print(f"  reliability table: {table_line}")
            console.print(
                "  [yellow]The reviewers below are MECHANISM_TEST_FIXTURE test fixtures: "
                "scripted stand-ins, not people.[/yellow] alice, bob and carol are their "
                "ids, each bound to the token of the same name."
            )
            services = Services(people.resolver, people.planner, people.as_(OPERATOR))
            evidence = as_evidence(loaded.evidence)
            console.print(f"\n[bold]1. Evidence[/bold] about {PREDICATE} of {SUBJECT}")
            for claim in evidence.claims:
                value = json.dumps(from_value(claim.value))
                console.print(
                    f"  {claim.id:<11} {claim.source:<14} {escape(value):<18} "
                    f"confidence {claim.confidence:g}"
                )
            console.print(
                f"\n[bold]2. Executor[/bold] as {OPERATOR}, for tenant {TENANT} (no side "
                "effects granted, no approvals; the planner calls the resolver as planner)"
            )
            settings = Settings(SUBJECT, PREDICATE, tenant=TENANT)
            first = await Executor(services, settings, lambda e: print_event(console, e)).run(
                evidence
            )
            print_summary(console, first)
            if first.stop_reason is not StopReason.AWAITING_REVIEW:
                console.print("[red]expected a human-review case; stopping[/red]")
                return 1
            case_id = first.pending_cases[0]
            held = await review(console, people, case_id)
            console.print(
                f"\n[bold]4. Executor again[/bold] as {OPERATOR}, collecting the gold label"
            )
            again = Settings(SUBJECT, PREDICATE, tenant=TENANT, cases=(case_id,))
            second = await Executor(services, again, lambda e: print_event(console, e)).run(
                evidence
            )
            print_summary(console, second)
            resolved = conclude(console, second)
            asked = await ask_before_acting(console, stack, creds.root, root, people.as_(OPERATOR))
            if not asked:
                console.print("[red]the approval stage did not go as the rules promise[/red]")
                return 1
            if not held:
                console.print("[red]a refusal the trust boundary promises did not happen[/red]")
                return 1
            return resolved


def bound_to(reviewer: adj.Reviewer) -> str:
    if reviewer.identity_subject:
        return f"bound to {reviewer.identity_subject}"
    return "not bound to an identity"


async def review(console: Console, people: Team, case_id: str) -> bool:
    """Each person with their own token: the operator registers the fixtures, alice and bob
    disagree, carol decides, the operator freezes; mallory and alice are refused on the way.
    True when both refusals held."""
    operator = people.as_(OPERATOR)
    console.print(f"\n[bold]3. Review[/bold] of {case_id} (blinded; no majority vote)")
    registered = [
        await operator.add_reviewer(name, "MECHANISM_TEST_FIXTURE")
        for name in (*REVIEWERS, ADJUDICATOR)
    ]
    console.print(
        f"  {OPERATOR} registers "
        + ", ".join(f"{r.reviewer_id} ({bound_to(r)})" for r in registered)
        + " as MECHANISM_TEST_FIXTURE reviewers"
    )
    first = REVIEWERS[0]
    queue = [c async for c in people.as_(first).queue(first, TENANT)]
    fields = ", ".join(f.name for f, _ in queue[0].ListFields())
    console.print(f"  {first}'s queue shows: {fields} — the case has no verdict field at all")
    for reviewer in REVIEWERS:
        answer = await people.as_(reviewer).review(case_id, reviewer, SCRIPT[reviewer])
        console.print(
            f"  {reviewer} (fixture, own token) labels {json.dumps(SCRIPT[reviewer])} -> "
            f"{state_name(answer.state)}"
        )
    seen = await operator.get_case_state(adj.GetCaseStateRequest(case_id=case_id))
    console.print(
        f"  {OPERATOR} reads the round -> {state_name(seen.state)} "
        "(the reviewers see AWAITING_RESOLUTION until it is decided: blinded)"
    )
    outsider = await refused(
        console,
        f"{OUTSIDER} (tenant globex) reads the {TENANT} case",
        people.as_(OUTSIDER).get_blinded_case(adj.GetBlindedCaseRequest(case_id=case_id)),
        "NOT_FOUND",
    )
    decided = await people.as_(ADJUDICATOR).adjudicate(case_id, ADJUDICATOR, DECISION)
    console.print(
        f"  {ADJUDICATOR} (fixture, own token) decides {json.dumps(DECISION)} -> "
        f"{state_name(decided.state)} (ADJUDICATOR_DECISION)"
    )
    role = await refused(
        console,
        f"{first} (a reviewer) tries to freeze it",
        people.as_(first).freeze(case_id),
        "PERMISSION_DENIED",
    )
    revision = await operator.freeze(case_id)
    provenance = gold_pb2.LabelingProvenance.Name(revision.provenance).removeprefix(
        "LABELING_PROVENANCE_"
    )
    console.print(
        f"  {OPERATOR} freezes: gold label r{revision.revision}, provenance "
        f"[bold]{provenance}[/bold], {revision.digest[:23]}…"
    )
    chain = await operator.verify_audit_chain()
    verdict = "verified" if chain.ok else f"BROKEN at {chain.first_bad_sequence}"
    console.print(f"  audit chain {verdict} ({chain.events_checked} events); who did what:")
    async for event in operator.audit_events():
        kind = adj.AuditEventType.Name(event.event_type).removeprefix("AUDIT_EVENT_TYPE_")
        actor = event.actor.subject or "(no actor recorded)"
        console.print(f"    #{event.sequence:<3} {kind:<24} by {actor}")
    return outsider and role


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
