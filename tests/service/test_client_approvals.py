"""The approval clients against the real secure stack (TLS, ES256 tokens, the three services
in this process): a candidate the planner marked REQUIRES_APPROVAL is asked for, refused to
its requester, approved by an approver while the requester watches, consumed once; listed
and revoked; every refusal the server's typed error. The blocking client runs the same
calls on a thread.

Principals: ``operator`` requests (every tenant); ``dave`` approves for acme; ``both`` holds
operator and approver for acme, so only the requester rule stops it deciding its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from assay.client import (
    ApprovalClient,
    AsyncApprovalClient,
    AsyncPlannerClient,
    Credentials,
    FailedPreconditionError,
    PermissionDeniedError,
)
from assay.client.approval_builders import is_final
from assay.client.evidence import load_json_file
from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, Grantee
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2
from tests.support.secure import SecureStack, secure_stack

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = load_json_file(ROOT / "examples/evidence/safety-conflict.json")
SUBJECT, PREDICATE = "api:payments.create", "idempotency.mode"
PRINCIPALS = (*EXAMPLE_PRINCIPALS, Grantee("both", ("operator", "approver"), ("acme",)))
TIMEOUT = 20.0


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[SecureStack]:
    async with secure_stack(tmp_path, True, PRINCIPALS) as running:
        yield running


def as_(stack: SecureStack, name: str) -> AsyncApprovalClient:
    """An approval client on the adjudication port with ``name``'s token."""
    creds = Credentials.from_folder(stack.creds.root, name)
    return AsyncApprovalClient(stack.target("adjudication"), credentials=creds, timeout=TIMEOUT)


async def planned_candidate(stack: SecureStack) -> plan_pb2.AcquisitionCandidate:
    """The first candidate the planner marks REQUIRES_APPROVAL for the example conflict."""
    creds = Credentials.from_folder(stack.creds.root, "operator")
    async with AsyncPlannerClient(stack.target("planner"), credentials=creds) as planner:
        response = await planner.plan(EVIDENCE, SUBJECT, PREDICATE)
    return next(
        c
        for c in response.plan.candidates
        if c.availability == plan_pb2.AVAILABILITY_REQUIRES_APPROVAL
    )


def name(approval: pb.Approval) -> str:
    return pb.ApprovalState.Name(approval.state).removeprefix("APPROVAL_STATE_")


class TestTheFlow:
    async def test_ask_refuse_self_approval_watch_approve_consume(self, stack: SecureStack) -> None:
        """The requester is refused by name; the watcher sees PENDING, GRANTED, CONSUMED and
        the stream ends there; a second consume is refused."""
        candidate = await planned_candidate(stack)
        async with as_(stack, "both") as requester, as_(stack, "dave") as approver:
            asked = await requester.ask("acme", SUBJECT, PREDICATE, candidate, "CI would settle it")
            assert name(asked) == "PENDING"
            assert asked.requester.subject == "both"
            with pytest.raises(PermissionDeniedError) as refused:
                await requester.decide(asked.approval_id, True, "my own")
            assert refused.value.reason == "ERROR_REASON_APPROVER_IS_REQUESTER"

            seen: list[str] = []
            first = asyncio.Event()

            async def watch() -> None:
                async for approval in requester.watch(asked.approval_id):
                    seen.append(name(approval))
                    first.set()

            watcher = asyncio.create_task(watch())
            await asyncio.wait_for(first.wait(), TIMEOUT)
            granted = await approver.decide(asked.approval_id, True, "read-only query")
            assert name(granted) == "GRANTED"
            used = await requester.consume(asked.approval_id, candidate.candidate_digest)
            assert name(used) == "CONSUMED"
            assert is_final(used)
            await asyncio.wait_for(watcher, TIMEOUT)
            assert seen == ["PENDING", "GRANTED", "CONSUMED"]
            with pytest.raises(FailedPreconditionError) as again:
                await requester.consume(asked.approval_id, candidate.candidate_digest)
            assert again.value.reason == "ERROR_REASON_APPROVAL_ALREADY_CONSUMED"
            steps = [(pb.ApprovalStepKind.Name(s.kind), s.actor.subject) for s in used.steps]
            assert steps == [
                ("APPROVAL_STEP_KIND_APPROVED", "dave"),
                ("APPROVAL_STEP_KIND_CONSUMED", "both"),
            ]

    async def test_list_all_filters_by_state_and_revoke_ends_it(self, stack: SecureStack) -> None:
        """Two requests: one denied, one pending; ``list_all`` by state finds each; the
        pending one revoked is REVOKED."""
        candidate = await planned_candidate(stack)
        async with as_(stack, "operator") as requester, as_(stack, "dave") as approver:
            denied = await requester.ask("acme", SUBJECT, PREDICATE, candidate, "first")
            pending = await requester.ask("acme", SUBJECT, PREDICATE, candidate, "second")
            assert name(await approver.decide(denied.approval_id, False, "freeze")) == "DENIED"
            everything = [a.approval_id async for a in approver.list_all("acme")]
            assert everything == [pending.approval_id, denied.approval_id]  # newest first
            waiting = [a.approval_id async for a in approver.list_all(state="pending")]
            assert waiting == [pending.approval_id]
            got = await approver.get(denied.approval_id)
            assert (name(got), got.steps[0].reason) == ("DENIED", "freeze")
            revoked = await requester.revoke(pending.approval_id, "plan changed")
            assert name(revoked) == "REVOKED"
            assert [a.approval_id async for a in approver.list_all(state="pending")] == []

    async def test_the_blocking_client_makes_the_same_calls(self, stack: SecureStack) -> None:
        """``ApprovalClient`` asks, lists and reads back through one blocking channel."""
        candidate = await planned_candidate(stack)
        creds = Credentials.from_folder(stack.creds.root, "operator")

        def run() -> tuple[pb.Approval, list[pb.Approval], pb.Approval]:
            target = stack.target("adjudication")
            with ApprovalClient(target, credentials=creds, timeout=TIMEOUT) as client:
                asked = client.ask("acme", SUBJECT, PREDICATE, candidate, "blocking")
                listed = list(client.list_all(state="PENDING"))
                watched = next(iter(client.watch(asked.approval_id)))
                return asked, listed, watched

        asked, listed, watched = await asyncio.to_thread(run)
        assert [a.approval_id for a in listed] == [asked.approval_id]
        assert (watched.approval_id, name(watched)) == (asked.approval_id, "PENDING")
