"""The blocking clients against grpcio-testing's fake channel: what goes on the wire, and
how each scripted answer comes back to the caller.

grpcio-testing plays the server: each test starts the client call in a thread,
takes the RPC from the fake channel, checks the request and metadata the client
sent, and terminates the RPC with a scripted response or a rich error status.
The fake channel ignores timeouts, so a thin recording wrapper around it
captures the ``timeout`` each call was made with. Retries live in the channel's
service config (grpc-core), so they are tested through a real server in
``tests/service/test_client_retries.py``, not here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar, cast

import grpc
import grpc_testing
import pytest
from google.protobuf.descriptor import MethodDescriptor

from assay import errors
from assay.client import (
    AdjudicationClient,
    AlreadyExistsError,
    AssayCallError,
    DataLossError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    PlannerClient,
    ResolverClient,
    UnauthenticatedError,
    UnavailableError,
)
from assay.client.base import REQUEST_ID_HEADER
from assay.client.channel import DEFAULT_TIMEOUT_SECONDS
from assay.runtime.status import to_status
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2, resolution_pb2
from assay.v1 import planner_service_pb2 as ps
from assay.v1 import resolver_service_pb2 as rs

RESOLVER = rs.DESCRIPTOR.services_by_name["ResolverService"]
PLANNER = ps.DESCRIPTOR.services_by_name["PlannerService"]
ADJUDICATION = adj.DESCRIPTOR.services_by_name["AdjudicationService"]
T = TypeVar("T")
WAIT = 10.0

CLAIM = {
    "subject": "api:x",
    "predicate": "idempotency.mode",
    "value": "none",
    "source": "api_spec",
    "confidence": 0.9,
}


class RecordingChannel:
    """Delegates to the fake channel and records the keyword arguments of every call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[dict[str, Any]] = []

    def _wrap(self, make: Callable[..., Any]) -> Callable[..., Any]:
        def factory(path: str, **kwargs: Any) -> Callable[..., Any]:
            stub = make(path, **kwargs)

            def invoke(request: Any, **call_kwargs: Any) -> Any:
                self.calls.append({"path": path, **call_kwargs})
                return stub(request, **call_kwargs)

            return invoke

        return factory

    def unary_unary(self, path: str, **kwargs: Any) -> Callable[..., Any]:
        factory = self._wrap(self.inner.unary_unary)
        return cast(Callable[..., Any], factory(path, **kwargs))

    def unary_stream(self, path: str, **kwargs: Any) -> Callable[..., Any]:
        factory = self._wrap(self.inner.unary_stream)
        return cast(Callable[..., Any], factory(path, **kwargs))

    def close(self) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[tuple[Any, RecordingChannel, ThreadPoolExecutor]]:
    inner = grpc_testing.channel([RESOLVER, PLANNER, ADJUDICATION], grpc_testing.strict_real_time())
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        yield inner, RecordingChannel(inner), pool
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def method(service: Any, name: str) -> MethodDescriptor:
    found: MethodDescriptor = service.methods_by_name[name]
    return found


def take(inner: Any, descriptor: MethodDescriptor) -> tuple[dict[str, str], Any, Any]:
    """The next RPC the client made on ``descriptor``: (metadata, request, rpc), within WAIT."""
    taken: list[Any] = []
    thread = threading.Thread(
        target=lambda: taken.append(inner.take_unary_unary(descriptor)), daemon=True
    )
    thread.start()
    thread.join(WAIT)
    assert taken, f"the client never called {descriptor.full_name}"
    metadata, request, rpc = taken[0]
    return dict(metadata), request, rpc


def succeed(rpc: Any, response: Any) -> None:
    rpc.terminate(response, (), grpc.StatusCode.OK, "")


def fail(rpc: Any, error: errors.AssayError, request_id: str = "srv-1") -> None:
    status = to_status(error, request_id)
    rpc.terminate(None, status.trailing_metadata, status.code, status.details)


def result(future: Future[T]) -> T:
    return future.result(timeout=WAIT)


