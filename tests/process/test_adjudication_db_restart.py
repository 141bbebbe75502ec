"""PostgreSQL restarted under writes through two adjudication replicas: UNAVAILABLE, never INTERNAL.

A server of its own (restarting the session's would disturb other tests), two
``assay serve adjudication`` replicas on one database, and a bounded write workload:

- library clients (the typed asyncio client on the replicas' multi-address target, its
  retries as shipped) enqueue cases and review them; each call must succeed as the
  library returns it, with no retry of the test's own;
- a probe on a channel without retries registers reviewers back to back, each with its
  own request id, and records every status it gets; a refused registration is sent again
  with the same id after the refusal's RetryInfo delay, until acknowledged.

Once writes flow, a checkpoint is taken and ``pg_ctl restart -m fast`` (sessions
terminated, checkpoint) or ``-m immediate`` (no checkpoint: crash recovery) runs; the
workload goes on until the probe has been acknowledged after the restart. Then: no call
got INTERNAL; every call the outage caught got UNAVAILABLE with reason STORAGE_UNAVAILABLE
and a RetryInfo delay; every library call succeeded; every acknowledged write reads back on
both replicas; the ledger verifies and extends the checkpoint; no replica logged a
traceback. ``workload`` takes the disruption as a function, so the failover test
(``test_adjudication_failover``) runs the same load and checks.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from assay.client import builders
from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.errors import AssayCallError
from assay.rpc_errors import decode_rpc_error
from assay.tlog.merkle import verify_consistency
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.support.postgres import running_server
from tests.support.processes import AssayProcess, free_port, service_process

pytestmark = [pytest.mark.process, pytest.mark.timeout(240)]

LIBRARY_CLIENTS = 4
# Bounds on the workload: writes per library client, and seconds for the whole run.
MAX_CASES_PER_CLIENT = 400
MAX_PROBES = 20_000
RUN_SECONDS = 90.0
# Writes acknowledged before the restart is started, and probe acknowledgements after it.
BEFORE_RESTART = 60
AFTER_RESTART = 20
CALL_TIMEOUT_SECONDS = 30.0
FIXTURE = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
STORAGE_UNAVAILABLE = "ERROR_REASON_STORAGE_UNAVAILABLE"


@dataclass
class Run:
    """What the workload saw, shared by its tasks."""

    acknowledged: int = 0
    restarted: asyncio.Event = field(default_factory=asyncio.Event)
    probes_after_restart: int = 0
    # Library calls that failed (the test expects none), as "method: error".
    library_failures: list[str] = field(default_factory=list)
    # Every status the probe got, by code name; refusals' (reason, RetryInfo seconds).
    probe_codes: Counter[str] = field(default_factory=Counter)
    refusals: list[tuple[str, float | None]] = field(default_factory=list)
    # Per refused probe write: seconds from its first refusal to its acknowledgement.
    refused_seconds: list[float] = field(default_factory=list)
    checkpoint_before: pb.GetCheckpointResponse | None = None
    reviewers: list[str] = field(default_factory=list)
    # (case id, [review ids]) of every acknowledged case.
    cases: list[tuple[str, list[str]]] = field(default_factory=list)
    progress: asyncio.Event = field(default_factory=asyncio.Event)

    def acked(self) -> None:
        self.acknowledged += 1
        self.progress.set()

    @property
    def done(self) -> bool:
        return self.restarted.is_set() and self.probes_after_restart >= AFTER_RESTART


async def probe(target: str, run: Run, deadline: float) -> None:
    """Registrations back to back on a channel without retries; see the module docstring."""
    options = [("grpc.enable_retries", 0)]
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        stub = pb_grpc.AdjudicationServiceStub(channel)
        for number in range(MAX_PROBES):
            if run.done or time.monotonic() > deadline:
                return
            reviewer_id = f"probe-{number}"
            request = builders.register_reviewer_request(reviewer_id, FIXTURE)
            request.request_id = uuid.uuid4().hex
            first_refused: float | None = None
            while time.monotonic() < deadline:
                try:
                    await stub.RegisterReviewer(request, timeout=CALL_TIMEOUT_SECONDS)
                except grpc.aio.AioRpcError as error:
                    run.probe_codes[error.code().name] += 1
                    if error.code() != grpc.StatusCode.UNAVAILABLE:
                        return  # the assertions show it
                    decoded = decode_rpc_error(error)
                    reason, delay = decoded.reason, decoded.retry_delay
                    run.refusals.append((reason, delay))
                    if first_refused is None:
                        first_refused = time.monotonic()
                    await asyncio.sleep(delay or 0.25)  # as RetryInfo says
                    continue
                run.probe_codes["OK"] += 1
                if first_refused is not None:
                    run.refused_seconds.append(time.monotonic() - first_refused)
                run.reviewers.append(reviewer_id)
                if run.restarted.is_set():
                    run.probes_after_restart += 1
                run.acked()
                break


async def library_client(index: int, target: str, run: Run, deadline: float) -> None:
    """Enqueue a case, review it twice; again, until the run is done (bounded)."""
    reviewers = (f"lib{index}-a", f"lib{index}-b")
    async with AsyncAdjudicationClient(target, timeout=CALL_TIMEOUT_SECONDS) as client:
        try:
            for reviewer in reviewers:
                await client.register_reviewer(
                    builders.register_reviewer_request(reviewer, FIXTURE)
                )
                run.reviewers.append(reviewer)
                run.acked()
            for number in range(MAX_CASES_PER_CLIENT):
                if run.done or time.monotonic() > deadline:
                    return
                enqueued = await client.enqueue_case(
                    builders.enqueue_case_request(
                        tenant="restart",
                        subject=f"api:lib{index}-{number}",
                        predicate="restart.mode",
                        candidate_values=["safe", "unsafe"],
                        local_verdict="safe",
                        origin="restart-test",
                    )
                )
                run.acked()
                case_id = enqueued.case.case_id
                review_ids = []
                for reviewer in reviewers:
                    reply = await client.submit_review(
                        builders.label_review_request(case_id, reviewer, "safe")
                    )
                    review_ids.append(reply.review.review_id)
                    run.acked()
                run.cases.append((case_id, review_ids))
        except AssayCallError as error:
            run.library_failures.append(f"client {index}: {error.code.name} {error}")


async def workload(target: str, disrupt: Callable[[], object]) -> tuple[Run, float]:
    """Run the clients and the probe; once writes flow, take a checkpoint and run ``disrupt``
    (in a thread: it blocks). Returns the run and the seconds ``disrupt`` took."""
    run = Run()
    deadline = time.monotonic() + RUN_SECONDS
    tasks = [
        asyncio.create_task(library_client(i, target, run, deadline))
        for i in range(LIBRARY_CLIENTS)
    ]
    tasks.append(asyncio.create_task(probe(target, run, deadline)))
    try:
        while run.acknowledged < BEFORE_RESTART:
            assert not run.library_failures, run.library_failures
            assert time.monotonic() < deadline, "writes did not flow before the restart"
            run.progress.clear()
            await asyncio.wait_for(run.progress.wait(), deadline - time.monotonic())
        async with AsyncAdjudicationClient(target, timeout=CALL_TIMEOUT_SECONDS) as client:
            run.checkpoint_before = await client.get_checkpoint(pb.GetCheckpointRequest())
        started = time.monotonic()
        await asyncio.to_thread(disrupt)
        took = time.monotonic() - started
        run.restarted.set()
        await asyncio.wait_for(asyncio.gather(*tasks), max(0.1, deadline - time.monotonic()))
        return run, took
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def read_back(target: str, run: Run) -> list[str]:
    """Every acknowledged reviewer, case and review as ``target`` reads them, its verdict on
    the chain, and its proof that its tree extends the checkpoint taken before: what differs."""
    problems: list[str] = []
    async with AsyncAdjudicationClient(target, timeout=CALL_TIMEOUT_SECONDS) as client:
        listed = {r.reviewer_id async for r in client.reviewers()}
        missing = set(run.reviewers) - listed
        if missing:
            problems.append(f"{target}: {len(missing)} acknowledged reviewers missing")
        for case_id, review_ids in run.cases:
            detail = await client.get_case(pb.GetCaseRequest(case_id=case_id))
            if sorted(r.review_id for r in detail.reviews) != sorted(review_ids):
                problems.append(f"{target}: case {case_id} reviews differ")
        verdict = await client.verify_audit_chain(pb.VerifyAuditChainRequest())
        if not verdict.ok:
            problems.append(f"{target}: chain does not verify: {verdict.detail}")
        if verdict.events_checked != len(set(run.reviewers)) + 3 * len(run.cases):
            problems.append(
                f"{target}: {verdict.events_checked} events for "
                f"{len(run.reviewers)} reviewers and {len(run.cases)} reviewed cases"
            )
        before = run.checkpoint_before
        after = await client.get_checkpoint(pb.GetCheckpointRequest())
        if before is None or not 0 < before.tree_size < after.tree_size:
            problems.append(f"{target}: no checkpoint before, or the tree did not grow")
        else:
            proof = await client.get_consistency_proof(
                pb.GetConsistencyProofRequest(
                    first_size=before.tree_size, second_size=after.tree_size
                )
            )
            if not verify_consistency(
                before.tree_size,
                after.tree_size,
                before.root_hash,
                after.root_hash,
                list(proof.hashes),
            ):
                problems.append(f"{target}: the tree does not extend the checkpoint before")
    return problems


def log_problems(replica: AssayProcess) -> list[str]:
    """Tracebacks, unhandled exceptions and INTERNAL statuses in a replica's log."""
    text = replica.log_path.read_text(encoding="utf-8", errors="replace")
    problems = [line for line in text.splitlines() if "Traceback" in line]
    for line in replica.log_lines():
        if line.get("event") == "rpc_unhandled_exception" or line.get("code") == "INTERNAL":
            problems.append(str(line))
        if line.get("exception") or line.get("exc_info"):
            problems.append(str(line))
    return problems


