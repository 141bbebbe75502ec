"""Bad input for every AdjudicationService RPC: the right code, reason and field, never UNKNOWN.

Missing, malformed or out-of-range fields are INVALID_ARGUMENT with the field
named; unknown ids are NOT_FOUND; rule violations are FAILED_PRECONDITION (or
ALREADY_EXISTS) with their specific reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest

from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    FIXTURE,
    HUMAN,
    Server,
    adjudication_server,
    case_message,
    enqueue,
    failure,
    register,
    review,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
FIELD = "ERROR_REASON_INVALID_FIELD"
TOKEN = "ERROR_REASON_INVALID_PAGE_TOKEN"


def with_case(**changes: Any) -> pb.EnqueueCaseRequest:
    message = case_message()
    for name, value in changes.items():
        if callable(value):
            value(message)
        else:
            setattr(message, name, value)
    return pb.EnqueueCaseRequest(case=message)


def clear(name: str) -> Callable[[pb.Case], None]:
    return lambda message: message.ClearField(name)  # type: ignore[arg-type]


def add_candidate(text: str) -> Callable[[pb.Case], None]:
    return lambda message: setattr(message.candidate_values.add(), "string_value", text)


def submit(**fields: Any) -> pb.SubmitReviewRequest:
    label = fields.pop("label", "key")
    base: dict[str, Any] = {
        "case_id": "{case}",
        "reviewer_id": "ann",
        "outcome": pb.REVIEW_OUTCOME_LABEL,
    }
    base.update(fields)
    request = pb.SubmitReviewRequest(**base)
    if label is not None:
        request.label.string_value = label
    return request


def resolve_request(**fields: Any) -> pb.ResolveCaseRequest:
    label = fields.pop("label", None)
    request = pb.ResolveCaseRequest(**fields)
    if label is not None:
        request.label.string_value = label
    return request


# (rpc, request, field path) — all INVALID_ARGUMENT / INVALID_FIELD unless noted.
FIELD_CASES: list[tuple[str, Any, str]] = [
    (
        "RegisterReviewer",
        pb.RegisterReviewerRequest(reviewer=pb.Reviewer(kind=FIXTURE)),
        "reviewer.reviewer_id",
    ),
    (
        "RegisterReviewer",
        pb.RegisterReviewerRequest(reviewer=pb.Reviewer(reviewer_id="Ann!", kind=FIXTURE)),
        "reviewer.reviewer_id",
    ),
    (
        "RegisterReviewer",
        pb.RegisterReviewerRequest(reviewer=pb.Reviewer(reviewer_id="ann")),
        "reviewer.kind",
    ),
    (
        "RegisterReviewer",
        pb.RegisterReviewerRequest(
            request_id="has space", reviewer=pb.Reviewer(reviewer_id="x", kind=FIXTURE)
        ),
        "request_id",
    ),
    ("GetReviewer", pb.GetReviewerRequest(), "reviewer_id"),
    ("ListReviewers", pb.ListReviewersRequest(page_size=-1), "page_size"),
    ("ListReviewers", pb.ListReviewersRequest(page_size=1001), "page_size"),
    ("EnqueueCase", with_case(tenant=""), "case.tenant"),
    ("EnqueueCase", with_case(tenant="a b"), "case.tenant"),
    ("EnqueueCase", with_case(subject=""), "case.subject"),
    ("EnqueueCase", with_case(predicate=""), "case.predicate"),
    ("EnqueueCase", with_case(candidate_values=clear("candidate_values")), "case.candidate_values"),
    ("EnqueueCase", with_case(x=add_candidate("key")), "case.candidate_values[2]"),
    ("EnqueueCase", with_case(local_verdict=clear("local_verdict")), "case.local_verdict"),
    ("EnqueueCase", with_case(lineage=clear("lineage")), "case.lineage.origin"),
    ("EnqueueCase", with_case(context="x" * 5000), "case.context"),
    (
        "EnqueueCase",
        with_case(e=lambda m: setattr(m.expire_time, "seconds", 1)),
        "case.expire_time",
    ),
    ("GetCase", pb.GetCaseRequest(), "case_id"),
    ("GetBlindedCase", pb.GetBlindedCaseRequest(), "case_id"),
    ("ListQueue", pb.ListQueueRequest(), "reviewer_id"),
    ("ListQueue", pb.ListQueueRequest(reviewer_id="ann", tenant="a b"), "tenant"),
    ("SubmitReview", submit(case_id=""), "case_id"),
    ("SubmitReview", submit(reviewer_id=""), "reviewer_id"),
    ("SubmitReview", submit(outcome=pb.REVIEW_OUTCOME_UNSPECIFIED), "outcome"),
    ("SubmitReview", submit(label=None), "label"),
    ("SubmitReview", submit(reason="because"), "reason"),
    ("SubmitReview", submit(outcome=pb.REVIEW_OUTCOME_UNRESOLVED, label=None), "reason"),
    ("SubmitReview", submit(round=-1), "round"),
    ("GetCaseState", pb.GetCaseStateRequest(), "case_id"),
    ("ResolveCase", resolve_request(case_id="{case}"), "basis"),
    (
        "ResolveCase",
        resolve_request(
            case_id="{case}",
            basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
            adjudicator_reviewer_id="cy",
        ),
        "label",
    ),
    (
        "ResolveCase",
        resolve_request(
            case_id="{case}", basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT, label="key"
        ),
        "label",
    ),
    (
        "ResolveCase",
        resolve_request(basis=gold_pb2.RESOLUTION_BASIS_UNRESOLVED),
        "case_id",
    ),
    ("FreezeGoldLabel", pb.FreezeGoldLabelRequest(), "case_id"),
    (
        "FreezeGoldLabel",
        pb.FreezeGoldLabelRequest(case_id="{case}", expected_revision=-1),
        "expected_revision",
    ),
    (
        "ListGoldLabelRevisions",
        pb.ListGoldLabelRevisionsRequest(page_size=-5),
        "page_size",
    ),
    ("ListGoldLabelRevisions", pb.ListGoldLabelRevisionsRequest(case_id="a b"), "case_id"),
    ("ExportCorpus", pb.ExportCorpusRequest(batch_size=5001), "batch_size"),
    ("ExportCorpus", pb.ExportCorpusRequest(tenant="a b"), "tenant"),
    ("ComputeAgreement", pb.ComputeAgreementRequest(tenant="a b"), "tenant"),
    ("ListAuditEvents", pb.ListAuditEventsRequest(page_size=-1), "page_size"),
    ("DeleteTenantRecords", pb.DeleteTenantRecordsRequest(), "tenant"),
    (
        "SweepExpiredRecords",
        pb.SweepExpiredRecordsRequest(request_id="x" * 129),
        "request_id",
    ),
]

TOKEN_CASES: list[tuple[str, Any]] = [
    ("ListReviewers", pb.ListReviewersRequest(page_token="bogus")),
    ("ListQueue", pb.ListQueueRequest(reviewer_id="ann", page_token="bogus")),
    ("ListGoldLabelRevisions", pb.ListGoldLabelRevisionsRequest(page_token="bogus")),
    ("ListAuditEvents", pb.ListAuditEventsRequest(page_token="bogus")),
]

NOT_FOUND_CASES: list[tuple[str, Any, str]] = [
    ("GetReviewer", pb.GetReviewerRequest(reviewer_id="nobody"), "REVIEWER_NOT_FOUND"),
    ("GetCase", pb.GetCaseRequest(case_id="case_missing"), "CASE_NOT_FOUND"),
    ("GetBlindedCase", pb.GetBlindedCaseRequest(case_id="case_missing"), "CASE_NOT_FOUND"),
    ("GetCaseState", pb.GetCaseStateRequest(case_id="case_missing"), "CASE_NOT_FOUND"),
    ("ListQueue", pb.ListQueueRequest(reviewer_id="nobody"), "REVIEWER_NOT_FOUND"),
    ("SubmitReview", submit(case_id="case_missing"), "CASE_NOT_FOUND"),
    ("SubmitReview", submit(reviewer_id="nobody"), "REVIEWER_NOT_FOUND"),
    (
        "ResolveCase",
        resolve_request(case_id="case_missing", basis=gold_pb2.RESOLUTION_BASIS_UNRESOLVED),
        "CASE_NOT_FOUND",
    ),
    (
        "ResolveCase",
        resolve_request(
            case_id="{case}",
            basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
            label="key",
            adjudicator_reviewer_id="nobody",
        ),
        "REVIEWER_NOT_FOUND",
    ),
    ("FreezeGoldLabel", pb.FreezeGoldLabelRequest(case_id="case_missing"), "CASE_NOT_FOUND"),
]


@pytest.fixture
async def server(adjudication_db: str) -> AsyncIterator[tuple[Server, str]]:
    async with adjudication_server(adjudication_db) as running:
        await register(running.stub, "ann")
        await register(running.stub, "bob")
        case = await enqueue(running.stub)
        yield running, case.case_id


async def call(server: Server, rpc: str, request: Any, case_id: str) -> Any:
    for descriptor, _ in request.ListFields():
        value = getattr(request, descriptor.name)
        if isinstance(value, str) and value == "{case}":
            setattr(request, descriptor.name, case_id)
    method = getattr(server.stub, rpc)
    if rpc == "ExportCorpus":

        async def drain() -> None:
            async for _ in method(request, timeout=10):
                pass

        return await drain()
    return await method(request, timeout=10)


def _copy(request: Any) -> Any:
    fresh = type(request)()
    fresh.CopyFrom(request)
    return fresh


class TestInvalidFields:
    @pytest.mark.parametrize(
        ("rpc", "request_", "path"), FIELD_CASES, ids=[f"{c[0]}:{c[2]}" for c in FIELD_CASES]
    )
    async def test_field_is_named(
        self, server: tuple[Server, str], rpc: str, request_: Any, path: str
    ) -> None:
        """INVALID_ARGUMENT naming the exact field path."""
        running, case_id = server
        error = await failure(call(running, rpc, _copy(request_), case_id))
        assert error.code == INVALID
        assert error.reason == FIELD
        assert [v.field for v in error.violations] == [path]

    @pytest.mark.parametrize(("rpc", "request_"), TOKEN_CASES, ids=[c[0] for c in TOKEN_CASES])
    async def test_foreign_page_tokens(
        self, server: tuple[Server, str], rpc: str, request_: Any
    ) -> None:
        """A page token the server did not issue is INVALID_PAGE_TOKEN on page_token."""
        running, case_id = server
        error = await failure(call(running, rpc, _copy(request_), case_id))
        assert (error.code, error.reason) == (INVALID, TOKEN)
        assert [v.field for v in error.violations] == ["page_token"]

    async def test_human_without_attestation(self, server: tuple[Server, str]) -> None:
        """A HUMAN registration without attested_by is refused with its own reason."""
        running, _ = server
        error = await failure(
            running.stub.RegisterReviewer(
                pb.RegisterReviewerRequest(reviewer=pb.Reviewer(reviewer_id="hu", kind=HUMAN))
            )
        )
        assert error.reason == "ERROR_REASON_HUMAN_REVIEWER_REQUIRES_ATTESTATION"
        assert [v.field for v in error.violations] == ["reviewer.attested_by"]

    async def test_label_outside_candidates(self, server: tuple[Server, str]) -> None:
        """A label nobody proposed is INVALID_ARGUMENT LABEL_NOT_A_CANDIDATE on label."""
        running, case_id = server
        error = await failure(review(running.stub, case_id, "ann", "maybe"))
        assert (error.code, error.reason) == (INVALID, "ERROR_REASON_LABEL_NOT_A_CANDIDATE")
        assert [v.field for v in error.violations] == ["label"]

    async def test_malformed_bytes(self, server: tuple[Server, str]) -> None:
        """Unparseable request bytes are MALFORMED_REQUEST, not UNKNOWN."""
        running, _ = server
        async with grpc.aio.insecure_channel(running.target) as channel:
            raw = channel.unary_unary("/assay.v1.AdjudicationService/SubmitReview")
            error = await failure(raw(b"\xff\xff\xff", timeout=10))
        assert (error.code, error.reason) == (INVALID, "ERROR_REASON_MALFORMED_REQUEST")


# (rpc, request with several bad fields, every field path it must name, in order).
SEVERAL_CASES: list[tuple[str, Any, list[str]]] = [
    (
        "RegisterReviewer",
        pb.RegisterReviewerRequest(request_id="has space", reviewer=pb.Reviewer()),
        ["request_id", "reviewer.reviewer_id", "reviewer.kind"],
    ),
    (
        "EnqueueCase",
        with_case(tenant="a b", subject="", context="x" * 5000, lineage=clear("lineage")),
        ["case.tenant", "case.subject", "case.context", "case.lineage.origin"],
    ),
    (
        "SubmitReview",
        submit(case_id="", reviewer_id="Ann!", round=-1, reason="because"),
        ["case_id", "reviewer_id", "round", "reason"],
    ),
    (
        "ResolveCase",
        resolve_request(basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION),
        ["case_id", "label", "adjudicator_reviewer_id"],
    ),
    (
        "FreezeGoldLabel",
        pb.FreezeGoldLabelRequest(request_id="has space", expected_revision=-1),
        ["request_id", "case_id", "expected_revision"],
    ),
    (
        "ListQueue",
        pb.ListQueueRequest(tenant="a b", page_size=-1),
        ["reviewer_id", "tenant", "page_size"],
    ),
    (
        "ListGoldLabelRevisions",
        pb.ListGoldLabelRevisionsRequest(case_id="a b", page_size=-1, page_token="forged"),
        ["case_id", "page_size", "page_token"],
    ),
]


class TestSeveralBadFields:
    @pytest.mark.parametrize(
        ("rpc", "request_", "paths"), SEVERAL_CASES, ids=[c[0] for c in SEVERAL_CASES]
    )
    async def test_every_bad_field_is_named(
        self, server: tuple[Server, str], rpc: str, request_: Any, paths: list[str]
    ) -> None:
        """One INVALID_ARGUMENT naming every bad field of the request, not only the first."""
        running, case_id = server
        error = await failure(call(running, rpc, _copy(request_), case_id))
        assert error.code == INVALID
        assert [v.field for v in error.violations] == paths
        assert f"(and {len(paths) - 1} more)" in error.message


class TestUnknownIds:
    @pytest.mark.parametrize(
        ("rpc", "request_", "reason"),
        NOT_FOUND_CASES,
        ids=[f"{c[0]}:{c[2]}" for c in NOT_FOUND_CASES],
    )
    async def test_not_found(
        self, server: tuple[Server, str], rpc: str, request_: Any, reason: str
    ) -> None:
        """Unknown case or reviewer ids are NOT_FOUND with the specific reason."""
        running, case_id = server
        error = await failure(call(running, rpc, _copy(request_), case_id))
        assert error.code == grpc.StatusCode.NOT_FOUND
        assert error.reason == f"ERROR_REASON_{reason}"


class TestRuleViolations:
    async def test_rules_are_failed_precondition_with_reasons(
        self, server: tuple[Server, str]
    ) -> None:
        """Each broken rule has its own reason; duplicates are ALREADY_EXISTS."""
        running, case_id = server
        stub = running.stub
        unanimous = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
        error = await failure(
            stub.ResolveCase(pb.ResolveCaseRequest(case_id=case_id, basis=unanimous))
        )
        assert (error.code, error.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "ERROR_REASON_NOT_ENOUGH_REVIEWS",
        )
        error = await failure(stub.FreezeGoldLabel(pb.FreezeGoldLabelRequest(case_id=case_id)))
        assert error.reason == "ERROR_REASON_ROUND_NOT_RESOLVED"
        await review(stub, case_id, "ann", "key")
        duplicate = await failure(review(stub, case_id, "ann", "none"))
        assert duplicate.code == grpc.StatusCode.ALREADY_EXISTS
        assert duplicate.reason == "ERROR_REASON_REVIEW_ALREADY_SUBMITTED"
        await review(stub, case_id, "bob", "none")
        error = await failure(
            stub.ResolveCase(pb.ResolveCaseRequest(case_id=case_id, basis=unanimous))
        )
        assert error.reason == "ERROR_REASON_REVIEWS_NOT_UNANIMOUS"
        await register(stub, "cy")
        request = pb.ResolveCaseRequest(
            case_id=case_id,
            basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
            adjudicator_reviewer_id="cy",
        )
        request.label.string_value = "key"
        await stub.ResolveCase(request)
        again = await failure(stub.ResolveCase(request))
        assert again.reason == "ERROR_REASON_ROUND_ALREADY_RESOLVED"
        late = await failure(review(stub, case_id, "cy", "key"))
        assert late.reason == "ERROR_REASON_ROUND_ALREADY_RESOLVED"

    async def test_registering_twice_is_already_exists(self, server: tuple[Server, str]) -> None:
        """A second registration of an id (without the same request_id) is ALREADY_EXISTS."""
        running, _ = server
        error = await failure(register(running.stub, "ann"))
        assert error.code == grpc.StatusCode.ALREADY_EXISTS
        assert error.reason == "ERROR_REASON_REVIEWER_ALREADY_EXISTS"
