"""The planner as users run it: real ``assay serve`` processes for resolver and planner.

A plan is fetched through the planner; then the resolver is stopped and the
planner must answer UNAVAILABLE / RESOLVER_UNAVAILABLE promptly, stay SERVING
itself (it is up; its dependency is not), and log the failure on its stderr.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.runtime.status import decode_rpc_error
from assay.v1 import plan_pb2, planner_service_pb2, planner_service_pb2_grpc
from tests.support.processes import assay_process, free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plan"
pytestmark = pytest.mark.process


def example(name: str) -> planner_service_pb2.PlanEvidenceRequest:
    data = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    return json_format.ParseDict(data, planner_service_pb2.PlanEvidenceRequest())


class TestPlannerWithItsResolver:
    def test_plans_then_fails_fast_when_the_resolver_stops(self, tmp_path: Path) -> None:
        """Plan OK; resolver stopped → UNAVAILABLE with the reason, health SERVING, logged."""
        resolver_port, planner_port = free_port(), free_port()
        with (
            assay_process(
                ["serve", "resolver", "--port", str(resolver_port)],
                tmp_path / "resolver.log",
                resolver_port,
            ) as resolver,
            assay_process(
                [
                    "serve",
                    "planner",
                    "--port",
                    str(planner_port),
                    "--resolver",
                    f"127.0.0.1:{resolver_port}",
                ],
                tmp_path / "planner.log",
                planner_port,
            ) as planner,
            grpc.insecure_channel(planner.target) as channel,
        ):
            stub = planner_service_pb2_grpc.PlannerServiceStub(channel)
            reply = stub.PlanEvidence(example("safety-conflict-read-only.json"), timeout=10)
            assert reply.plan.outcome == plan_pb2.PLAN_OUTCOME_ACQUISITION_RECOMMENDED
            assert reply.plan.candidates

            assert resolver.terminate() == 0
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as caught:
                stub.PlanEvidence(example("safety-conflict-read-only.json"), timeout=10)
            elapsed = time.monotonic() - started
            decoded = decode_rpc_error(caught.value)
            assert decoded.code == grpc.StatusCode.UNAVAILABLE
            assert decoded.reason == "ERROR_REASON_RESOLVER_UNAVAILABLE"
            assert elapsed < 3.0

            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING

            assert planner.terminate() == 0
            failures = [
                line
                for line in planner.log_lines()
                if line.get("event") == "rpc"
                and line.get("method") == "/assay.v1.PlannerService/PlanEvidence"
                and line.get("code") == "UNAVAILABLE"
            ]
            assert len(failures) == 1
            assert failures[0]["reason"] == "ERROR_REASON_RESOLVER_UNAVAILABLE"
            assert str(resolver_port) in failures[0]["error"]

    def test_resolver_target_from_the_environment(self, tmp_path: Path) -> None:
        """ASSAY_RESOLVER_TARGET wires the planner when --resolver is not given."""
        resolver_port, planner_port = free_port(), free_port()
        with (
            assay_process(
                ["serve", "resolver", "--port", str(resolver_port)],
                tmp_path / "resolver.log",
                resolver_port,
            ),
            assay_process(
                ["serve", "planner", "--port", str(planner_port)],
                tmp_path / "planner.log",
                planner_port,
                env={"ASSAY_RESOLVER_TARGET": f"127.0.0.1:{resolver_port}"},
            ) as planner,
            grpc.insecure_channel(planner.target) as channel,
        ):
            stub = planner_service_pb2_grpc.PlannerServiceStub(channel)
            reply = stub.PlanEvidence(example("corroborated.json"), timeout=10)
        assert reply.plan.outcome == plan_pb2.PLAN_OUTCOME_NO_GAP_IDENTIFIED
