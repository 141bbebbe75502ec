"""The executor asks people before acting, through the real ApprovalService.

The secure stack (TLS, ES256 tokens): the executor runs as ``operator`` for tenant acme
with nothing granted, so RERUN_TEST (PROCESS_SPAWN and the filesystem) is
REQUIRES_APPROVAL; it asks, waits on the server's push, and acts only on a grant it
consumed. ``dave`` approves or denies from his own client, as a person would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from assay.candidate_digest import candidate_digest
from assay.client import AsyncAdjudicationClient, AsyncPlannerClient, AsyncResolverClient
from assay.client.approvals import AsyncApprovalClient
from assay.client.builders import as_evidence
from assay.client.credentials import Credentials
from assay.executor.loop import Executor, Services
from assay.executor.model import (
    ApprovalAsked,
    ApprovalOutcome,
    Outcome,
    ProbeSetup,
    RunReport,
    Settings,
    StopReason,
)
from assay.executor.render import print_event, report_dict
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2
from tests.support.eventually import eventually_async
from tests.support.secure import SecureStack, secure_stack

SUBJECT, PREDICATE = "suite:unit", "tests.pass"
TENANT = "acme"
RERUN = "rerun_test/process_result"


def claim(cid: str, value: Any, source: str, confidence: float) -> dict[str, Any]:
    return {
        "id": cid,
        "subject": SUBJECT,
        "predicate": PREDICATE,
        "value": value,
        "source": source,
        "confidence": confidence,
        "correlationGroup": cid,
    }


EVIDENCE = as_evidence(
    [claim("doc", True, "documentation", 0.6), claim("llm", False, "llm_inference", 0.9)]
)


@dataclass
class Desk:
    """The running stack, the executor's services (as operator) and dave's client."""

    stack: SecureStack
    services: Services
    dave: AsyncApprovalClient
    operator: AsyncApprovalClient
    setup: ProbeSetup

    def settings(self, wait: float = 60.0) -> Settings:
        return Settings(SUBJECT, PREDICATE, tenant=TENANT, approval_wait=wait, probes=self.setup)

    async def pending(self) -> list[pb.Approval]:
        return [a async for a in self.dave.list_all(TENANT, "PENDING")]

    async def events(self) -> list[adj.AuditEvent]:
        assert self.services.adjudication is not None
        return [e async for e in self.services.adjudication.audit_events()]


@contextlib.asynccontextmanager
async def desk(tmp_path: Path, db: str = "") -> AsyncIterator[Desk]:
    """``db``: a ``postgresql://`` URL, or empty for a SQLite file."""
    postgres = db if db.startswith("postgresql") else None
    async with secure_stack(tmp_path, db=postgres) as stack:
        targets, root = stack.targets, stack.creds.root
        operator = Credentials.from_folder(root, "operator")
        dave = Credentials.from_folder(root, "dave")
        async with (
            AsyncResolverClient(targets.resolver, timeout=10, credentials=operator) as resolver,
            AsyncPlannerClient(targets.planner, timeout=10, credentials=operator) as planner,
            AsyncAdjudicationClient(
                targets.adjudication, timeout=10, credentials=operator
            ) as adjudication,
            AsyncApprovalClient(targets.adjudication, timeout=10, credentials=operator) as asks,
            AsyncApprovalClient(targets.adjudication, timeout=10, credentials=dave) as approver,
        ):
            # No adjudication in the run's services: HUMAN_REVIEW stays unconfigured, so the
            # approval-gated RERUN_TEST is the best candidate the run may take.
            services = Services(resolver, planner, None, asks)
            setup = ProbeSetup(
                test_command=(sys.executable, "-c", "pass"), worktree=tmp_path, test_timeout=30
            )
            yield Desk(stack, replace(services, adjudication=adjudication), approver, asks, setup)


def run_in_background(d: Desk, settings: Settings, seen: list[Any]) -> asyncio.Task[RunReport]:
    services = replace(d.services, adjudication=None)
    return asyncio.create_task(Executor(services, settings, seen.append).run(EVIDENCE))


async def first_pending(d: Desk) -> pb.Approval:
    waiting: list[pb.Approval] = await eventually_async(
        d.pending, message="the executor's approval request is PENDING"
    )
    return waiting[0]


def kinds_and_actors(events: list[adj.AuditEvent]) -> list[tuple[str, str]]:
    return [
        (adj.AuditEventType.Name(e.event_type).removeprefix("AUDIT_EVENT_TYPE_"), e.actor.subject)
        for e in events
    ]


