"""Two ``assay serve adjudication`` replicas on one PostgreSQL database, as deployed: one
ledger signing key, clients balancing over both with a multi-address target
(``ipv4:127.0.0.1:P1,127.0.0.1:P2``, round_robin).

Fifty concurrent clients write (reviewers, cases, reviews, resolutions, freezes), each
write with its own request id. After a number of acknowledged writes one replica is
killed with SIGKILL, the load goes on on the other, the killed one is restarted on its
port, and the second half of the load runs over both. A write whose call failed is sent
again with the same request id until acknowledged. Then every acknowledged write is read
back through each replica, replaying each one to each replica returns its first response,
the ledger is one gap-free chain (1..N, one event per write), VerifyAuditChain passes on
both, and both replicas sign the same tree, which extends the one seen before the kill.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.tlog.checkpoint import load_or_create_signing_key, parse_signed_checkpoint
from assay.tlog.merkle import verify_consistency
from assay.v1 import adjudication_service_pb2 as pb
from tests.process.replica_workload import (
    CALL_TIMEOUT_SECONDS,
    ClientScript,
    Tally,
    replay,
)
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, free_port, service_process

pytestmark = [pytest.mark.process, pytest.mark.timeout(300)]

CLIENTS = 50
CASES_PER_CLIENT = 4
# The gate: each client's first two cases go before the restart, the last two after it.
GATE_AFTER_CASES = 2
# SIGKILL once this many writes are acknowledged (of 50 * 12 before the gate) ...
KILL_AFTER = 200
# ... and restart once the survivor alone has acknowledged this many more.
SURVIVOR_WRITES = 150
LOAD_DEADLINE_SECONDS = 180.0
READ_TIMEOUT_SECONDS = 60.0
WRITE_METHODS = (
    "RegisterReviewer",
    "EnqueueCase",
    "SubmitReview",
    "ResolveCase",
    "FreezeGoldLabel",
)


def serve_args(port: int, dsn: str, key: Path) -> list[str]:
    return [
        "serve",
        "adjudication",
        "--port",
        str(port),
        "--db",
        dsn,
        "--ledger-signing-key",
        str(key),
    ]


def routes(index: int, balanced: str, replicas: list[str]) -> tuple[str, ...]:
    """Half the clients balance over the multi-address target; the others fail over
    between the replicas themselves, half of them at home on each."""
    if index % 2 == 0:
        return (balanced,)
    home = (index // 2) % 2
    return (replicas[home], replicas[1 - home])


def writes_served(replica: AssayProcess) -> int:
    """The writes ``replica`` answered OK, from its own log."""
    paths = {f"/assay.v1.AdjudicationService/{name}" for name in WRITE_METHODS}
    return sum(
        1
        for line in replica.log_lines()
        if line.get("event") == "rpc" and line.get("method") in paths and line.get("code") == "OK"
    )


@dataclass
class Timeline:
    """What happened around the kill, for the assertions and the report."""

    acknowledged_at_kill: int = 0
    kill_wall_micros: int = 0
    acknowledged_at_restart: int = 0
    checkpoint_before_kill: pb.GetCheckpointResponse | None = None
    seconds: dict[str, float] = field(default_factory=dict)


class Load:
    """The clients' run and the kill/restart beside it, on one event loop."""

    def __init__(self, scripts: list[ClientScript]) -> None:
        self.scripts = scripts
        self.tally = Tally()
        self.gate = asyncio.Event()
        self.progress = asyncio.Event()
        self.timeline = Timeline()

    async def until_acknowledged(self, count: int, deadline: float) -> None:
        """Wait until ``count`` writes are acknowledged (each one, and each error, wakes the
        waiter); a client's error fails at once."""
        while self.tally.acknowledged < count:
            assert not self.tally.errors, self.tally.errors[:5]
            self.progress.clear()
            remaining = deadline - time.monotonic()
            assert remaining > 0, (
                f"only {self.tally.acknowledged} of {count} writes acknowledged in time; "
                f"errors: {self.tally.errors[:5]}"
            )
            await asyncio.wait_for(self.progress.wait(), remaining)

    async def run(self, victim: AssayProcess, restart: Callable[[], AssayProcess]) -> AssayProcess:
        """Run every client; SIGKILL ``victim`` mid-load, ``restart`` it once the survivor
        carried SURVIVOR_WRITES more, then open the gate. Returns the restarted process."""
        start = time.monotonic()
        deadline = start + LOAD_DEADLINE_SECONDS
        clients = [
            asyncio.create_task(script.run(self.tally, self.gate, self.progress.set))
            for script in self.scripts
        ]
        try:
            await self.until_acknowledged(KILL_AFTER, deadline)
            async with AsyncAdjudicationClient(victim.target) as direct:
                self.timeline.checkpoint_before_kill = await direct.get_checkpoint(
                    pb.GetCheckpointRequest(), timeout=CALL_TIMEOUT_SECONDS
                )
            self.timeline.kill_wall_micros = time.time_ns() // 1000
            victim.process.kill()  # SIGKILL: calls in flight die with their connections
            await asyncio.to_thread(victim.process.wait, 10)
            self.timeline.acknowledged_at_kill = self.tally.acknowledged
            self.timeline.seconds["kill"] = time.monotonic() - start
            await self.until_acknowledged(
                self.timeline.acknowledged_at_kill + SURVIVOR_WRITES, deadline
            )
            restarted = await asyncio.to_thread(restart)
            self.timeline.acknowledged_at_restart = self.tally.acknowledged
            self.timeline.seconds["restart"] = time.monotonic() - start
            self.gate.set()
            await asyncio.wait_for(asyncio.gather(*clients), max(deadline - time.monotonic(), 0.1))
            self.timeline.seconds["load"] = time.monotonic() - start
            return restarted
        finally:
            for task in clients:
                task.cancel()
            await asyncio.gather(*clients, return_exceptions=True)


