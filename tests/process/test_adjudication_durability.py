"""The adjudication server as users run it, under crashes and concurrent reviewers.

Real ``python -m assay.cli.main serve adjudication`` processes on real sockets
and a real SQLite file. Reviewers here are MECHANISM_TEST_FIXTURE test data.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from assay.runtime.status import decode_rpc_error
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, assay_process, free_port

pytestmark = pytest.mark.process
FIXTURE = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE


@contextmanager
def adjudication(db: Path, log: Path) -> Iterator[AssayProcess]:
    port = free_port()
    with assay_process(
        ["serve", "adjudication", "--port", str(port), "--db", str(db)], log, port
    ) as proc:
        yield proc


def seed(stub: pb_grpc.AdjudicationServiceStub, reviewers: list[str], cases: int) -> list[str]:
    for name in reviewers:
        stub.RegisterReviewer(
            pb.RegisterReviewerRequest(reviewer=pb.Reviewer(reviewer_id=name, kind=FIXTURE)),
            timeout=10,
        )
    ids = []
    for _ in range(cases):
        case = pb.Case(
            tenant="durability",
            subject="api:x",
            predicate="retries.mode",
            lineage=pb.CaseLineage(origin="test"),
        )
        for value in ("safe", "unsafe"):
            case.candidate_values.add().string_value = value
        case.local_verdict.string_value = "safe"
        ids.append(stub.EnqueueCase(pb.EnqueueCaseRequest(case=case), timeout=10).case.case_id)
    return ids


def submit_request(
    case_id: str, reviewer: str, request_id: str, round_: int = 0
) -> pb.SubmitReviewRequest:
    request = pb.SubmitReviewRequest(
        request_id=request_id,
        case_id=case_id,
        reviewer_id=reviewer,
        round=round_,
        outcome=pb.REVIEW_OUTCOME_LABEL,
    )
    request.label.string_value = "safe"
    return request


Answer = tuple[int, str, str]  # (round, review id, refusal reason)


@dataclass(frozen=True)
class Race:
    """What the concurrent reviewers saw, gathered for the assertions."""

    first: dict[str, str]
    first_refused: set[str]
    retried: dict[str, str]
    duplicates: set[str]
    round_two: list[int]
    stale: set[str]
    rounds: dict[int, int]


class TestCrash:
    def test_kill_9_mid_stream_loses_no_acknowledged_review(self, tmp_path: Path) -> None:
        """SIGKILL during a stream of reviews: every acknowledged one survives, none twice.
        Each case takes its round's two reviews, from alternating pairs of four reviewers."""
        db = tmp_path / "crash.db"
        reviewers = [f"r{i}" for i in range(4)]
        pairs = [reviewers[:2], reviewers[2:]]
        planned: list[tuple[str, str, str]] = []
        with adjudication(db, tmp_path / "first.log") as proc:
            with grpc.insecure_channel(proc.target) as channel:
                stub = pb_grpc.AdjudicationServiceStub(channel)
                cases = seed(stub, reviewers, 300)
            planned = [(c, r, uuid.uuid4().hex) for i, c in enumerate(cases) for r in pairs[i % 2]]
            acknowledged: dict[str, str] = {}
            lock = threading.Lock()

            def worker(part: list[tuple[str, str, str]]) -> None:
                with grpc.insecure_channel(proc.target) as channel:
                    stub = pb_grpc.AdjudicationServiceStub(channel)
                    for case_id, reviewer, request_id in part:
                        try:
                            reply = stub.SubmitReview(
                                submit_request(case_id, reviewer, request_id), timeout=5
                            )
                        except grpc.RpcError:
                            return  # the server died: stop this client
                        with lock:
                            acknowledged[request_id] = reply.review.review_id

            threads = [threading.Thread(target=worker, args=(planned[i::8],)) for i in range(8)]
            for thread in threads:
                thread.start()
            eventually(
                lambda: len(acknowledged) >= 150,
                message="150 reviews acknowledged before the kill",
                timeout=30,
                interval=0.005,
            )
            proc.process.kill()  # SIGKILL: no shutdown hook runs
            proc.process.wait(timeout=10)
            for thread in threads:
                thread.join(timeout=30)
        assert 150 <= len(acknowledged) < len(planned), "the kill must land mid-stream"

        with (
            adjudication(db, tmp_path / "second.log") as proc,
            grpc.insecure_channel(proc.target) as channel,
        ):
            stub = pb_grpc.AdjudicationServiceStub(channel)
            verdict = stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=30)
            assert verdict.ok, verdict.detail
            # Retrying every planned request: acknowledged ones return the first result.
            for case_id, reviewer, request_id in planned:
                reply = stub.SubmitReview(submit_request(case_id, reviewer, request_id), timeout=10)
                if request_id in acknowledged:
                    assert reply.review.review_id == acknowledged[request_id]
            assert stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=30).ok
        raw = sqlite3.connect(db)
        try:
            stored = {row[0] for row in raw.execute("SELECT review_id FROM reviews")}
            assert set(acknowledged.values()) <= stored
            count, distinct = raw.execute(
                "SELECT COUNT(*), COUNT(DISTINCT case_id || '|' || reviewer_id) FROM reviews"
            ).fetchone()
            assert count == distinct == len(planned)
        finally:
            raw.close()