class TestAskingFirst:
    async def test_the_run_waits_for_the_decision_and_acts_on_the_consumed_grant(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        """Blocked until dave approves; then the probe runs, the report names the approval,
        and the ledger has the request by operator, the grant by dave and the use by
        operator (on each engine)."""
        async with desk(tmp_path, adjudication_db) as d:
            seen: list[Any] = []
            task = run_in_background(d, d.settings(), seen)
            asked = await first_pending(d)
            assert not task.done()
            assert asked.candidate.candidate_id == RERUN
            assert asked.requester.subject == "operator"
            assert asked.tenant == TENANT
            assert "executor run" in asked.reason
            assert "PROCESS_SPAWN" in asked.reason
            await d.dave.decide(asked.approval_id, True, "a rerun in a copy is fine")
            report = await asyncio.wait_for(task, 30)
            events = await d.events()
            state = (await d.operator.get(asked.approval_id)).state
        (notice,) = [e for e in seen if isinstance(e, ApprovalAsked)]
        assert (notice.approval_id, notice.quorum, notice.requester) == (
            asked.approval_id,
            1,
            "operator",
        )
        acquisition = report.steps[0].acquisition
        assert acquisition is not None
        assert (acquisition.probe, acquisition.outcome) == ("RERUN_TEST", Outcome.OBSERVED)
        assert acquisition.approval_id == asked.approval_id
        assert "PROCESS_SPAWN" in acquisition.approved_grants
        approval = report.steps[0].approval
        assert approval is not None
        assert (approval.outcome, approval.decided_by) == (ApprovalOutcome.CONSUMED, ("dave",))
        assert report.stop_reason is StopReason.RESOLVED
        assert asked.approval_id in report.approvals_used[0]
        document = json.loads(json.dumps(report_dict(report)))
        assert document["steps"][0]["acquisition"]["approvalId"] == asked.approval_id
        assert document["steps"][0]["approval"]["decidedBy"] == ["dave"]
        assert state == pb.APPROVAL_STATE_CONSUMED
        assert kinds_and_actors(events)[-4:] == [
            ("APPROVAL_REQUESTED", "operator"),
            ("APPROVAL_DECIDED", "dave"),
            ("APPROVAL_GRANTED", "dave"),
            ("APPROVAL_CONSUMED", "operator"),
        ]

    async def test_a_denial_ends_the_attempt_with_the_reason_shown(self, tmp_path: Path) -> None:
        """dave denies: nothing runs, the run stops APPROVAL_DENIED, and his reason is shown
        as data (its escape sequence inert)."""
        reason = "not during the freeze \x1b[2J[red]ok[/red]"
        async with desk(tmp_path) as d:
            seen: list[Any] = []
            task = run_in_background(d, d.settings(), seen)
            asked = await first_pending(d)
            await d.dave.decide(asked.approval_id, False, reason)
            report = await asyncio.wait_for(task, 30)
            events = await d.events()
        assert report.stop_reason is StopReason.APPROVAL_DENIED
        step = report.steps[-1]
        assert step.acquisition is None
        assert step.approval is not None
        assert (step.approval.outcome, step.approval.decided_by) == (
            ApprovalOutcome.DENIED,
            ("dave",),
        )
        assert step.approval.reason == reason
        assert [c.id for c in report.evidence.claims] == ["doc", "llm"]
        assert "APPROVAL_CONSUMED" not in [k for k, _ in kinds_and_actors(events)]
        console = Console(record=True, width=200, highlight=False, emoji=False)
        for event in seen:
            print_event(console, event)
        shown = console.export_text()
        assert "APPROVAL_DENIED" not in shown  # the step line says DENIED; the summary stops
        assert f"approval {asked.approval_id} DENIED by dave" in shown
        assert "not during the freeze \\x1b[2J[red]ok[/red]" in shown
        assert "\x1b" not in shown

    async def test_an_approval_for_another_candidate_is_never_used(self, tmp_path: Path) -> None:
        """A GRANTED approval for the same probe on another subject stays unused: the run asks
        for its own candidate, consumes only that one, with that candidate's digest."""
        async with desk(tmp_path) as d:
            other = plan_pb2.AcquisitionCandidate(
                candidate_id=RERUN,
                probe=plan_pb2.PROBE_KIND_RERUN_TEST,
                target_signal_class=plan_pb2.SIGNAL_CLASS_PROCESS_RESULT,
                availability=plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
                required_side_effects=[plan_pb2.SIDE_EFFECT_CLASS_PROCESS_SPAWN],
                missing_grants=[plan_pb2.SIDE_EFFECT_CLASS_PROCESS_SPAWN],
                blocking_reasons=[plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED],
            )
            other.candidate_digest = candidate_digest("suite:other", PREDICATE, other)
            elsewhere = await d.operator.ask(
                TENANT, "suite:other", PREDICATE, other, "another suite's rerun"
            )
            await d.dave.decide(elsewhere.approval_id, True, "that one is fine")
            task = run_in_background(d, d.settings(), [])
            asked = await first_pending(d)
            assert asked.approval_id != elsewhere.approval_id
            assert not task.done()  # a grant for another candidate does not unblock it
            await d.dave.decide(asked.approval_id, True, "this one too")
            report = await asyncio.wait_for(task, 30)
            untouched = await d.operator.get(elsewhere.approval_id)
            used = await d.operator.get(asked.approval_id)
        acquisition = report.steps[0].acquisition
        assert acquisition is not None
        assert acquisition.approval_id == asked.approval_id
        assert untouched.state == pb.APPROVAL_STATE_GRANTED
        assert used.state == pb.APPROVAL_STATE_CONSUMED
        assert used.candidate.candidate_digest != elsewhere.candidate.candidate_digest

    async def test_an_undecided_request_expires_with_the_wait(self, tmp_path: Path) -> None:
        """No one decides: the request expires when the run's wait ends, and the run stops
        APPROVAL_EXPIRED without acting."""
        async with desk(tmp_path) as d:
            report = await Executor(
                replace(d.services, adjudication=None), d.settings(wait=1.0)
            ).run(EVIDENCE)
            (approval,) = [a async for a in d.operator.list_all(TENANT)]
        assert report.stop_reason is StopReason.APPROVAL_EXPIRED
        assert report.steps[-1].acquisition is None
        assert approval.state == pb.APPROVAL_STATE_EXPIRED

    async def test_local_and_recorded_approvals_never_mix(self, tmp_path: Path) -> None:
        """A run with an approval service and a local --approve is refused before it starts."""
        async with desk(tmp_path) as d:
            settings = replace(d.settings(), approvals=frozenset({"RERUN_TEST"}))
            with pytest.raises(ValueError, match="cannot be combined"):
                Executor(d.services, settings)