async def read_back(target: str, scripts: list[ClientScript]) -> list[str]:
    """Every acknowledged record as ``target`` reads it; the differences, named."""
    problems: list[str] = []
    async with AsyncAdjudicationClient(target, timeout=READ_TIMEOUT_SECONDS) as client:

        async def one_client(script: ClientScript) -> None:
            by_method: dict[str, list[object]] = {}
            for write in script.writes:
                by_method.setdefault(write.method, []).append(write.response)
            for reply in by_method["register_reviewer"]:
                assert isinstance(reply, pb.RegisterReviewerResponse)
                got = await client.get_reviewer(
                    pb.GetReviewerRequest(reviewer_id=reply.reviewer.reviewer_id)
                )
                if got.reviewer != reply.reviewer:
                    problems.append(f"{target} reviewer {reply.reviewer.reviewer_id} differs")
            reviews = [
                r for r in by_method["submit_review"] if isinstance(r, pb.SubmitReviewResponse)
            ]
            resolutions = [
                r for r in by_method["resolve_case"] if isinstance(r, pb.ResolveCaseResponse)
            ]
            freezes = [
                r
                for r in by_method["freeze_gold_label"]
                if isinstance(r, pb.FreezeGoldLabelResponse)
            ]
            for reply in by_method["enqueue_case"]:
                assert isinstance(reply, pb.EnqueueCaseResponse)
                case_id = reply.case.case_id
                detail = await client.get_case(pb.GetCaseRequest(case_id=case_id))
                if detail.case != reply.case:
                    problems.append(f"{target} case {case_id} differs")
                acked = [r.review for r in reviews if r.review.case_id == case_id]
                if list(detail.reviews) != acked:
                    problems.append(
                        f"{target} case {case_id}: reviews {[r.review_id for r in detail.reviews]}"
                        f" != acknowledged {[r.review_id for r in acked]}"
                    )
                per_reviewer = Counter(r.reviewer_id for r in detail.reviews)
                if per_reviewer != Counter(script.reviewers):
                    problems.append(f"{target} case {case_id}: reviews per reviewer {per_reviewer}")
                resolved = [r.resolution for r in resolutions if r.resolution.case_id == case_id]
                if list(detail.resolutions) != resolved:
                    problems.append(f"{target} case {case_id}: resolutions differ")
                frozen = [r.revision for r in freezes if r.revision.case_id == case_id]
                labels = [revision async for revision in client.gold_labels(case_id)]
                if labels != frozen or len(labels) != 1:
                    problems.append(f"{target} case {case_id}: {len(labels)} gold labels differ")

        await asyncio.gather(*(one_client(script) for script in scripts))
        listed = sorted([r.reviewer_id async for r in client.reviewers()])
        expected = sorted(name for script in scripts for name in script.reviewers)
        if listed != expected:
            problems.append(f"{target} lists {len(listed)} reviewers, not {len(expected)}")
    return problems


