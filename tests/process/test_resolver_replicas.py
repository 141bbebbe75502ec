"""Stateless replicas as they are deployed: two ``assay serve resolver`` processes behind one
``assay serve planner --resolver ipv4:A,B``, balanced round_robin.

The planner's calls reach both replicas (each one's own log shows the resolver calls it
served); then one replica is killed with SIGKILL in the middle of a bounded concurrent
load of plans, and not one plan fails: the calls it was holding, and the ones sent to it
before the planner saw it go, are retried on the survivor within their deadline.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from assay.v1 import plan_pb2, planner_service_pb2, planner_service_pb2_grpc
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, assay_process, free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plan"
pytestmark = pytest.mark.process

RESOLVER_METHODS = ("/assay.v1.ResolverService/ResolveSemantic",)
# The load: WORKERS plans in flight at once, PLANS in all; the kill comes after KILL_AFTER.
WORKERS, PLANS, KILL_AFTER = 8, 160, 40
PLAN_DEADLINE_SECONDS = 10.0


def example(name: str) -> planner_service_pb2.PlanEvidenceRequest:
    data = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return json_format.ParseDict(data, planner_service_pb2.PlanEvidenceRequest())


def served(replica: AssayProcess) -> int:
    """The resolver calls ``replica`` answered OK, from its own log."""
    return sum(
        1
        for line in replica.log_lines()
        if line.get("event") == "rpc"
        and str(line.get("method", "")).startswith("/assay.v1.ResolverService/Resolve")
        and line.get("code") == "OK"
    )


async def plan_load(
    target: str, request: planner_service_pb2.PlanEvidenceRequest, on_kill_point: object
) -> list[str]:
    """PLANS plans over WORKERS concurrent callers; calls ``on_kill_point`` once KILL_AFTER
    have finished. Returns the failures (code and details), in the order they happened."""
    assert callable(on_kill_point)
    failures: list[str] = []
    done = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(PLANS):
        queue.put_nowait(index)
    async with grpc.aio.insecure_channel(target) as channel:
        stub = planner_service_pb2_grpc.PlannerServiceStub(channel)

        async def worker() -> None:
            nonlocal done
            while not queue.empty():
                queue.get_nowait()
                try:
                    reply = await stub.PlanEvidence(request, timeout=PLAN_DEADLINE_SECONDS)
                    if reply.plan.outcome != plan_pb2.PLAN_OUTCOME_ACQUISITION_RECOMMENDED:
                        failures.append(f"outcome {reply.plan.outcome}")
                except grpc.aio.AioRpcError as error:
                    failures.append(f"{error.code().name}: {error.details()}")
                done += 1
                if done == KILL_AFTER:
                    await asyncio.to_thread(on_kill_point)

        await asyncio.gather(*(worker() for _ in range(WORKERS)))
    return failures


class TestResolverReplicas:
    def test_round_robin_spreads_calls_and_a_killed_replica_fails_no_plan(
        self, tmp_path: Path
    ) -> None:
        """Both replicas serve; SIGKILL of one under load: 0 of PLANS plans fail."""
        first_port, second_port, planner_port = free_port(), free_port(), free_port()
        target = f"ipv4:127.0.0.1:{first_port},127.0.0.1:{second_port}"
        request = example("safety-conflict-read-only.json")
        with (
            assay_process(
                ["serve", "resolver", "--port", str(first_port)],
                tmp_path / "first.log",
                first_port,
            ) as first,
            assay_process(
                ["serve", "resolver", "--port", str(second_port)],
                tmp_path / "second.log",
                second_port,
            ) as second,
            assay_process(
                ["serve", "planner", "--port", str(planner_port), "--resolver", target],
                tmp_path / "planner.log",
                planner_port,
            ) as planner,
        ):
            with grpc.insecure_channel(planner.target) as channel:
                stub = planner_service_pb2_grpc.PlannerServiceStub(channel)
                for _ in range(10):
                    stub.PlanEvidence(request, timeout=PLAN_DEADLINE_SECONDS)
            # Round robin: ten plans' resolver calls land on both replicas (lines may lag).
            eventually(
                lambda: served(first) > 0 and served(second) > 0,
                message="both replicas to log a served call",
            )

            before_kill: dict[str, int] = {}

            def kill_first() -> None:
                before_kill["second"] = served(second)
                first.process.kill()  # SIGKILL: no drain, connections reset mid-call
                first.process.wait(timeout=10)

            failures = asyncio.run(plan_load(planner.target, request, kill_first))

            assert first.process.returncode == -9
            assert failures == []
            # The survivor carried the rest of the load.
            eventually(
                lambda: served(second) > before_kill["second"],
                message="the survivor to log calls after the kill",
            )
            assert planner.process.poll() is None
