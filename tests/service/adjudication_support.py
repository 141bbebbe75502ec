"""Shared helpers for the adjudication service tests: a real server on a temporary database.

Reviewers registered here are explicit test data: MECHANISM_TEST_FIXTURE unless a
test is specifically about HUMAN provenance, and then attested by "test-suite".
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from assay.runtime.server import serving
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.services.adjudication.service import build_spec
from assay.services.adjudication.use_cases.transparency import default_key_path
from assay.services.registry import ServeOptions
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2

FIXTURE = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
HUMAN = gold_pb2.REVIEWER_KIND_HUMAN
TIMEOUT = 10.0


@dataclass
class Server:
    stub: pb_grpc.AdjudicationServiceStub
    db_path: Path
    target: str


def is_postgres(db: str | Path) -> bool:
    return str(db).startswith("postgresql://")


_KEYS = tempfile.TemporaryDirectory(prefix="assay-ledger-keys-")


def ledger_key(db: str | Path) -> Path:
    """The ledger signing key a test server on ``db`` uses: beside a SQLite file (the
    default), one per PostgreSQL database for the session otherwise, so a server restarted
    on the same database signs with the same key, as a deployment's would."""
    if not is_postgres(db):
        return default_key_path(str(db))
    name = hashlib.sha256(str(db).encode()).hexdigest()[:16]
    return Path(_KEYS.name) / f"{name}.pem"


@contextlib.asynccontextmanager
async def adjudication_server(db: str | Path) -> AsyncIterator[Server]:
    """A real grpc.aio server on 127.0.0.1:0 over ``db`` (a SQLite file, or a PostgreSQL URL:
    the ``adjudication_db`` fixture gives both), and a client stub."""
    key = ledger_key(db) if is_postgres(db) else None
    spec = await build_spec(ServeOptions(port=0, db_path=str(db), ledger_signing_key=key))
    async with serving([spec]) as running:
        target = running[0].address
        async with grpc.aio.insecure_channel(target) as channel:
            yield Server(pb_grpc.AdjudicationServiceStub(channel), Path(db), target)


def rid() -> str:
    return uuid.uuid4().hex


async def register(
    stub: pb_grpc.AdjudicationServiceStub,
    reviewer_id: str,
    kind: gold_pb2.ReviewerKind.ValueType = FIXTURE,
) -> pb.Reviewer:
    attested = "test-suite" if kind == HUMAN else ""
    reply = await stub.RegisterReviewer(
        pb.RegisterReviewerRequest(
            request_id=rid(),
            reviewer=pb.Reviewer(reviewer_id=reviewer_id, kind=kind, attested_by=attested),
        ),
        timeout=TIMEOUT,
    )
    reviewer: pb.Reviewer = reply.reviewer
    return reviewer


def case_message(tenant: str = "tenant-a", candidates: Sequence[str] = ("key", "none")) -> pb.Case:
    message = pb.Case(
        tenant=tenant,
        subject="api:payments.create",
        predicate="idempotency.mode",
        evidence_refs=["claim-1", "claim-2"],
        context="two sources disagree",
        lineage=pb.CaseLineage(origin="planner", origin_ref="plan-1"),
    )
    for value in candidates:
        message.candidate_values.add().string_value = value
    message.local_verdict.string_value = candidates[0]
    return message


async def enqueue(stub: pb_grpc.AdjudicationServiceStub, **kwargs: Any) -> pb.Case:
    reply = await stub.EnqueueCase(
        pb.EnqueueCaseRequest(request_id=rid(), case=case_message(**kwargs)), timeout=TIMEOUT
    )
    case: pb.Case = reply.case
    return case


async def review(
    stub: pb_grpc.AdjudicationServiceStub,
    case_id: str,
    reviewer_id: str,
    label: str | None = "key",
    outcome: pb.ReviewOutcome.ValueType = pb.REVIEW_OUTCOME_LABEL,
    round_: int = 0,
    reason: str = "",
) -> pb.SubmitReviewResponse:
    request = pb.SubmitReviewRequest(
        request_id=rid(),
        case_id=case_id,
        reviewer_id=reviewer_id,
        outcome=outcome,
        round=round_,
        reason=reason,
    )
    if label is not None:
        request.label.string_value = label
    reply: pb.SubmitReviewResponse = await stub.SubmitReview(request, timeout=TIMEOUT)
    return reply


async def failure(call: Any) -> DecodedError:
    """Await a call that must fail and decode its rich status."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return decode_rpc_error(error)
    raise AssertionError("the call succeeded but was expected to fail")
