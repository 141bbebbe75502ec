"""``assay demo``, stage 6: the executor asks people before it acts, and only then acts.

A second target, ``tests.pass`` of a small suite, is in conflict; the best thing the
executor may do is rerun the tests, which spawns a process, and nothing is granted, so the
plan says REQUIRES_APPROVAL. The run is oscar's: a demo-only principal who both operates
and approves for acme, so that his attempt to approve his own request is refused for the
rule that matters (APPROVER_IS_REQUESTER) rather than for a missing role. The executor asks
ApprovalService, prints the approval id and who must decide, and waits; oscar is refused;
dave (an approver) grants it; the executor consumes the grant with the candidate's digest,
reruns the tests and the conflict resolves. The ledger then names each actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

from rich.console import Console

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.approvals import AsyncApprovalClient
from assay.client.builders import as_evidence
from assay.client.credentials import Credentials
from assay.client.errors import AssayCallError
from assay.client.planner import AsyncPlannerClient
from assay.client.resolver import AsyncResolverClient
from assay.executor.loop import Executor, Services
from assay.executor.model import (
    Acquisition,
    ApprovalAsked,
    ProbeSetup,
    Settings,
    Step,
    StopReason,
)
from assay.executor.render import print_event, print_summary
from assay.executor.stack import LocalStack
from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, Grantee
from assay.safe_text import markup as escape
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb

SUITE, PASSES = "suite:checkout", "tests.pass"
TENANT = "acme"
REQUESTER = "oscar"  # demo only: operator and approver, so the self-approval rule shows
APPROVER = "dave"
# A demo-only principal next to the example ones; the demo writes tokens for all of them.
DEMO_PRINCIPALS = (
    *EXAMPLE_PRINCIPALS,
    Grantee(REQUESTER, ("operator", "approver", "reader"), (TENANT,)),
)
WAIT_SECONDS = 60.0
TIMEOUT = 10.0
TEST_FILE = "test_checkout.py"
EVIDENCE = [
    {"id": "ci-doc", "source": "documentation", "value": True, "confidence": 0.6},
    {"id": "ci-llm", "source": "llm_inference", "value": False, "confidence": 0.9},
]


async def refused(console: Console, attempt: str, call: Awaitable[Any], expected: str) -> bool:
    """Try what must fail; print how it was refused. True when it was refused as expected."""
    try:
        await call
    except AssayCallError as error:
        reason = error.reason.removeprefix("ERROR_REASON_")
        how = f"{error.code.name} {reason}".strip()
        style = "green" if error.code.name == expected else "red"
        console.print(f"  refused: {attempt} -> [{style}]{how}[/{style}]")
        return bool(error.code.name == expected)
    console.print(f"  [red]NOT refused: {attempt} succeeded (expected {expected})[/red]")
    return False


def suite(directory: Path) -> ProbeSetup:
    """A one-file test suite that passes, and how to rerun it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / TEST_FILE).write_text("assert 1 + 1 == 2\n", encoding="utf-8")
    return ProbeSetup(test_command=(sys.executable, TEST_FILE), worktree=directory)


@contextlib.asynccontextmanager
async def clients(stack: LocalStack, root: Path) -> AsyncIterator[tuple[Services, Any]]:
    """The executor's clients as oscar (no review desk: this run's question is for a test
    rerun), and each person's approval client."""

    def of(name: str) -> Credentials:
        return Credentials.from_folder(root, name)

    async with contextlib.AsyncExitStack() as opened:
        enter = opened.enter_async_context
        resolver = await enter(
            AsyncResolverClient(stack.resolver, timeout=TIMEOUT, credentials=of(REQUESTER))
        )
        planner = await enter(
            AsyncPlannerClient(stack.planner, timeout=TIMEOUT, credentials=of(REQUESTER))
        )
        desks = {
            name: await enter(
                AsyncApprovalClient(stack.adjudication, timeout=TIMEOUT, credentials=of(name))
            )
            for name in (REQUESTER, APPROVER)
        }
        yield Services(resolver, planner, None, desks[REQUESTER]), desks


async def ask_before_acting(
    console: Console, stack: LocalStack, root: Path, scratch: Path, ledger: AsyncAdjudicationClient
) -> bool:
    """Stage 6; True when the self-approval was refused and the run acted on dave's grant."""
    console.print(
        f"\n[bold]6. Asking before acting[/bold]: {PASSES} of {SUITE}, executor as {REQUESTER} "
        f"(operator and approver for {TENANT}; a demo-only principal), nothing granted"
    )
    seen_before = [e.sequence async for e in ledger.audit_events()]
    evidence = as_evidence([{**c, "subject": SUITE, "predicate": PASSES} for c in EVIDENCE])
    settings = Settings(
        SUITE, PASSES, tenant=TENANT, approval_wait=WAIT_SECONDS, probes=suite(scratch / "suite")
    )
    asked: asyncio.Queue[ApprovalAsked] = asyncio.Queue()

    def listen(event: Step | Acquisition | ApprovalAsked) -> None:
        print_event(console, event)
        if isinstance(event, ApprovalAsked):
            asked.put_nowait(event)

    async with clients(stack, root) as (services, desks):
        run = asyncio.create_task(Executor(services, settings, listen).run(evidence))
        waiting = asyncio.create_task(asked.get())
        await asyncio.wait({run, waiting}, timeout=TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            waiting.cancel()
            run.cancel()
            failed = await asyncio.gather(run, return_exceptions=True)
            why = escape(str(failed[0])) if isinstance(failed[0], Exception) else "it did not"
            console.print(f"[red]the executor did not ask for an approval: {why}[/red]")
            return False
        approval_id = waiting.result().approval_id
        console.print("  the executor waits: nothing runs until it has consumed a grant")
        pending = [a async for a in desks[APPROVER].list_all(TENANT, "PENDING")]
        for approval in pending:
            console.print(
                f"  {APPROVER}'s pending approvals: {escape(approval.approval_id)}, asked by "
                f'{escape(approval.requester.subject)}: "{escape(approval.reason)}"'
            )
        held = await refused(
            console,
            f"{REQUESTER} approves his own request",
            desks[REQUESTER].decide(approval_id, True, "looks fine to me"),
            "PERMISSION_DENIED",
        )
        decided = await desks[APPROVER].decide(
            approval_id, True, "a rerun in a throwaway copy is safe"
        )
        state = pb.ApprovalState.Name(decided.state).removeprefix("APPROVAL_STATE_")
        console.print(f"  {APPROVER} (approver, own token) approves -> {state}")
        report = await asyncio.wait_for(run, WAIT_SECONDS)
    print_summary(console, report)
    chain = await ledger.verify_audit_chain()
    verdict = "verified" if chain.ok else f"BROKEN at {chain.first_bad_sequence}"
    console.print(f"  audit chain {verdict} ({chain.events_checked} events); who did what:")
    async for event in ledger.audit_events():
        if event.sequence in seen_before:
            continue
        kind = adj.AuditEventType.Name(event.event_type).removeprefix("AUDIT_EVENT_TYPE_")
        actor = event.actor.subject or "(no actor recorded)"
        console.print(f"    #{event.sequence:<3} {kind:<24} by {actor}")
    used = [s.acquisition.approval_id for s in report.steps if s.acquisition is not None]
    acted = used == [approval_id]
    return held and acted and report.stop_reason is StopReason.RESOLVED