class TestWhatGoesOnTheWire:
    def test_resolve_sends_the_evidence_and_target_with_the_default_timeout(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """``resolve`` builds a ResolveSemanticRequest from dicts and uses the default timeout."""
        inner, channel, pool = fake
        client = ResolverClient(cast(grpc.Channel, channel))
        future = pool.submit(client.resolve, [CLAIM], "api:x", "idempotency.mode")
        metadata, request, rpc = take(inner, method(RESOLVER, "ResolveSemantic"))
        assert request.subject == "api:x"
        assert request.predicate == "idempotency.mode"
        assert request.evidence.claims[0].source == "api_spec"
        assert REQUEST_ID_HEADER not in metadata
        succeed(
            rpc,
            rs.ResolveSemanticResponse(
                resolution=resolution_pb2.SemanticResolution(
                    subject="api:x", status=resolution_pb2.RESOLUTION_STATUS_RESOLVED
                )
            ),
        )
        assert result(future).status == resolution_pb2.RESOLUTION_STATUS_RESOLVED
        assert channel.calls[0]["timeout"] == DEFAULT_TIMEOUT_SECONDS

    @pytest.mark.parametrize(
        ("client_timeout", "call_timeout", "expected"),
        [(None, None, DEFAULT_TIMEOUT_SECONDS), (4.0, None, 4.0), (4.0, 0.5, 0.5)],
    )
    def test_timeout_is_the_clients_unless_the_call_overrides_it(
        self,
        fake: tuple[Any, RecordingChannel, ThreadPoolExecutor],
        client_timeout: float | None,
        call_timeout: float | None,
        expected: float,
    ) -> None:
        """Every call carries a timeout: the per-call one, else the client's, else the default."""
        inner, channel, pool = fake
        client = (
            PlannerClient(cast(grpc.Channel, channel))
            if client_timeout is None
            else PlannerClient(cast(grpc.Channel, channel), timeout=client_timeout)
        )
        future = pool.submit(client.list_probes, None, timeout=call_timeout)
        _, _, rpc = take(inner, method(PLANNER, "ListProbes"))
        succeed(rpc, ps.ListProbesResponse())
        result(future)
        assert channel.calls[0]["timeout"] == expected

    @pytest.mark.parametrize("bad", [0.0, -1.0])
    def test_a_non_positive_timeout_is_refused_before_calling(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor], bad: float
    ) -> None:
        """A timeout that would mean "no deadline" or "already expired" is a caller error."""
        _, channel, _ = fake
        client = ResolverClient(cast(grpc.Channel, channel))
        with pytest.raises(ValueError, match="timeout"):
            client.get_resolver_policy(timeout=bad)
        with pytest.raises(ValueError, match="timeout"):
            ResolverClient(cast(grpc.Channel, channel), timeout=bad)
        assert channel.calls == []

    def test_x_request_id_and_client_metadata_are_sent(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """``x_request_id`` becomes the x-request-id header, next to the client's own metadata."""
        inner, channel, pool = fake
        client = ResolverClient(cast(grpc.Channel, channel), metadata=[("x-team", "payments")])
        future = pool.submit(client.get_resolver_policy, x_request_id="trace-42")
        metadata, _, rpc = take(inner, method(RESOLVER, "GetResolverPolicy"))
        succeed(rpc, rs.GetResolverPolicyResponse())
        result(future)
        assert metadata[REQUEST_ID_HEADER] == "trace-42"
        assert metadata["x-team"] == "payments"

    def test_mutating_requests_get_a_request_id_when_none_is_given(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """A mutating request without request_id gets a fresh one; the caller's message is not
        modified, so two calls with it get two ids."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        request = adj.FreezeGoldLabelRequest(case_id="case_1")
        ids = []
        for _ in range(2):
            future = pool.submit(client.freeze_gold_label, request)
            _, sent, rpc = take(inner, method(ADJUDICATION, "FreezeGoldLabel"))
            succeed(rpc, adj.FreezeGoldLabelResponse())
            result(future)
            ids.append(sent.request_id)
        assert all(len(i) == 32 for i in ids)
        assert ids[0] != ids[1]
        assert request.request_id == ""

    def test_a_given_request_id_is_kept(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """The caller's own request_id (a retry key across processes) is sent unchanged."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future = pool.submit(
            client.enqueue,
            tenant="t",
            subject="s",
            predicate="p",
            candidate_values=["a", "b"],
            local_verdict="a",
            request_id="mine-1",
        )
        _, sent, rpc = take(inner, method(ADJUDICATION, "EnqueueCase"))
        succeed(rpc, adj.EnqueueCaseResponse(case=adj.Case(case_id="case_9")))
        assert result(future).case_id == "case_9"
        assert sent.request_id == "mine-1"
        assert [v.string_value for v in sent.case.candidate_values] == ["a", "b"]
        assert sent.case.local_verdict.string_value == "a"

    def test_read_only_requests_get_no_request_id(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """Requests without a request_id field are sent as given."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future = pool.submit(client.get_case, adj.GetCaseRequest(case_id="case_1"))
        _, sent, rpc = take(inner, method(ADJUDICATION, "GetCase"))
        succeed(rpc, adj.GetCaseResponse())
        result(future)
        assert sent == adj.GetCaseRequest(case_id="case_1")

    def test_review_and_adjudicate_build_the_workflow_requests(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """``review`` sends a LABEL review; ``adjudicate`` an ADJUDICATOR_DECISION."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future: Future[Any] = pool.submit(client.review, "case_1", "fx-a", {"mode": "key"})
        _, sent, rpc = take(inner, method(ADJUDICATION, "SubmitReview"))
        succeed(rpc, adj.SubmitReviewResponse())
        result(future)
        assert sent.outcome == adj.REVIEW_OUTCOME_LABEL
        assert sent.label.struct_value.fields["mode"].string_value == "key"
        future = pool.submit(client.adjudicate, "case_1", "fx-c", "none")
        _, sent, rpc = take(inner, method(ADJUDICATION, "ResolveCase"))
        succeed(rpc, adj.ResolveCaseResponse())
        result(future)
        assert sent.basis == gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
        assert sent.adjudicator_reviewer_id == "fx-c"


class TestErrorMapping:
    @pytest.mark.parametrize(
        ("error", "expected"),
        [
            (
                errors.InvalidArgument(
                    errors.Reason.INVALID_FIELD,
                    "bad",
                    [errors.FieldViolation("evidence.claims[0].confidence", "not in [0, 1]")],
                ),
                InvalidArgumentError,
            ),
            (errors.NotFound(errors.Reason.CASE_NOT_FOUND, "no case"), NotFoundError),
            (
                errors.AlreadyExists(errors.Reason.REVIEWER_ALREADY_EXISTS, "exists"),
                AlreadyExistsError,
            ),
            (
                errors.FailedPrecondition(errors.Reason.ROUND_NOT_RESOLVED, "not yet"),
                FailedPreconditionError,
            ),
            (errors.Unavailable(errors.Reason.RESOLVER_UNAVAILABLE, "down"), UnavailableError),
            (
                errors.Unauthenticated(errors.Reason.CREDENTIALS_EXPIRED, "expired"),
                UnauthenticatedError,
            ),
            (
                errors.PermissionDenied(errors.Reason.ROLE_REQUIRED, "needs operator"),
                PermissionDeniedError,
            ),
            (
                errors.DeadlineExceeded(errors.Reason.RESOLVER_DEADLINE_EXCEEDED, "slow"),
                DeadlineExceededError,
            ),
            (errors.DataLoss(errors.Reason.GOLD_LABEL_DIGEST_MISMATCH, "bad row"), DataLossError),
            (errors.AssayError(errors.Reason.INTERNAL, "boom"), InternalError),
        ],
    )
    def test_each_status_family_raises_its_subclass_with_reason_and_fields(
        self,
        fake: tuple[Any, RecordingChannel, ThreadPoolExecutor],
        error: errors.AssayError,
        expected: type[AssayCallError],
    ) -> None:
        """A rich error status becomes the family's subclass carrying code, reason, fields, id."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future = pool.submit(client.get_case, adj.GetCaseRequest(case_id="case_1"))
        _, _, rpc = take(inner, method(ADJUDICATION, "GetCase"))
        fail(rpc, error, request_id="srv-7")
        with pytest.raises(expected) as caught:
            result(future)
        assert caught.value.reason == str(error.reason)
        assert caught.value.request_id == "srv-7"
        assert caught.value.field_paths() == [v.field for v in error.violations]
        assert isinstance(caught.value.__cause__, grpc.RpcError)

    def test_a_plain_status_without_details_still_maps(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """A bare DEADLINE_EXCEEDED (no rich details, as grpc-core sends it) maps by code."""
        inner, channel, pool = fake
        client = ResolverClient(cast(grpc.Channel, channel))
        future = pool.submit(client.get_resolver_policy)
        _, _, rpc = take(inner, method(RESOLVER, "GetResolverPolicy"))
        rpc.terminate(None, (), grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        with pytest.raises(DeadlineExceededError) as caught:
            result(future)
        assert caught.value.reason == ""
        assert caught.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


def take_stream(inner: Any, descriptor: MethodDescriptor) -> tuple[Any, Any]:
    """The next server-streaming RPC on ``descriptor``: (request, rpc), within WAIT."""
    taken: list[Any] = []
    thread = threading.Thread(
        target=lambda: taken.append(inner.take_unary_stream(descriptor)), daemon=True
    )
    thread.start()
    thread.join(WAIT)
    assert taken, f"the client never called {descriptor.full_name}"
    _, request, rpc = taken[0]
    return request, rpc


def records(n: int) -> adj.ExportCorpusResponse:
    return adj.ExportCorpusResponse(
        batch=adj.CorpusRecordBatch(
            records=[adj.CorpusRecord(case=adj.BlindedCase(case_id=f"c{i}")) for i in range(n)]
        )
    )


class TestExportStream:
    def test_records_then_the_manifest(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """Batches are flattened into records; the manifest is yielded last."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future = pool.submit(lambda: list(client.export(tenant="t", batch_size=2)))
        request, rpc = take_stream(inner, method(ADJUDICATION, "ExportCorpus"))
        assert (request.tenant, request.batch_size) == ("t", 2)
        rpc.send_response(records(2))
        rpc.send_response(records(1))
        rpc.send_response(adj.ExportCorpusResponse(manifest=adj.ExportManifest(record_count=3)))
        rpc.terminate((), grpc.StatusCode.OK, "")
        items = result(future)
        assert [type(i).__name__ for i in items] == ["CorpusRecord"] * 3 + ["ExportManifest"]

    def test_a_stream_without_its_manifest_is_data_loss(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """A stream that ends OK but without a manifest is not passed off as complete."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future = pool.submit(lambda: list(client.export()))
        _, rpc = take_stream(inner, method(ADJUDICATION, "ExportCorpus"))
        rpc.send_response(records(2))
        rpc.terminate((), grpc.StatusCode.OK, "")
        with pytest.raises(DataLossError, match="without a manifest"):
            result(future)

    def test_an_error_mid_stream_maps_to_its_subclass(
        self, fake: tuple[Any, RecordingChannel, ThreadPoolExecutor]
    ) -> None:
        """DATA_LOSS from the server after some records raises DataLossError with its reason."""
        inner, channel, pool = fake
        client = AdjudicationClient(cast(grpc.Channel, channel))
        future = pool.submit(lambda: list(client.export()))
        _, rpc = take_stream(inner, method(ADJUDICATION, "ExportCorpus"))
        rpc.send_response(records(1))
        status = to_status(errors.DataLoss(errors.Reason.GOLD_LABEL_DIGEST_MISMATCH, "bad row"))
        rpc.terminate(status.trailing_metadata, status.code, status.details)
        with pytest.raises(DataLossError) as caught:
            result(future)
        assert caught.value.reason == "ERROR_REASON_GOLD_LABEL_DIGEST_MISMATCH"