async def ledger_and_log(
    targets: list[str],
) -> tuple[list[pb.AuditEvent], list[pb.VerifyAuditChainResponse], list[pb.GetCheckpointResponse]]:
    """The whole ledger as the first target lists it, and each target's verdict and
    checkpoint."""
    events: list[pb.AuditEvent] = []
    verdicts, checkpoints = [], []
    for index, target in enumerate(targets):
        async with AsyncAdjudicationClient(target, timeout=READ_TIMEOUT_SECONDS) as client:
            if index == 0:
                events = [event async for event in client.audit_events()]
            verdicts.append(await client.verify_audit_chain(pb.VerifyAuditChainRequest()))
            checkpoints.append(await client.get_checkpoint(pb.GetCheckpointRequest()))
    return events, verdicts, checkpoints


async def consistency_hashes(target: str, first: int, second: int) -> list[bytes]:
    async with AsyncAdjudicationClient(target, timeout=READ_TIMEOUT_SECONDS) as client:
        proof = await client.get_consistency_proof(
            pb.GetConsistencyProofRequest(first_size=first, second_size=second)
        )
    assert proof.second_size == second
    return list(proof.hashes)


async def database_counts(dsn: str) -> dict[str, int]:
    """Counts read straight from PostgreSQL, beside what the service says."""
    connection = await asyncpg.connect(dsn)
    try:
        row = await connection.fetchrow(
            """
            SELECT
              (SELECT COUNT(*) FROM reviews) AS reviews,
              (SELECT COUNT(DISTINCT (case_id, reviewer_id, round)) FROM reviews)
                AS distinct_reviews,
              (SELECT COUNT(*) FROM idempotency) AS request_ids,
              (SELECT COUNT(*) FROM audit_events) AS events,
              (SELECT MIN(sequence) FROM audit_events) AS first_sequence,
              (SELECT MAX(sequence) FROM audit_events) AS last_sequence
            """
        )
    finally:
        await connection.close()
    assert row is not None
    return {key: int(value) for key, value in row.items()}


async def committed_before(dsn: str, request_ids: list[str], micros: int) -> int:
    """How many of ``request_ids`` were stored by a job that started before ``micros``
    (wall clock): for a call whose caller saw it fail at the kill, the killed replica
    committed it, and the resend was answered from the stored response."""
    connection = await asyncpg.connect(dsn)
    try:
        found = await connection.fetchval(
            "SELECT COUNT(*) FROM idempotency WHERE request_id = ANY($1) AND create_time < $2",
            request_ids,
            micros,
        )
    finally:
        await connection.close()
    return int(found)


