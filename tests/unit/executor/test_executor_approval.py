"""The approval gate alone: only a grant this run consumed, for this candidate, lets it act.

A scripted stand-in for ApprovalService's client drives ``ask_and_wait`` through each way
an approval can end; the real service is exercised in tests/service/test_executor_approvals.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from assay.client.errors import AssayCallError
from assay.executor import approval as gate
from assay.executor.approval import Ask, approval_reason, ask_and_wait
from assay.executor.model import ApprovalAsked, ApprovalOutcome, Settings
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

P = pb
CANDIDATE = plan_pb2.AcquisitionCandidate(
    candidate_id="rerun_test/process_result", candidate_digest="sha256:" + "a" * 64
)
ASK = Ask(CANDIDATE, "RERUN_TEST", "why", "executor-run-1")


def approval(state: int, *steps: tuple[int, str, str]) -> pb.Approval:
    made = pb.Approval(approval_id="approval_1", tenant="acme", quorum=1, state=state)  # type: ignore[arg-type]
    made.requester.subject = "operator"
    for kind, who, reason in steps:
        step = made.steps.add(kind=kind, reason=reason)
        step.actor.subject = who
    return made


GRANTED = approval(P.APPROVAL_STATE_GRANTED, (P.APPROVAL_STEP_KIND_APPROVED, "dave", "ok"))


class Service:
    """Answers as the service would, from a script; records what the gate sent."""

    def __init__(
        self,
        changes: list[pb.Approval],
        ask_error: AssayCallError | None = None,
        use_error: AssayCallError | None = None,
        after_use_error: pb.Approval | None = None,
    ) -> None:
        self.changes = changes
        self.ask_error = ask_error
        self.use_error = use_error
        self.after_use_error = after_use_error
        self.consumed: list[str] = []
        self.revoked: list[str] = []
        self.asked: dict[str, Any] = {}
        self.used = asyncio.Event()
        self.last_use = pb.Approval()

    async def ask(self, *args: Any, **kwargs: Any) -> pb.Approval:
        if self.ask_error is not None:
            raise self.ask_error
        self.asked = {"args": args, **kwargs}
        return approval(P.APPROVAL_STATE_PENDING)

    async def watch(
        self,
        approval_id: str,
        *,
        timeout: float,  # noqa: ASYNC109 - the gRPC deadline the real client sends
    ) -> AsyncIterator[pb.Approval]:
        yield approval(P.APPROVAL_STATE_PENDING)
        for change in self.changes:
            yield change
        await self.used.wait()  # until the grant is used, if ever: the stream stays open
        yield self.last_use

    async def consume(self, approval_id: str, digest: str, request_id: str = "") -> pb.Approval:
        if self.use_error is not None:
            raise self.use_error
        self.consumed.append(digest)
        used = pb.Approval()
        used.CopyFrom(GRANTED)
        used.state = P.APPROVAL_STATE_CONSUMED
        self.last_use = used
        self.used.set()  # the server then pushes CONSUMED and ends the stream
        return used

    async def get(self, approval_id: str) -> pb.Approval:
        assert self.after_use_error is not None
        return self.after_use_error

    async def revoke(self, approval_id: str, reason: str) -> pb.Approval:
        self.revoked.append(reason)
        return approval(P.APPROVAL_STATE_REVOKED)


async def run(service: Service, wait: float = 30.0) -> tuple[Any, list[ApprovalAsked]]:
    seen: list[ApprovalAsked] = []
    settings = Settings("suite:unit", "tests.pass", tenant="acme", approval_wait=wait)
    record = await ask_and_wait(service, settings, ASK, seen.append)  # type: ignore[arg-type]
    return record, seen


def failed(code: grpc.StatusCode, reason: str = "") -> AssayCallError:
    return AssayCallError(code, "refused", reason)


class TestTheGate:
    async def test_a_grant_is_used_once_with_this_candidates_digest(self) -> None:
        """GRANTED: consumed with the candidate's own digest; the approvers are recorded."""
        service = Service([GRANTED])
        record, seen = await run(service)
        assert (record.outcome, record.decided_by) == (ApprovalOutcome.CONSUMED, ("dave",))
        assert service.consumed == [CANDIDATE.candidate_digest]
        assert [(s.approval_id, s.quorum, s.requester) for s in seen] == [
            ("approval_1", 1, "operator")
        ]
        assert service.asked["request_id"] == "executor-run-1"
        assert service.asked["args"][:3] == ("acme", "suite:unit", "tests.pass")

    @pytest.mark.parametrize(
        ("state", "kind", "outcome"),
        [
            (P.APPROVAL_STATE_DENIED, P.APPROVAL_STEP_KIND_DENIED, ApprovalOutcome.DENIED),
            (P.APPROVAL_STATE_REVOKED, P.APPROVAL_STEP_KIND_REVOKED, ApprovalOutcome.REVOKED),
            (P.APPROVAL_STATE_EXPIRED, P.APPROVAL_STEP_KIND_EXPIRED, ApprovalOutcome.EXPIRED),
        ],
    )
    async def test_an_ending_without_a_grant_is_never_used(
        self, state: int, kind: int, outcome: ApprovalOutcome
    ) -> None:
        """DENIED, REVOKED, EXPIRED: nothing consumed; who ended it and why are kept."""
        service = Service([approval(state, (kind, "dave", "no"))])
        record, _ = await run(service)
        assert (record.outcome, record.decided_by, record.reason) == (outcome, ("dave",), "no")
        assert service.consumed == []

    async def test_no_decision_in_time_times_out_and_withdraws_the_request(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Still PENDING when the wait ends: TIMEOUT, the request revoked, nothing used."""
        monkeypatch.setattr(gate, "WATCH_GRACE_SECONDS", 0.0)
        service = Service([])
        record, _ = await run(service, wait=0.05)
        assert record.outcome is ApprovalOutcome.TIMEOUT
        assert service.consumed == []
        assert service.revoked == ["the executor stopped waiting after 0.05s"]

    async def test_a_grant_revoked_before_its_use_is_reported_as_revoked(self) -> None:
        """The use is refused (revoked in between): the run says REVOKED and does not act."""
        revoked = approval(P.APPROVAL_STATE_REVOKED, (P.APPROVAL_STEP_KIND_REVOKED, "eve", "x"))
        service = Service(
            [GRANTED],
            use_error=failed(grpc.StatusCode.FAILED_PRECONDITION, "APPROVAL_NOT_GRANTED"),
            after_use_error=revoked,
        )
        record, _ = await run(service)
        assert (record.outcome, record.decided_by) == (ApprovalOutcome.REVOKED, ("eve",))

    async def test_a_refused_use_that_the_approval_does_not_explain_is_refused(self) -> None:
        """Another candidate's digest, say: REFUSED, with the service's words."""
        service = Service(
            [GRANTED],
            use_error=failed(grpc.StatusCode.FAILED_PRECONDITION, "APPROVAL_CANDIDATE_MISMATCH"),
            after_use_error=GRANTED,
        )
        record, _ = await run(service)
        assert record.outcome is ApprovalOutcome.REFUSED
        assert "APPROVAL_CANDIDATE_MISMATCH" in record.reason

    async def test_a_refused_request_is_refused_and_nothing_is_watched(self) -> None:
        """E.g. a dev-mode server: AUTHENTICATION_REQUIRED, no approval id, nothing asked."""
        service = Service(
            [], ask_error=failed(grpc.StatusCode.FAILED_PRECONDITION, "AUTHENTICATION_REQUIRED")
        )
        record, seen = await run(service)
        assert (record.outcome, record.approval_id, seen) == (ApprovalOutcome.REFUSED, "", [])
        assert "AUTHENTICATION_REQUIRED" in record.reason


class TestTheReason:
    def test_it_names_the_run_the_target_and_the_missing_grants(self) -> None:
        """What an approver reads first: which run, about what, lacking what."""
        settings = Settings("suite:unit", "tests.pass")
        text = approval_reason(
            "ab12", settings, "CONFLICTED", "RERUN_TEST", "rerun_test/x", ["PROCESS_SPAWN"]
        )
        assert text.startswith("executor run ab12: tests.pass of suite:unit is CONFLICTED")
        assert "needs PROCESS_SPAWN, not granted to this run" in text

    def test_it_fits_the_services_limit(self) -> None:
        """A huge subject cannot push the reason past 2,000 characters."""
        settings = Settings("s" * 5000, "p")
        assert len(approval_reason("t", settings, "CONFLICTED", "X", "x", [])) == 2000
