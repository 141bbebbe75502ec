"""The resolver as users run it: a real ``assay serve resolver`` process on a real socket."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from assay.client.evidence import load_evidence_file
from assay.runtime.config import ServerConfig
from assay.v1 import claim_pb2, resolver_service_pb2, resolver_service_pb2_grpc
from tests.support.eventually import eventually
from tests.support.processes import assay_command, assay_process, free_port, wait_serving

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.process


def big_evidence(claims: int) -> claim_pb2.Evidence:
    evidence = claim_pb2.Evidence()
    for i in range(claims):
        claim = evidence.claims.add()
        claim.subject = f"api:endpoint-{i % 1000}"
        claim.predicate = ("idempotency.mode", "effect.stateImpact", "retries.mode")[i % 3]
        claim.value.string_value = ("key", "none", "safe")[(i // 7) % 3]
        claim.source = ("api_spec", "runtime_trace", "generated_mock")[i % 3]
        claim.source_ref = f"ref-{i % 97}"
        claim.confidence = 0.5 + (i % 50) / 100
    return evidence


def in_flight(metrics_port: int) -> float:
    """The resolver's calls in flight, as its ``/metrics`` endpoint reports them now."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "assay_rpc_in_flight"
    )


class TestServeResolver:
    def test_serves_resolves_and_exits_zero_on_sigterm(self, tmp_path: Path) -> None:
        """A call succeeds, logs one JSON line (method, code, duration, id); SIGTERM → 0."""
        port = free_port()
        with assay_process(
            ["serve", "resolver", "--port", str(port)], tmp_path / "resolver.log", port
        ) as proc:
            evidence = load_evidence_file(ROOT / "examples/evidence/safety-conflict.json").evidence
            with grpc.insecure_channel(proc.target) as channel:
                stub = resolver_service_pb2_grpc.ResolverServiceStub(channel)
                reply = stub.ResolveSemantic(
                    resolver_service_pb2.ResolveSemanticRequest(
                        evidence=evidence,
                        subject="api:payments.create",
                        predicate="idempotency.mode",
                    ),
                    timeout=10,
                    metadata=(("x-request-id", "process-test-1"),),
                )
            assert reply.resolution.requires_review
            started = time.monotonic()
            assert proc.terminate() == 0
            assert time.monotonic() - started < ServerConfig().grace_seconds + 5
            lines = [line for line in proc.log_lines() if line.get("event") == "rpc"]
        mine = [line for line in lines if line["request_id"] == "process-test-1"]
        assert len(mine) == 1
        assert mine[0]["method"] == "/assay.v1.ResolverService/ResolveSemantic"
        assert mine[0]["code"] == "OK"
        assert isinstance(mine[0]["duration_ms"], float)

    def test_in_flight_call_completes_across_sigterm(self, tmp_path: Path) -> None:
        """A 100,000-claim call in flight when SIGTERM arrives still completes; exit code 0.

        "In flight" is observed, not assumed: the signal is sent once the server's own
        ``assay_rpc_in_flight`` gauge counts the call, and the call's log line must come
        after the server logged the shutdown request, so the call was drained, not finished
        before the signal."""
        port, metrics_port = free_port(), free_port()
        evidence = big_evidence(100_000)
        outcome: dict[str, object] = {}
        args = ["serve", "resolver", "--port", str(port), "--grace", "60"]
        args += ["--metrics-port", str(metrics_port)]
        with assay_process(args, tmp_path / "resolver.log", port) as proc:

            def call() -> None:
                options = ServerConfig().channel_options()
                with grpc.insecure_channel(proc.target, options=options) as channel:
                    stub = resolver_service_pb2_grpc.ResolverServiceStub(channel)
                    try:
                        reply = stub.ResolveEvidence(
                            resolver_service_pb2.ResolveEvidenceRequest(evidence=evidence),
                            timeout=120,
                        )
                        outcome["resolutions"] = len(reply.resolutions)
                    except grpc.RpcError as error:
                        outcome["error"] = error

            caller = threading.Thread(target=call)
            caller.start()

            def seen_in_flight() -> bool:
                assert caller.is_alive(), "the call ended before it was seen in flight"
                return in_flight(metrics_port) >= 1

            eventually(seen_in_flight, message="the call to show as in flight", timeout=60)
            os.kill(proc.process.pid, signal.SIGTERM)
            caller.join(timeout=150)
            code = proc.process.wait(timeout=90)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["resolutions"] == 3000
        assert code == 0
        events = [
            (line.get("event"), line.get("method"))
            for line in proc.log_lines()
            if line.get("event")
        ]
        shutdown = events.index(("shutdown_requested", None))
        drained = events.index(("rpc", "/assay.v1.ResolverService/ResolveEvidence"))
        assert shutdown < drained, events

    def test_health_goes_not_serving_then_process_exits(self, tmp_path: Path) -> None:
        """After SIGTERM the server stops answering SERVING and the process ends cleanly."""
        port = free_port()
        with assay_process(
            ["serve", "resolver", "--port", str(port)], tmp_path / "resolver.log", port
        ) as proc:
            proc.process.send_signal(signal.SIGTERM)
            assert proc.process.wait(timeout=20) == 0
            with grpc.insecure_channel(proc.target) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                with pytest.raises(grpc.RpcError):
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
        events = [line.get("event") for line in proc.log_lines()]
        assert "shutdown_requested" in events
        assert "stopped" in events


class TestUp:
    def test_up_starts_every_service_and_stops_on_sigterm(self, tmp_path: Path) -> None:
        """`assay up` serves every registered service, each healthy on its port, and exits 0."""
        from assay.services.registry import SERVICES

        ports = {name: free_port() for name in SERVICES}
        env = {f"ASSAY_{name.upper()}_PORT": str(port) for name, port in ports.items()}
        env["ASSAY_DB"] = str(tmp_path / "assay.db")
        first = next(iter(ports.values()))
        with assay_process(["up"], tmp_path / "up.log", first, env=env) as proc:
            for port in ports.values():
                wait_serving(f"127.0.0.1:{port}", process=proc.process)
            assert proc.terminate() == 0
        serving = {line["service"] for line in proc.log_lines() if line.get("event") == "serving"}
        assert serving == set(SERVICES)


class TestEventLoop:
    @pytest.mark.parametrize("choice", ["asyncio", "uvloop"])
    def test_serves_on_the_chosen_loop_and_drains_on_sigterm(
        self, tmp_path: Path, choice: str
    ) -> None:
        port = free_port()
        args = ["serve", "resolver", "--port", str(port), "--event-loop", choice]
        with assay_process(args, tmp_path / "resolver.log", port) as proc:
            with grpc.insecure_channel(proc.target) as channel:
                stub = resolver_service_pb2_grpc.ResolverServiceStub(channel)
                policy = stub.GetResolverPolicy(
                    resolver_service_pb2.GetResolverPolicyRequest(), timeout=10
                )
            assert policy.conflict_margin > 0
            assert proc.terminate() == 0
            serving = [line for line in proc.log_lines() if line.get("event") == "serving"]
        assert [line["loop"] for line in serving] == [choice]

    def test_an_unknown_loop_from_the_environment_is_one_clear_line(self, tmp_path: Path) -> None:
        # argparse checks --event-loop's choices, but not a default taken from the environment.
        result = subprocess.run(
            assay_command("serve", "resolver", "--port", str(free_port())),
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "ASSAY_EVENT_LOOP": "trio"},
        )
        assert result.returncode != 0
        assert "--event-loop: unknown event loop 'trio'" in result.stderr
        assert "Traceback" not in result.stderr
