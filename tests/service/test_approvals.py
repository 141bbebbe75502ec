"""ApprovalService through the secure stack (real TLS, real ES256 tokens, real servers), on
each engine: requester never approves, quorum of distinct approvers, one denial ends it,
expiry, revoke, single use under concurrent consumers, a revoke racing a consume, tenant
walls, the watch stream, and every step in the ledger with its actor, checked on read.

Principals: ``operator`` requests (role operator, every tenant); ``dave`` and ``erin``
approve for acme; ``gina`` approves and ``gloria`` operates for globex only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2, timestamp_pb2

from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, Grantee
from assay.runtime.status import decode_rpc_error
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import approval_service_pb2_grpc as pb_grpc
from assay.v1 import plan_pb2
from tests.service import tamper_sql
from tests.service.adjudication_support import adjudication_server, failure, is_postgres, rid
from tests.support.approvals import PREDICATE, SUBJECT, candidate
from tests.support.secure import SecureStack, secure_stack

TIMEOUT = 20.0
PRINCIPALS = (
    *EXAMPLE_PRINCIPALS,
    Grantee("erin", ("approver",), ("acme",)),
    Grantee("gina", ("approver",), ("globex",)),
    Grantee("gloria", ("operator", "auditor"), ("globex",)),
)
# Two distinct approvers for spawning a process; one for the network.
POLICY = """[approvals]
deny_ends = true
[approvals.quorum]
PROCESS_SPAWN = 2
NETWORK_CALL = 1
"""


class As:
    """A stub whose every call carries one principal's token."""

    def __init__(self, stub: Any, metadata: Any) -> None:
        self._stub = stub
        self._metadata = metadata

    def __getattr__(self, method: str) -> Any:
        call = getattr(self._stub, method)

        def invoke(request: Any, **extra: Any) -> Any:
            return call(request, metadata=self._metadata, timeout=TIMEOUT, **extra)

        return invoke


@dataclass
class World:
    stack: SecureStack
    approvals: pb_grpc.ApprovalServiceStub
    adjudication: adj_grpc.AdjudicationServiceStub
    db: str

    def as_(self, name: str) -> As:
        return As(self.approvals, self.stack.auth(name))

    async def request(
        self,
        given: plan_pb2.AcquisitionCandidate | None = None,
        by: str = "operator",
        tenant: str = "acme",
        **extra: Any,
    ) -> pb.Approval:
        reply = await self.as_(by).RequestApproval(
            pb.RequestApprovalRequest(
                tenant=tenant,
                subject=SUBJECT,
                predicate=PREDICATE,
                candidate=given or candidate(),
                reason="CI status would settle the conflict",
                request_id=rid(),
                **extra,
            )
        )
        approval: pb.Approval = reply.approval
        return approval

    async def decide(self, approval_id: str, who: str, approve: bool = True) -> pb.Approval:
        decision = pb.APPROVAL_DECISION_APPROVE if approve else pb.APPROVAL_DECISION_DENY
        reply = await self.as_(who).DecideApproval(
            pb.DecideApprovalRequest(
                approval_id=approval_id, decision=decision, reason=f"{who} looked", request_id=rid()
            )
        )
        approval: pb.Approval = reply.approval
        return approval

    async def granted(self) -> pb.Approval:
        """An approval the operator asked for (the default candidate) and dave granted."""
        return await self.decide((await self.request()).approval_id, "dave")

    def consume(self, approval: pb.Approval, digest: str = "", by: str = "operator") -> Any:
        return self.as_(by).ConsumeApproval(
            pb.ConsumeApprovalRequest(
                approval_id=approval.approval_id,
                candidate_digest=digest or approval.candidate.candidate_digest,
                request_id=rid(),
            )
        )

    async def events(self) -> list[adj.AuditEvent]:
        reply = await self.adjudication.ListAuditEvents(
            adj.ListAuditEventsRequest(page_size=1000),
            metadata=self.stack.auth("operator"),
            timeout=TIMEOUT,
        )
        return list(reply.events)