def start_replicas(
    processes: ExitStack, tmp_path: Path, dsn: str
) -> tuple[str, list[AssayProcess]]:
    """Two ``assay serve adjudication`` replicas on ``dsn`` with one ledger key, stopped when
    ``processes`` closes; and the multi-address target balancing over both."""
    key = tmp_path / "ledger-key.pem"
    ports = (free_port(), free_port())
    replicas = [
        processes.enter_context(
            service_process(
                [
                    "serve",
                    "adjudication",
                    "--port",
                    str(port),
                    "--db",
                    dsn,
                    "--ledger-signing-key",
                    str(key),
                ],
                tmp_path / f"replica-{port}.log",
                port,
            )
        )
        for port in ports
    ]
    return f"ipv4:127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}", replicas


def storage_refusals_logged(replica: AssayProcess) -> int:
    return sum(
        1
        for line in replica.log_lines()
        if line.get("event") == "rpc"
        and line.get("code") == "UNAVAILABLE"
        and line.get("reason") == STORAGE_UNAVAILABLE
    )


class TestPostgresRestartUnderWrites:
    @pytest.mark.parametrize("mode", ["fast", "immediate"])
    def test_a_restart_is_unavailable_with_retry_info_and_loses_nothing(
        self, tmp_path: Path, mode: str
    ) -> None:
        """`pg_ctl restart -m MODE` mid-load: refusals are UNAVAILABLE/STORAGE_UNAVAILABLE with
        RetryInfo, never INTERNAL; library calls all succeed; every acknowledged write is
        there on both replicas, whose tree extends the checkpoint taken before; no traceback
        in either log."""
        with running_server() as server, ExitStack() as processes:
            database = asyncio.run(server.create_database())
            target, replicas = start_replicas(processes, tmp_path, server.dsn(database))
            run, restart_seconds = asyncio.run(workload(target, lambda: server.restart(mode)))

            assert run.library_failures == []
            assert run.done, "the probe was not acknowledged after the restart in time"
            assert set(run.probe_codes) <= {"OK", "UNAVAILABLE"}, run.probe_codes
            # The outage caught the probe, and each refusal said when to retry.
            assert run.refusals, f"no call was refused during a {restart_seconds:.2f}s restart"
            assert {reason for reason, _ in run.refusals} == {STORAGE_UNAVAILABLE}
            assert all(delay is not None and delay > 0 for _, delay in run.refusals)
            # The library's calls were caught too (the replicas refused more than the probe
            # saw), and its retries carried every one of them through.
            logged = sum(storage_refusals_logged(replica) for replica in replicas)
            assert logged > len(run.refusals)

            for replica in replicas:
                assert asyncio.run(read_back(replica.target, run)) == []
                assert log_problems(replica) == []