class TestAdjudicationReplicas:
    def test_sigkill_of_one_replica_under_fifty_clients_loses_and_doubles_nothing(
        self, tmp_path: Path, postgres_dsn: str
    ) -> None:
        """SIGKILL and restart of one of two replicas mid-load: every acknowledged write is
        there once, retries answer once, the ledger is 1..N and verifies, the logs agree."""
        key = tmp_path / "ledger-key.pem"
        ports = (free_port(), free_port())
        target = f"ipv4:127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
        replica_targets = [f"127.0.0.1:{port}" for port in ports]
        scripts = [
            ClientScript(i, CASES_PER_CLIENT, GATE_AFTER_CASES, routes(i, target, replica_targets))
            for i in range(CLIENTS)
        ]
        planned = sum(script.planned_writes for script in scripts)
        with ExitStack() as processes:
            # One after the other: the first start creates the shared key file.
            first = processes.enter_context(
                service_process(
                    serve_args(ports[0], postgres_dsn, key), tmp_path / "a.log", ports[0]
                )
            )
            second = processes.enter_context(
                service_process(
                    serve_args(ports[1], postgres_dsn, key), tmp_path / "b.log", ports[1]
                )
            )

            def restart() -> AssayProcess:
                return processes.enter_context(
                    service_process(
                        serve_args(ports[0], postgres_dsn, key), tmp_path / "a2.log", ports[0]
                    )
                )

            load = Load(scripts)
            restarted = asyncio.run(load.run(first, restart))
            timeline = load.timeline

            assert first.process.returncode == -9
            assert load.tally.errors == []
            assert KILL_AFTER <= timeline.acknowledged_at_kill < planned, "kill lands mid-load"
            assert load.tally.acknowledged == planned
            # The kill failed calls of the clients at home on it, which resent them (with the
            # same request id) to the other replica until it acknowledged them.
            retried = [w for s in scripts for w in s.writes if w.failures]
            assert retried, "no client saw the kill: the resend path went untested"
            at_home_on_victim = [s for s in scripts if s.routes[:1] == (replica_targets[0],)]
            assert at_home_on_victim
            assert all(any(w.failures for w in s.writes) for s in at_home_on_victim)
            assert all(w.response is not None for s in scripts for w in s.writes)
            # Both replicas took writes before the kill; the restarted one after it too.
            eventually(
                lambda: writes_served(second) > 0 and writes_served(restarted) > 0,
                message="both live replicas to log served writes",
            )
            assert writes_served(first) > 0

            replicas = [restarted.target, second.target]
            for replica in replicas:
                assert asyncio.run(read_back(replica, scripts)) == []
                # The same request ids once more, to this replica alone: the first answers.
                assert asyncio.run(replay(replica, scripts)) == []

            events, verdicts, checkpoints = asyncio.run(ledger_and_log(replicas))
            # One gap-free total order, one event per acknowledged write, linked hash to hash.
            assert [e.sequence for e in events] == list(range(1, planned + 1))
            assert all(
                later.previous_hash == earlier.hash for earlier, later in itertools.pairwise(events)
            )
            types = Counter(pb.AuditEventType.Name(e.event_type) for e in events)
            assert types == {
                "AUDIT_EVENT_TYPE_REVIEWER_REGISTERED": 2 * CLIENTS,
                "AUDIT_EVENT_TYPE_CASE_ENQUEUED": CASES_PER_CLIENT * CLIENTS,
                "AUDIT_EVENT_TYPE_REVIEW_SUBMITTED": 2 * CASES_PER_CLIENT * CLIENTS,
                "AUDIT_EVENT_TYPE_CASE_RESOLVED": CASES_PER_CLIENT * CLIENTS,
                "AUDIT_EVENT_TYPE_GOLD_LABEL_FROZEN": CASES_PER_CLIENT * CLIENTS,
            }
            acked_reviews = sorted(
                w.response.review.review_id
                for s in scripts
                for w in s.writes
                if isinstance(w.response, pb.SubmitReviewResponse)
            )
            ledger_reviews = sorted(
                e.payload["review_id"]
                for e in events
                if e.event_type == pb.AUDIT_EVENT_TYPE_REVIEW_SUBMITTED
            )
            assert ledger_reviews == acked_reviews
            for verdict in verdicts:
                assert verdict.ok, verdict.detail
                assert verdict.events_checked == planned

            # The transparency log: both replicas sign the same tree of every event ...
            public_key = load_or_create_signing_key(key).public_key()
            signed = [
                parse_signed_checkpoint(c.signed_note, public_key, c.origin) for c in checkpoints
            ]
            assert {(c.origin, c.size, c.root) for c in signed} == {
                (checkpoints[0].origin, planned, checkpoints[0].root_hash)
            }
            assert {c.public_key_pem for c in checkpoints} == {checkpoints[0].public_key_pem}
            # ... which extends the tree the killed replica signed before it died.
            before = timeline.checkpoint_before_kill
            assert before is not None
            assert 0 < before.tree_size < planned
            parse_signed_checkpoint(before.signed_note, public_key, before.origin)
            for replica in replicas:
                hashes = asyncio.run(consistency_hashes(replica, before.tree_size, planned))
                assert verify_consistency(
                    before.tree_size, planned, before.root_hash, checkpoints[0].root_hash, hashes
                )

        counts = asyncio.run(database_counts(postgres_dsn))
        reviews = 2 * CASES_PER_CLIENT * CLIENTS
        assert counts == {
            "reviews": reviews,
            "distinct_reviews": reviews,
            "request_ids": planned,
            "events": planned,
            "first_sequence": 1,
            "last_sequence": planned,
        }
        lost_answers = asyncio.run(
            committed_before(
                postgres_dsn,
                [getattr(w.request, "request_id", "") for w in retried],
                timeline.kill_wall_micros,
            )
        )
        print(
            f"\nreplicas: {planned} writes by {CLIENTS} clients; SIGKILL at "
            f"{timeline.acknowledged_at_kill} acknowledged ({timeline.seconds['kill']:.1f}s), "
            f"restart at {timeline.acknowledged_at_restart} ({timeline.seconds['restart']:.1f}s), "
            f"load done {timeline.seconds['load']:.1f}s; "
            f"{len(retried)} writes resent by the client "
            f"({Counter(code for w in retried for code in w.failures)}), {lost_answers} of them "
            "committed by the killed replica before it died; "
            f"writes served: a {writes_served(first)}, b {writes_served(second)}, "
            f"a restarted {writes_served(restarted)}"
        )
