"""Planner benchmark: what planning costs beside resolving, on the same evidence, same run.

Not a test: a script (``python bench/planner.py``) that starts a real resolver and a real
planner as separate ``assay serve`` processes on loopback, then for evidence of 10 and
1,000 claims measures, call by call and interleaved (so drift on a shared machine hits
both sides alike):

- ``ResolveSemantic`` straight to the resolver (the baseline), and
- ``PlanEvidence`` through the planner, which costs one more hop plus its resolver calls
  plus the planning itself: when every claim is about the target, one
  ``ResolveHypotheses`` (the base at FULL detail, one hypothesis per outcome any plan over
  these claims may weigh at SUMMARY); otherwise ``ResolveSemantic``, then one
  ``ResolveHypotheses`` over the target's scope with exactly the plan's outcomes.

It prints median and p99 latency for each and the ratio planner/resolver. Target: planning
a 1,000-claim evidence within 3x of resolving it directly (median).

The evidence is the planner's hard case: every claim is about the planned semantic (so
each hypothesis re-resolves all of them), values conflict, sources and correlation groups
vary, and the request carries missing-signal notes and capabilities, so the plan has
several gaps and candidates.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from harness import free_port

from assay.v1 import (
    plan_pb2,
    planner_service_pb2,
    planner_service_pb2_grpc,
    resolver_service_pb2,
    resolver_service_pb2_grpc,
)

SUBJECT = "api:payments.create"
PREDICATE = "idempotency.mode"
SOURCES = ("api_spec", "runtime_trace", "test_result", "static_analysis", "llm_inference")
VALUES = ("key", "none", "natural")
TARGET_RATIO = 3.0
# Claims per semantic in the spread case (as in bench/resolver.py).
PER_SEMANTIC = 20
OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
]


def plan_request(
    claims: int, concentrated: bool, seed: int = 11
) -> planner_service_pb2.PlanEvidenceRequest:
    """``claims`` claims, two values close (conflicted), mixed sources and groups.

    ``concentrated``: every claim is about the planned semantic. Otherwise the planned
    semantic has ``PER_SEMANTIC`` of them and the rest are about other subjects, as in an
    evidence bundle covering a whole API.
    """
    rng = random.Random(seed)
    request = planner_service_pb2.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
    for i in range(claims):
        claim = request.evidence.claims.add()
        claim.id = f"c{i}"
        on_target = concentrated or i < PER_SEMANTIC
        claim.subject = SUBJECT if on_target else f"api:endpoint-{i // PER_SEMANTIC}"
        claim.predicate = PREDICATE
        claim.value.string_value = VALUES[0 if i % 2 else (1 if i % 7 else 2)]
        claim.source = SOURCES[i % len(SOURCES)]
        claim.source_ref = f"ref-{rng.randrange(max(1, claims // 4))}"
        claim.confidence = round(rng.uniform(0.4, 0.95), 3)
        if i % 5 == 0:
            claim.correlation_group = f"group-{i % 13}"
        claim.observe_time.FromSeconds(1_790_000_000 + i)
    request.missing_signals.add(
        signal_class=plan_pb2.SIGNAL_CLASS_TOOL_TRACE,
        availability=plan_pb2.SIGNAL_AVAILABILITY_COLLECTION_FAILED,
        note="trace collector crashed",
    )
    request.capabilities.signals.add(
        signal_class=plan_pb2.SIGNAL_CLASS_RAW_REASONING,
        availability=plan_pb2.SIGNAL_AVAILABILITY_REDACTED,
    )
    request.policy.granted_side_effects.extend(
        [plan_pb2.SIDE_EFFECT_CLASS_FILESYSTEM_READ, plan_pb2.SIDE_EFFECT_CLASS_VCS_READ]
    )
    return request


@contextmanager
def served(args: list[str], port: int) -> Iterator[str]:
    """An ``assay serve`` subprocess, SERVING before the block, stopped after it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "assay.cli.main", "serve", *args, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ASSAY_LOG_LEVEL": "warning"},
    )
    target = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        with grpc.insecure_channel(target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                        break
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit(f"{args[0]} did not start")
                time.sleep(0.1)
        yield target
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def measure(
    resolver: resolver_service_pb2_grpc.ResolverServiceStub,
    planner: planner_service_pb2_grpc.PlannerServiceStub,
    claims: int,
    concentrated: bool,
    iterations: int,
) -> dict[str, float]:
    request = plan_request(claims, concentrated)
    direct = resolver_service_pb2.ResolveSemanticRequest(
        evidence=request.evidence, subject=SUBJECT, predicate=PREDICATE
    )
    reply = planner.PlanEvidence(request, timeout=30)
    for _ in range(max(3, iterations // 10)):  # warm-up: channels, caches, allocator
        resolver.ResolveSemantic(direct, timeout=30)
        planner.PlanEvidence(request, timeout=30)
    resolve_s: list[float] = []
    plan_s: list[float] = []
    for _ in range(iterations):
        resolve_s.append(timed(lambda: resolver.ResolveSemantic(direct, timeout=30)))
        plan_s.append(timed(lambda: planner.PlanEvidence(request, timeout=30)))
    candidates = len(reply.plan.candidates) + len(reply.plan.unavailable)
    return {
        "claims": claims,
        "on_target": claims if concentrated else min(claims, PER_SEMANTIC),
        "gaps": len(reply.plan.gaps),
        "candidates": candidates,
        "resolve_median_ms": statistics.median(resolve_s) * 1000,
        "resolve_p99_ms": p99(resolve_s) * 1000,
        "plan_median_ms": statistics.median(plan_s) * 1000,
        "plan_p99_ms": p99(plan_s) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations-small", type=int, default=300)
    parser.add_argument("--iterations-large", type=int, default=60)
    args = parser.parse_args(argv)
    resolver_port, planner_port = free_port(), free_port()
    with (
        served(["resolver"], resolver_port) as resolver_target,
        served(["planner", "--resolver", resolver_target], planner_port) as planner_target,
        grpc.insecure_channel(resolver_target, options=OPTIONS) as rch,
        grpc.insecure_channel(planner_target, options=OPTIONS) as pch,
    ):
        resolver = resolver_service_pb2_grpc.ResolverServiceStub(rch)
        planner = planner_service_pb2_grpc.PlannerServiceStub(pch)
        rows = [
            measure(resolver, planner, 10, True, args.iterations_small),
            measure(resolver, planner, 1000, False, args.iterations_large),
            measure(resolver, planner, 1000, True, args.iterations_large),
        ]
    print(
        "PlanEvidence (client -> planner -> resolver: x1 concentrated, x2 spread) "
        "vs ResolveSemantic (client -> resolver)"
    )
    print("separate processes on loopback; interleaved sequential calls; same evidence\n")
    header = (
        f"{'claims':>7} {'target':>6} {'gaps':>4} {'cands':>5} | {'resolve med':>11} {'p99':>8} | "
        f"{'plan med':>9} {'p99':>8} | {'ratio med':>9} {'ratio p99':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['claims']:>7.0f} {r['on_target']:>6.0f} "
            f"{r['gaps']:>4.0f} {r['candidates']:>5.0f} | "
            f"{r['resolve_median_ms']:>9.2f}ms {r['resolve_p99_ms']:>6.2f}ms | "
            f"{r['plan_median_ms']:>7.2f}ms {r['plan_p99_ms']:>6.2f}ms | "
            f"{r['plan_median_ms'] / r['resolve_median_ms']:>8.2f}x "
            f"{r['plan_p99_ms'] / r['resolve_p99_ms']:>8.2f}x"
        )
    print("\n'target' = claims about the planned semantic (each hypothesis re-resolves these)")
    for label, row in (("spread", rows[1]), ("concentrated", rows[2])):
        ratio = row["plan_median_ms"] / row["resolve_median_ms"]
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        print(
            f"target: 1,000 claims ({label}) planned within {TARGET_RATIO:g}x of resolving: "
            f"{ratio:.2f}x, {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
