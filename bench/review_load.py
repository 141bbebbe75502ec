"""The review load both engines' benchmarks drive: a real server, its reviewers and cases,
and concurrent gRPC clients submitting reviews as in real use.

Shared by the SQLite and PostgreSQL sections of ``bench/adjudication.py`` so the two
measure the same traffic: every case is reviewed twice, each client by its own pair, and
requests are serialized before the clock starts.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence

import grpc
from harness import free_port

from assay.services.adjudication.domain.model import CaseInput, Lineage, Outcome, ReviewerKind
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.storage.interface import Store
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2

FIXTURE = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
SUBMIT = "/assay.v1.AdjudicationService/SubmitReview"
HEALTH = "/grpc.health.v1.Health/Check"
HEALTH_CHECK = b""  # an empty HealthCheckRequest: the overall server status


class Server:
    """``assay serve adjudication`` in a subprocess (its own interpreter and GIL).

    ``db`` is what ``--db`` takes: a SQLite file or a ``postgresql://`` URL, handed over as
    ``ASSAY_DB`` so a password in the URL never shows in the process list; ``extra`` are
    further flags (a PostgreSQL replica needs ``--ledger-signing-key``)."""

    def __init__(self, db: str, event_loop: str, extra: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "assay.cli.main", "serve", "adjudication"]
        command += ["--port", str(self.port), "--log-level", "warning"]
        command += ["--event-loop", event_loop, *extra]
        # A file, not a pipe: a pipe nobody reads could fill and stall the server.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed in stop()
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env={**os.environ, "ASSAY_DB": db},
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(self.target) as channel:
            stub = pb_grpc.AdjudicationServiceStub(channel)
            while True:
                try:
                    stub.ListReviewers(pb.ListReviewersRequest(page_size=1), timeout=1)
                    return
                except grpc.RpcError:
                    if self.process.poll() is not None:
                        self.log.seek(0)
                        why = self.log.read().decode(errors="replace").strip()
                        raise RuntimeError(f"the adjudication server exited: {why}") from None
                    if time.monotonic() > deadline:
                        raise RuntimeError("the adjudication server did not start") from None
                    time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()


async def seed_reviews(target: str, reviewers: int, case_count: int) -> list[str]:
    """Register ``reviewers`` fixture reviewers and enqueue ``case_count`` cases; their ids."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.AdjudicationServiceStub(channel)
        await asyncio.gather(
            *(
                stub.RegisterReviewer(
                    pb.RegisterReviewerRequest(
                        reviewer=pb.Reviewer(reviewer_id=f"r{i}", kind=FIXTURE)
                    )
                )
                for i in range(reviewers)
            )
        )
        ids = []
        for _ in range(case_count):
            case = pb.Case(
                tenant="bench",
                subject="api:x",
                predicate="retries.mode",
                lineage=pb.CaseLineage(origin="bench"),
            )
            for value in ("safe", "unsafe"):
                case.candidate_values.add().string_value = value
            case.local_verdict.string_value = "safe"
            ids.append((await stub.EnqueueCase(pb.EnqueueCaseRequest(case=case))).case.case_id)
        return ids


def assignments(reviewers: int, case_ids: list[str]) -> list[list[str]]:
    """Each case double-reviewed, as in real use: pairs (r0, r1), (r2, r3), ... share cases,
    so every client has its own stream of cases and each case ends with two reviews."""
    plan: list[list[str]] = [[] for _ in range(reviewers)]
    pairs = reviewers // 2
    for k, case_id in enumerate(case_ids):
        first = 2 * (k % pairs)
        plan[first].append(case_id)
        plan[first + 1].append(case_id)
    return plan


def review_bytes(reviewer: str, case_id: str) -> bytes:
    request = pb.SubmitReviewRequest(
        request_id=uuid.uuid4().hex,
        case_id=case_id,
        reviewer_id=reviewer,
        outcome=pb.REVIEW_OUTCOME_LABEL,
    )
    request.label.string_value = "safe"
    data: bytes = request.SerializeToString()
    return data


def review_plan(reviewers: int, case_ids: list[str]) -> list[list[bytes]]:
    """Every client's SubmitReview requests, serialized, in the order it sends them."""
    return [
        [review_bytes(f"r{i}", c) for c in mine]
        for i, mine in enumerate(assignments(reviewers, case_ids))
    ]


async def drive(targets: Sequence[str], method: str, requests: list[list[bytes]]) -> float:
    """Calls/s with one concurrent client per list, each sending its requests in order;
    client ``i`` calls ``targets[i % len(targets)]`` (the clients spread over replicas).

    Requests are serialized beforehand and responses left as bytes, so the client spends
    as little of the shared CPU as possible on protobuf.
    """
    channels = [grpc.aio.insecure_channel(target) for target in targets]
    try:
        calls = [channel.unary_unary(method) for channel in channels]

        async def client(index: int, mine: list[bytes]) -> None:
            call = calls[index % len(calls)]
            for raw in mine:
                await call(raw, timeout=60)

        started = time.perf_counter()
        await asyncio.gather(*(client(i, mine) for i, mine in enumerate(requests)))
        return sum(len(m) for m in requests) / (time.perf_counter() - started)
    finally:
        for channel in channels:
            await channel.close()


async def in_process_reviews(
    open_store: Callable[[], Awaitable[Store]], reviewers: int, case_count: int
) -> float:
    """Reviews/s through the service's own use case (domain rules, retry record, audit event,
    group commit) without gRPC, on the store ``open_store`` opens: what the storage path costs
    on its own."""
    store = await open_store()
    adjudication = Adjudication(store)
    try:
        for i in range(reviewers):
            key = RequestKey("", "RegisterReviewer", "")
            await adjudication.register_reviewer(
                key, f"r{i}", ReviewerKind.MECHANISM_TEST_FIXTURE, "", lambda _: b""
            )
        case_ids = []
        for _ in range(case_count):
            data = CaseInput("bench", "api:x", "retries.mode", ("safe", "unsafe"), (), "",
                             "safe", Lineage("bench"), None)  # fmt: skip
            raw = await adjudication.enqueue_case(
                RequestKey("", "EnqueueCase", ""), data, lambda c: c.case_id.encode()
            )
            case_ids.append(raw.decode())

        plan = assignments(reviewers, case_ids)

        async def client(index: int) -> None:
            for case_id in plan[index]:
                submission = ReviewSubmission(case_id, f"r{index}", 0, Outcome.LABEL, "safe", "")
                key = RequestKey(uuid.uuid4().hex, "SubmitReview", uuid.uuid4().hex)
                await adjudication.submit_review(key, submission, lambda r: r[0].review_id.encode())

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(reviewers)))
        return sum(len(p) for p in plan) / (time.perf_counter() - started)
    finally:
        await store.close()