@contextlib.asynccontextmanager
async def world(tmp_path: Path, db: str, policy: str = POLICY) -> AsyncIterator[World]:
    postgres = db if is_postgres(db) else None
    async with (
        secure_stack(tmp_path, True, PRINCIPALS, db=postgres, approvals=policy) as stack,
        stack.channel("adjudication") as channel,
    ):
        stored = db if postgres else str(tmp_path / "assay.db")
        yield World(
            stack,
            pb_grpc.ApprovalServiceStub(channel),
            adj_grpc.AdjudicationServiceStub(channel),
            stored,
        )


def state_name(approval: pb.Approval) -> str:
    return pb.ApprovalState.Name(approval.state)


def reason_of(error: Any) -> str:
    return str(error.reason).removeprefix("ERROR_REASON_")


class TestTheLoop:
    async def test_request_refuse_self_approval_grant_consume_once(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request()
            assert state_name(asked) == "APPROVAL_STATE_PENDING"
            assert asked.requester.subject == "operator"
            assert asked.quorum == 1
            # The requester holds the approver role nowhere, but even the role would not do:
            # the server names the rule.
            refused = await failure(w.decide(asked.approval_id, "operator"))
            assert refused.code is grpc.StatusCode.PERMISSION_DENIED  # no approver role
            granted = await w.decide(asked.approval_id, "dave")
            assert state_name(granted) == "APPROVAL_STATE_GRANTED"
            assert granted.grant_expire_time.seconds > 0
            other = await failure(w.consume(granted, digest="sha256:" + "0" * 64))
            assert (other.code, reason_of(other)) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "APPROVAL_CANDIDATE_MISMATCH",
            )
            stranger = await failure(w.consume(granted, by="gloria"))
            assert stranger.code is grpc.StatusCode.NOT_FOUND  # another tenant's operator
            used = (await w.consume(granted)).approval
            assert state_name(used) == "APPROVAL_STATE_CONSUMED"
            again = await failure(w.consume(granted))
            assert reason_of(again) == "APPROVAL_ALREADY_CONSUMED"
            kinds = [adj.AuditEventType.Name(e.event_type) for e in await w.events()]
            assert kinds[-4:] == [
                "AUDIT_EVENT_TYPE_APPROVAL_REQUESTED",
                "AUDIT_EVENT_TYPE_APPROVAL_DECIDED",
                "AUDIT_EVENT_TYPE_APPROVAL_GRANTED",
                "AUDIT_EVENT_TYPE_APPROVAL_CONSUMED",
            ]
            actors = [e.actor.subject for e in (await w.events())[-4:]]
            assert actors == ["operator", "dave", "dave", "operator"]

    async def test_an_approver_who_also_requested_is_refused_by_name(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        policy = POLICY
        principals = (*PRINCIPALS, Grantee("both", ("operator", "approver"), ("acme",)))
        postgres = adjudication_db if is_postgres(adjudication_db) else None
        async with (
            secure_stack(tmp_path, True, principals, db=postgres, approvals=policy) as stack,
            stack.channel("adjudication") as channel,
        ):
            w = World(
                stack,
                pb_grpc.ApprovalServiceStub(channel),
                adj_grpc.AdjudicationServiceStub(channel),
                "",
            )
            asked = await w.request(by="both")
            refused = await failure(w.decide(asked.approval_id, "both"))
            assert (refused.code, reason_of(refused)) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "APPROVER_IS_REQUESTER",
            )
            assert "requester" in refused.message

    async def test_a_quorum_of_two_needs_two_distinct_approvers(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        spawn = candidate(
            probe=plan_pb2.PROBE_KIND_RERUN_TEST,
            effects=(plan_pb2.SIDE_EFFECT_CLASS_PROCESS_SPAWN,),
        )
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request(spawn)
            assert asked.quorum == 2
            once = await w.decide(asked.approval_id, "dave")
            assert state_name(once) == "APPROVAL_STATE_PENDING"
            twice = await failure(w.decide(asked.approval_id, "dave"))
            assert (twice.code, reason_of(twice)) == (
                grpc.StatusCode.ALREADY_EXISTS,
                "APPROVER_ALREADY_DECIDED",
            )
            granted = await w.decide(asked.approval_id, "erin")
            assert state_name(granted) == "APPROVAL_STATE_GRANTED"
            assert [s.actor.subject for s in granted.steps] == ["dave", "erin"]

    async def test_one_denial_ends_the_request(self, tmp_path: Path, adjudication_db: str) -> None:
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request()
            denied = await w.decide(asked.approval_id, "dave", approve=False)
            assert state_name(denied) == "APPROVAL_STATE_DENIED"
            late = await failure(w.decide(asked.approval_id, "erin"))
            assert reason_of(late) == "APPROVAL_NOT_PENDING"
            assert late.metadata["state"] == "APPROVAL_STATE_DENIED"
            kinds = [adj.AuditEventType.Name(e.event_type) for e in await w.events()]
            assert kinds[-1] == "AUDIT_EVENT_TYPE_APPROVAL_DENIED"


class TestRefusedRequests:
    async def test_forbidden_not_approvable_and_forged_digests_are_refused(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            outside = candidate(
                effects=(plan_pb2.SIDE_EFFECT_CLASS_FILESYSTEM_WRITE_OUTSIDE_WORKTREE,)
            )
            error = await failure(w.request(outside))
            assert reason_of(error) == "CANDIDATE_FORBIDDEN"
            available = candidate(availability=plan_pb2.AVAILABILITY_AVAILABLE, blocking=())
            error = await failure(w.request(available))
            assert reason_of(error) == "CANDIDATE_NOT_APPROVABLE"
            forged = candidate()
            forged.required_side_effects[:] = [plan_pb2.SIDE_EFFECT_CLASS_VCS_READ]
            error = await failure(w.request(forged))
            assert error.code is grpc.StatusCode.INVALID_ARGUMENT
            assert [v.field for v in error.violations] == ["candidate.candidate_digest"]
            late = timestamp_pb2.Timestamp()
            late.FromDatetime(datetime.now(UTC) + timedelta(days=30))
            error = await failure(w.request(expire_time=late))
            assert [v.field for v in error.violations] == ["expire_time"]
            error = await failure(w.request(grant_lifetime=duration_pb2.Duration(seconds=-5)))
            assert [v.field for v in error.violations] == ["grant_lifetime"]

    async def test_without_authentication_approvals_are_refused(self, tmp_path: Path) -> None:
        async with (
            adjudication_server(tmp_path / "dev.db") as server,
            grpc.aio.insecure_channel(server.target) as channel,
        ):
            stub = pb_grpc.ApprovalServiceStub(channel)
            error = await failure(
                stub.GetApproval(pb.GetApprovalRequest(approval_id="approval_x"), timeout=TIMEOUT)
            )
        assert (error.code, reason_of(error)) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "AUTHENTICATION_REQUIRED",
        )


class TestTenantWalls:
    async def test_another_tenant_neither_sees_nor_decides(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request()
            hidden = await failure(
                w.as_("gina").GetApproval(pb.GetApprovalRequest(approval_id=asked.approval_id))
            )
            assert (hidden.code, reason_of(hidden)) == (
                grpc.StatusCode.NOT_FOUND,
                "APPROVAL_NOT_FOUND",
            )
            decided = await failure(w.decide(asked.approval_id, "gina"))
            assert decided.code is grpc.StatusCode.NOT_FOUND
            listed = await w.as_("gina").ListApprovals(pb.ListApprovalsRequest())
            assert list(listed.approvals) == []
            walled = await failure(
                w.as_("gina").ListApprovals(pb.ListApprovalsRequest(tenant="acme"))
            )
            assert walled.code is grpc.StatusCode.PERMISSION_DENIED
            mine = await w.as_("dave").ListApprovals(
                pb.ListApprovalsRequest(state=pb.APPROVAL_STATE_PENDING)
            )
            assert [a.approval_id for a in mine.approvals] == [asked.approval_id]


class TestListing:
    async def test_newest_first_paged_and_filtered_by_state(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            made = [await w.request() for _ in range(5)]
            await w.decide(made[1].approval_id, "dave")
            await w.decide(made[3].approval_id, "dave", approve=False)
            seen: list[str] = []
            token = ""
            while True:
                page = await w.as_("dave").ListApprovals(
                    pb.ListApprovalsRequest(page_size=2, page_token=token)
                )
                seen += [a.approval_id for a in page.approvals]
                token = page.next_page_token
                if not token:
                    break
            assert seen == [a.approval_id for a in reversed(made)]
            pending = await w.as_("dave").ListApprovals(
                pb.ListApprovalsRequest(state=pb.APPROVAL_STATE_PENDING, page_size=1)
            )
            assert [a.approval_id for a in pending.approvals] == [made[4].approval_id]
            rest = await w.as_("dave").ListApprovals(
                pb.ListApprovalsRequest(
                    state=pb.APPROVAL_STATE_PENDING,
                    page_size=10,
                    page_token=pending.next_page_token,
                )
            )
            assert [a.approval_id for a in rest.approvals] == [
                made[2].approval_id,
                made[0].approval_id,
            ]
            bad = await failure(
                w.as_("dave").ListApprovals(pb.ListApprovalsRequest(page_token="nonsense"))
            )
            assert reason_of(bad) == "INVALID_PAGE_TOKEN"


class TestUsingOnce:
    async def test_of_many_concurrent_consumes_exactly_one_wins(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            granted = await w.granted()
            outcomes = await asyncio.gather(
                *(w.consume(granted) for _ in range(8)), return_exceptions=True
            )
            won = [o for o in outcomes if not isinstance(o, BaseException)]
            lost = [decode_rpc_error(o) for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
            assert len(won) == 1
            assert len(lost) == 7
            assert {reason_of(e) for e in lost} == {"APPROVAL_ALREADY_CONSUMED"}

    async def test_a_revoke_racing_a_consume_leaves_exactly_one_of_them(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            for _ in range(3):
                granted = await w.granted()
                revoke = w.as_("operator").RevokeApproval(
                    pb.RevokeApprovalRequest(
                        approval_id=granted.approval_id, reason="stop", request_id=rid()
                    )
                )
                results = await asyncio.gather(revoke, w.consume(granted), return_exceptions=True)
                succeeded = [not isinstance(r, BaseException) for r in results]
                assert succeeded.count(True) == 1, results
                final = (
                    await w.as_("operator").GetApproval(
                        pb.GetApprovalRequest(approval_id=granted.approval_id)
                    )
                ).approval
                expected = "REVOKED" if succeeded[0] else "CONSUMED"
                assert state_name(final) == f"APPROVAL_STATE_{expected}"
                # Nothing is consumed after the revoke: a consume now is refused either way.
                after = await failure(w.consume(granted))
                assert after.code is grpc.StatusCode.FAILED_PRECONDITION


class TestWatching:
    async def test_the_waiting_side_hears_the_decision_without_polling(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request()
            stream = w.as_("operator").WatchApproval(
                pb.WatchApprovalRequest(approval_id=asked.approval_id)
            )
            first = await stream.read()
            assert state_name(first.approval) == "APPROVAL_STATE_PENDING"
            await w.decide(asked.approval_id, "dave")
            heard = await asyncio.wait_for(stream.read(), TIMEOUT)
            assert state_name(heard.approval) == "APPROVAL_STATE_GRANTED"
            await w.consume(heard.approval)
            last = await asyncio.wait_for(stream.read(), TIMEOUT)
            assert state_name(last.approval) == "APPROVAL_STATE_CONSUMED"
            assert await stream.read() is grpc.aio.EOF

    async def test_an_undecided_request_expires_on_time_and_the_ledger_says_so(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            soon = timestamp_pb2.Timestamp()
            soon.FromDatetime(datetime.now(UTC) + timedelta(seconds=2))
            asked = await w.request(expire_time=soon)
            stream = w.as_("operator").WatchApproval(
                pb.WatchApprovalRequest(approval_id=asked.approval_id)
            )
            states = [state_name(r.approval) async for r in stream]
            assert states == ["APPROVAL_STATE_PENDING", "APPROVAL_STATE_EXPIRED"]
            late = await failure(w.decide(asked.approval_id, "dave"))
            assert late.metadata["state"] == "APPROVAL_STATE_EXPIRED"
            events = await w.events()
            assert adj.AuditEventType.Name(events[-1].event_type) == (
                "AUDIT_EVENT_TYPE_APPROVAL_EXPIRED"
            )
            assert not events[-1].HasField("actor")

    async def test_a_grant_expires_on_its_own_clock(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            asked = await w.request(grant_lifetime=duration_pb2.Duration(seconds=1))
            granted = await w.decide(asked.approval_id, "dave")
            stream = w.as_("operator").WatchApproval(
                pb.WatchApprovalRequest(approval_id=asked.approval_id)
            )
            states = [state_name(r.approval) async for r in stream]
            assert states[-1] == "APPROVAL_STATE_EXPIRED"
            refused = await failure(w.consume(granted))
            assert reason_of(refused) == "APPROVAL_NOT_GRANTED"


class TestTheLedger:
    async def test_every_step_verifies_and_an_edited_row_is_caught(
        self, tmp_path: Path, adjudication_db: str
    ) -> None:
        async with world(tmp_path, adjudication_db) as w:
            granted = await w.granted()
            auditor = w.stack.auth("operator")
            verdict = await w.adjudication.VerifyAuditChain(
                adj.VerifyAuditChainRequest(), metadata=auditor, timeout=TIMEOUT
            )
            assert verdict.ok, verdict
            tamper_sql.edit(
                w.db,
                "UPDATE approval_steps SET reason = ? WHERE approval_id = ?",
                "I never said that",
                granted.approval_id,
            )
            lost = await failure(
                w.as_("operator").GetApproval(
                    pb.GetApprovalRequest(approval_id=granted.approval_id)
                )
            )
            assert (lost.code, lost.metadata["record"]) == (
                grpc.StatusCode.DATA_LOSS,
                "approval step",
            )
            verdict = await w.adjudication.VerifyAuditChain(
                adj.VerifyAuditChainRequest(), metadata=auditor, timeout=TIMEOUT
            )
            assert not verdict.ok
            assert f"approval step {granted.approval_id}#1" in verdict.detail
            # A consume is refused rather than decided on the edited row.
            refused = await failure(w.consume(granted))
            assert refused.code is grpc.StatusCode.DATA_LOSS


@pytest.mark.parametrize("table", ["approvals", "approval_steps"])
async def test_a_deleted_approval_row_is_reported(
    tmp_path: Path, adjudication_db: str, table: str
) -> None:
    async with world(tmp_path, adjudication_db) as w:
        granted = await w.granted()
        with tamper_sql.tampering(w.db) as raw:
            if table == "approvals":
                raw.execute("DELETE FROM approval_steps WHERE approval_id = ?", granted.approval_id)
            assert (
                raw.execute(f"DELETE FROM {table} WHERE approval_id = ?", granted.approval_id) == 1
            )
        verdict = await w.adjudication.VerifyAuditChain(
            adj.VerifyAuditChainRequest(), metadata=w.stack.auth("operator"), timeout=TIMEOUT
        )
        assert not verdict.ok
        assert "never deleted" in verdict.detail