class TestConcurrency:
    def test_fifty_concurrent_reviewers(self, tmp_path: Path) -> None:
        """50 reviewers race for the same cases: each round takes exactly two reviews, the rest
        are refused by name; nothing lost, duplicated or cross-round."""
        reviewers = [f"rev{i:02d}" for i in range(50)]
        with adjudication(tmp_path / "conc.db", tmp_path / "conc.log") as proc:
            with grpc.insecure_channel(proc.target) as channel:
                cases = seed(pb_grpc.AdjudicationServiceStub(channel), reviewers, 6)
            race = asyncio.run(self._race(proc.target, reviewers, cases))
        assert len(race.first) == 2 * 6, "each round takes exactly its two reviews"
        assert len(set(race.first.values())) == 2 * 6, "every review has its own id"
        assert race.first_refused == {"ERROR_REASON_ROUND_COMPLETE"}
        assert race.retried == race.first, "a retry with the same request_id returns the first"
        assert race.duplicates == {
            "ERROR_REASON_REVIEW_ALREADY_SUBMITTED",
            "ERROR_REASON_ROUND_COMPLETE",
        }
        assert sorted(race.round_two) == [0] * 48 + [2, 2]
        assert race.stale == {"ERROR_REASON_ROUND_MISMATCH"}
        assert race.rounds == {1: 2, 2: 2}

    @staticmethod
    async def _race(target: str, reviewers: list[str], cases: list[str]) -> Race:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = pb_grpc.AdjudicationServiceStub(channel)
            keys = {(c, r): uuid.uuid4().hex for c in cases for r in reviewers}

            async def submit(case_id: str, name: str, key: str, round_: int = 0) -> Answer:
                try:
                    reply = await stub.SubmitReview(
                        submit_request(case_id, name, key, round_), timeout=30
                    )
                except grpc.aio.AioRpcError as error:
                    return 0, "", decode_rpc_error(error).reason
                return reply.review.round, reply.review.review_id, ""

            async def reviewer_session(name: str) -> list[tuple[str, Answer]]:
                return [(keys[(c, name)], await submit(c, name, keys[(c, name)])) for c in cases]

            async def merged() -> tuple[dict[str, str], set[str]]:
                parts = await asyncio.gather(*(reviewer_session(n) for n in reviewers))
                answers = [answer for part in parts for answer in part]
                accepted = {key: review_id for key, (_, review_id, _) in answers if review_id}
                refused = {reason for _, (_, _, reason) in answers if reason}
                return accepted, refused

            first, first_refused = await merged()
            retried, _ = await merged()  # the same request ids again, concurrently
            duplicates = {
                reason
                for _, _, reason in await asyncio.gather(
                    *(submit(cases[0], n, uuid.uuid4().hex) for n in reviewers)
                )
            }

            # Close round 1 of the first case, then race round-2 and stale round-1 reviews.
            await stub.ResolveCase(
                pb.ResolveCaseRequest(
                    case_id=cases[0], basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
                ),
                timeout=30,
            )
            await stub.FreezeGoldLabel(pb.FreezeGoldLabelRequest(case_id=cases[0]), timeout=30)
            outcomes = await asyncio.gather(
                *(submit(cases[0], n, uuid.uuid4().hex, 2) for n in reviewers),
                *(submit(cases[0], n, uuid.uuid4().hex, 1) for n in reviewers[:10]),
            )
            detail = await stub.GetCase(pb.GetCaseRequest(case_id=cases[0]), timeout=30)
            rounds: dict[int, int] = {}
            for review in detail.reviews:
                rounds[review.round] = rounds.get(review.round, 0) + 1
            return Race(
                first=first,
                first_refused=first_refused,
                retried=retried,
                duplicates=duplicates,
                round_two=[round_ for round_, _, _ in outcomes[:50]],
                stale={reason for _, _, reason in outcomes[50:]},
                rounds=rounds,
            )
