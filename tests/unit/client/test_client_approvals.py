"""The blocking approval client against grpcio-testing's fake channel: what each convenience
method puts on the wire, and what comes back to the caller (the stream of changes, pages
followed, a refusal as a typed error). The real server's answers are tested in
tests/service/test_client_approvals.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import grpc
import grpc_testing
import pytest
from google.protobuf.descriptor import MethodDescriptor

from assay import errors
from assay.client import ApprovalClient, PermissionDeniedError
from assay.client.approval_builders import approval_state, is_final
from assay.runtime.status import to_status
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

SERVICE = pb.DESCRIPTOR.services_by_name["ApprovalService"]
WAIT = 10.0
T = TypeVar("T")
CANDIDATE = plan_pb2.AcquisitionCandidate(
    candidate_id="query_ci_status/process_result",
    probe=plan_pb2.PROBE_KIND_QUERY_CI_STATUS,
    availability=plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
    candidate_digest="sha256:" + "ab" * 32,
)


@pytest.fixture
def fake() -> Iterator[tuple[Any, ApprovalClient, ThreadPoolExecutor]]:
    channel = grpc_testing.channel([SERVICE], grpc_testing.strict_real_time())
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        yield channel, ApprovalClient(cast(grpc.Channel, channel)), pool
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def method(name: str) -> MethodDescriptor:
    found: MethodDescriptor = SERVICE.methods_by_name[name]
    return found


def take(channel: Any, name: str, stream: bool = False) -> tuple[Any, Any]:
    """The next call the client made to RPC ``name``: (request, rpc), within WAIT."""
    taken: list[Any] = []
    taker = channel.take_unary_stream if stream else channel.take_unary_unary
    thread = threading.Thread(target=lambda: taken.append(taker(method(name))), daemon=True)
    thread.start()
    thread.join(WAIT)
    assert taken, f"the client never called {name}"
    _, request, rpc = taken[0]
    return request, rpc


def result(future: Future[T]) -> T:
    return future.result(timeout=WAIT)


def approval(state: int, approval_id: str = "apr_1") -> pb.Approval:
    return pb.Approval(approval_id=approval_id, state=state)  # type: ignore[arg-type]


class TestWhatGoesOnTheWire:
    def test_ask_sends_the_candidate_lifetimes_and_a_fresh_request_id(
        self, fake: tuple[Any, ApprovalClient, ThreadPoolExecutor]
    ) -> None:
        """``ask`` builds RequestApprovalRequest from plain values; no request id: one is made."""
        channel, client, pool = fake
        expire = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        future = pool.submit(
            client.ask,
            "acme",
            "api:x",
            "idempotency.mode",
            CANDIDATE,
            "CI would settle it",
            expire_time=expire,
            grant_lifetime=timedelta(minutes=5),
        )
        sent, rpc = take(channel, "RequestApproval")
        rpc.terminate(
            pb.RequestApprovalResponse(approval=approval(pb.APPROVAL_STATE_PENDING)),
            (),
            grpc.StatusCode.OK,
            "",
        )
        assert result(future).state == pb.APPROVAL_STATE_PENDING
        assert (sent.tenant, sent.subject, sent.predicate) == ("acme", "api:x", "idempotency.mode")
        assert sent.candidate == CANDIDATE
        assert sent.reason == "CI would settle it"
        assert sent.expire_time.ToDatetime(tzinfo=UTC) == expire
        assert sent.grant_lifetime.ToTimedelta() == timedelta(minutes=5)
        assert len(sent.request_id) == 32

    def test_ask_takes_the_candidate_as_plan_json_and_keeps_a_given_request_id(
        self, fake: tuple[Any, ApprovalClient, ThreadPoolExecutor]
    ) -> None:
        """A candidate as a plan prints it (proto JSON) is the same message; ids are kept."""
        channel, client, pool = fake
        as_json = {
            "candidateId": CANDIDATE.candidate_id,
            "probe": "PROBE_KIND_QUERY_CI_STATUS",
            "availability": "AVAILABILITY_REQUIRES_APPROVAL",
            "candidateDigest": CANDIDATE.candidate_digest,
        }
        future = pool.submit(client.ask, "acme", "s", "p", as_json, "why", request_id="mine-1")
        sent, rpc = take(channel, "RequestApproval")
        rpc.terminate(pb.RequestApprovalResponse(), (), grpc.StatusCode.OK, "")
        result(future)
        assert sent.candidate == CANDIDATE
        assert sent.request_id == "mine-1"
        assert not sent.HasField("expire_time")
        assert not sent.HasField("grant_lifetime")

    @pytest.mark.parametrize(
        ("approve", "decision"),
        [(True, pb.APPROVAL_DECISION_APPROVE), (False, pb.APPROVAL_DECISION_DENY)],
    )
    def test_decide_sends_approve_or_deny_with_the_reason(
        self,
        fake: tuple[Any, ApprovalClient, ThreadPoolExecutor],
        approve: bool,
        decision: int,
    ) -> None:
        """``decide(id, True|False, reason)`` is one DecideApprovalRequest with a request id."""
        channel, client, pool = fake
        future = pool.submit(client.decide, "apr_1", approve, "looked at it")
        sent, rpc = take(channel, "DecideApproval")
        rpc.terminate(
            pb.DecideApprovalResponse(approval=approval(pb.APPROVAL_STATE_GRANTED)),
            (),
            grpc.StatusCode.OK,
            "",
        )
        assert result(future).state == pb.APPROVAL_STATE_GRANTED
        assert (sent.approval_id, sent.decision, sent.reason) == ("apr_1", decision, "looked at it")
        assert sent.request_id

    def test_revoke_and_consume_send_their_fields(
        self, fake: tuple[Any, ApprovalClient, ThreadPoolExecutor]
    ) -> None:
        """``revoke`` sends the reason, ``consume`` the candidate digest, each a request id."""
        channel, client, pool = fake
        future = pool.submit(client.revoke, "apr_1", "plan changed", "rev-1")
        sent, rpc = take(channel, "RevokeApproval")
        rpc.terminate(pb.RevokeApprovalResponse(), (), grpc.StatusCode.OK, "")
        result(future)
        assert (sent.approval_id, sent.reason, sent.request_id) == (
            "apr_1",
            "plan changed",
            "rev-1",
        )
        future = pool.submit(client.consume, "apr_1", CANDIDATE.candidate_digest)
        sent, rpc = take(channel, "ConsumeApproval")
        rpc.terminate(pb.ConsumeApprovalResponse(), (), grpc.StatusCode.OK, "")
        result(future)
        assert sent.candidate_digest == CANDIDATE.candidate_digest
        assert len(sent.request_id) == 32

    def test_list_all_follows_pages_with_the_filters(
        self, fake: tuple[Any, ApprovalClient, ThreadPoolExecutor]
    ) -> None:
        """``list_all(tenant, "pending")`` sends the filters on every page until the last."""
        channel, client, pool = fake
        future = pool.submit(lambda: list(client.list_all("acme", "pending")))
        sent, rpc = take(channel, "ListApprovals")
        assert (sent.tenant, sent.state, sent.page_token) == (
            "acme",
            pb.APPROVAL_STATE_PENDING,
            "",
        )
        page = pb.ListApprovalsResponse(
            approvals=[approval(pb.APPROVAL_STATE_PENDING, "apr_2")], next_page_token="t2"
        )
        rpc.terminate(page, (), grpc.StatusCode.OK, "")
        sent, rpc = take(channel, "ListApprovals")
        assert (sent.tenant, sent.state, sent.page_token) == (
            "acme",
            pb.APPROVAL_STATE_PENDING,
            "t2",
        )
        last = pb.ListApprovalsResponse(approvals=[approval(pb.APPROVAL_STATE_PENDING, "apr_1")])
        rpc.terminate(last, (), grpc.StatusCode.OK, "")
        assert [a.approval_id for a in result(future)] == ["apr_2", "apr_1"]


class TestWatch:
    def test_watch_yields_each_change_until_the_stream_ends(
        self, fake: tuple[Any, ApprovalClient, ThreadPoolExecutor]
    ) -> None:
        """Every streamed response becomes its Approval, in order."""
        channel, client, pool = fake
        future = pool.submit(lambda: list(client.watch("apr_1")))
        sent, rpc = take(channel, "WatchApproval", stream=True)
        assert sent.approval_id == "apr_1"
        for state in (pb.APPROVAL_STATE_PENDING, pb.APPROVAL_STATE_GRANTED):
            rpc.send_response(pb.WatchApprovalResponse(approval=approval(state)))
        rpc.send_response(pb.WatchApprovalResponse(approval=approval(pb.APPROVAL_STATE_CONSUMED)))
        rpc.terminate((), grpc.StatusCode.OK, "")
        seen = result(future)
        assert [pb.ApprovalState.Name(a.state) for a in seen] == [
            "APPROVAL_STATE_PENDING",
            "APPROVAL_STATE_GRANTED",
            "APPROVAL_STATE_CONSUMED",
        ]
        assert [is_final(a) for a in seen] == [False, False, True]

    def test_a_refusal_is_the_typed_error_with_the_servers_reason(
        self, fake: tuple[Any, ApprovalClient, ThreadPoolExecutor]
    ) -> None:
        """The requester deciding comes back as PermissionDeniedError, APPROVER_IS_REQUESTER."""
        channel, client, pool = fake
        future = pool.submit(client.decide, "apr_1", True, "mine")
        _, rpc = take(channel, "DecideApproval")
        status = to_status(
            errors.PermissionDenied(errors.Reason.APPROVER_IS_REQUESTER, "you asked for it")
        )
        rpc.terminate(None, status.trailing_metadata, status.code, status.details)
        with pytest.raises(PermissionDeniedError) as caught:
            result(future)
        assert caught.value.reason == "ERROR_REASON_APPROVER_IS_REQUESTER"


class TestStates:
    @pytest.mark.parametrize(
        ("given", "expected"),
        [
            ("pending", pb.APPROVAL_STATE_PENDING),
            ("GRANTED", pb.APPROVAL_STATE_GRANTED),
            ("APPROVAL_STATE_DENIED", pb.APPROVAL_STATE_DENIED),
            (int(pb.APPROVAL_STATE_CONSUMED), pb.APPROVAL_STATE_CONSUMED),
        ],
    )
    def test_a_state_by_short_name_full_name_or_number(
        self, given: int | str, expected: int
    ) -> None:
        """States read like the other enums of the client (``builders.enum_number``)."""
        assert approval_state(given) == expected

    def test_an_unknown_state_is_a_value_error(self) -> None:
        """A misspelt state is the caller's mistake, said before any call."""
        with pytest.raises(ValueError, match="ApprovalState"):
            approval_state("approved")
