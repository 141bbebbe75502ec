"""Resolver benchmark: end-to-end resolution against a floor, and RPC cost against a no-op RPC.

Not a test: a script (``just bench`` / ``python bench/resolver.py``) that prints, from one run,

1. in-process end-to-end resolution -- request bytes parsed, ``ResolveEvidence`` run by the
   real servicer, the response serialized deterministically -- for 10, 1,000 and 100,000
   claims, next to a *floor* measured in the same run over the same bytes: parse them plus
   one minimal Python pass grouping the parsed claims by (subject, predicate). Reported as
   claims/s and as a ratio (target: 100k claims within 3x the floor);
2. ``ResolveSemantic`` (10 claims) and ``GetResolverPolicy`` (the shared runtime around
   almost no work) next to the health ``Check`` RPC (a no-op) on the same real server, a
   separate process on loopback, driven by concurrent asyncio clients; each counted both
   as calls per second of wall-clock time and as calls per second of the *server's* CPU
   time (user + system, all its threads, read from /proc before and after each phase), the
   latter being what the target counts: ``ResolveSemantic`` at least 0.75x the
   no-op. The client shares the machine, so the wall-clock rate also measures the client;
   the server's CPU per call does not. ``--rpc`` runs only this part; ``--against SRC``
   serves a second copy from another source tree (e.g. ``git archive <rev> src``) with
   its phases interleaved, an A/B within one run.

Timings are the best of several repeats (the machine is shared, and the minimum is the
least noisy estimate of what the code costs); both sides of each ratio use the same rule.
RPC ratios are also shown per round (both sides measured within the same minute), as the
range over the rounds: on a loaded machine that range, not one figure, is the result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from harness import Call, best_of

from assay.services.resolver.adapters.offload import without_gc
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.service import make_servicer
from assay.v1 import claim_pb2, resolver_service_pb2, resolver_service_pb2_grpc

SERVICE = "assay.v1.ResolverService"

# Source kinds with rough real-world frequencies: mostly executed checks and specs.
SOURCES = (
    ("test_result", 5),
    ("ci_status", 3),
    ("vcs_state", 2),
    ("api_spec", 3),
    ("static_analysis", 3),
    ("documentation", 2),
    ("llm_inference", 1),
    ("generated_mock", 1),
)
PREDICATES = (
    "idempotency.mode",  # safety-sensitive
    "auth.principal",  # safety-sensitive
    "http.method",
    "pagination.style",
    "rate_limit.per_minute",  # numeric values
)
VALUES = {
    "idempotency.mode": ("key", "none", "natural"),
    "auth.principal": ("service", "user", "anonymous"),
    "http.method": ("POST", "PUT"),
    "pagination.style": ("cursor", "offset"),
    "rate_limit.per_minute": (60.0, 120.0, 600.0),
}


def build_evidence(claims: int, seed: int = 7) -> claim_pb2.Evidence:
    """``claims`` claims over ``claims / 100`` subjects x 5 predicates (20 per semantic).

    Per semantic: one majority value, sometimes a close competitor (so some semantics are
    conflicted), several sources, a few source refs per source (so correlation groups hold
    several claims), one in five claims in a declared correlation group, 2% reviewed out,
    1% superseding an earlier claim, 5% without an id (content-addressed), every claim
    timestamped.
    """
    rng = random.Random(seed)
    kinds = [k for k, w in SOURCES for _ in range(w)]
    subjects = max(1, claims // 100)
    evidence = claim_pb2.Evidence()
    made = 0
    per_sem = max(1, claims // (subjects * len(PREDICATES)))
    for s in range(subjects):
        for predicate in PREDICATES:
            options = VALUES[predicate]
            contested = rng.random() < 0.25
            previous: list[str] = []
            for _ in range(per_sem):
                if made >= claims:
                    return evidence
                made += 1
                source = rng.choice(kinds)
                value = (
                    options[0] if (not contested and rng.random() < 0.85) else rng.choice(options)
                )
                claim = evidence.claims.add(
                    subject=f"api:svc{s // 10}.op{s}",
                    predicate=predicate,
                    source=source,
                    source_ref=f"{source}/artifact-{rng.randrange(3)}",
                    source_revision=f"rev{rng.randrange(50)}",
                    method="bench",
                    confidence=round(rng.uniform(0.5, 1.0), 3),
                )
                if rng.random() >= 0.05:
                    claim.id = f"c{made}"
                if isinstance(value, str):
                    claim.value.string_value = value
                else:
                    claim.value.number_value = value
                claim.observe_time.seconds = 1_760_000_000 + rng.randrange(10_000_000)
                if rng.random() < 0.2:
                    claim.correlation_group = f"run-{s}-{rng.randrange(4)}"
                if rng.random() < 0.02:
                    claim.review_status = claim_pb2.REVIEW_STATUS_REJECTED
                elif previous and claim.id and rng.random() < 0.01:
                    claim.relation.kind = claim_pb2.RELATION_KIND_SUPERSEDES
                    claim.relation.target_claim_id = rng.choice(previous)
                if claim.id:
                    previous.append(claim.id)
    return evidence


def floor_pass(raw: bytes) -> int:
    """Parse the bytes and group the claims by (subject, predicate): the least any resolver does."""
    request = resolver_service_pb2.ResolveEvidenceRequest.FromString(raw)
    return _group_only(request.evidence.claims)


def _serialized_reply(coroutine: Any) -> bytes:
    """Run a servicer method's coroutine without an event loop (the resolver never awaits)
    and serialize its response as the runtime does."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        data: bytes = done.value.SerializeToString(deterministic=True)
        return data
    raise RuntimeError("the resolver servicer suspended unexpectedly")


def end_to_end(servicer: ResolverServicer, raw: bytes) -> bytes:
    """Request bytes -> ResolveEvidence -> response bytes, as the runtime does it."""
    request = resolver_service_pb2.ResolveEvidenceRequest.FromString(raw)
    return _serialized_reply(servicer.ResolveEvidence(request, None))


def _resolve_semantic_bytes(servicer: ResolverServicer, raw: bytes) -> bytes:
    request = resolver_service_pb2.ResolveSemanticRequest.FromString(raw)
    return _serialized_reply(servicer.ResolveSemantic(request, None))


def bench_in_process(sizes: tuple[int, ...], quick: bool) -> None:
    servicer = make_servicer()
    largest, largest_floor = b"", 0.0
    print("In-process end-to-end ResolveEvidence vs floor (parse + group by semantic)")
    print(f"{'claims':>8} {'bytes':>11} {'floor claims/s':>15} {'e2e claims/s':>13} {'ratio':>6}")
    for size in sizes:
        raw = resolver_service_pb2.ResolveEvidenceRequest(
            evidence=build_evidence(size)
        ).SerializeToString()
        inner = max(1, 20_000 // size)
        repeats = 3 if (quick or size >= 100_000) else 7
        if size >= 100_000 and not quick:
            repeats = 5
        end_to_end(servicer, raw)  # warm caches the way a running server would be
        # GC paused on both sides, as the servicer pauses it per request (``without_gc``).
        floor = best_of(lambda raw=raw: without_gc(floor_pass, raw), repeats, inner)  # type: ignore[misc]
        e2e = best_of(lambda raw=raw: end_to_end(servicer, raw), repeats, inner)  # type: ignore[misc]
        print(
            f"{size:>8,} {len(raw):>11,} {size / floor:>15,.0f} {size / e2e:>13,.0f}"
            f" {e2e / floor:>5.2f}x"
        )
        if size == max(sizes):
            largest, largest_floor = raw, floor
    stage_breakdown(servicer, largest, 3, largest_floor)


def stage_breakdown(servicer: ResolverServicer, raw: bytes, repeats: int, floor: float) -> None:
    """Where the end-to-end time goes, stage by stage (best of ``repeats``, GC paused as served)."""
    from assay.services.resolver.domain import resolve

    in_force = servicer.rpcs.in_force()
    request = resolver_service_pb2.ResolveEvidenceRequest.FromString(raw)
    claims = request.evidence.claims

    def read() -> tuple[Any, Any]:
        reader = in_force.reader()
        return reader, reader.base(claims, "evidence.claims")

    reader, base = read()
    resolutions = resolve.resolve_evidence(base, in_force.loaded.policy)

    def emit(full: bool = True) -> resolver_service_pb2.ResolveEvidenceResponse:
        response = resolver_service_pb2.ResolveEvidenceResponse()
        writer = in_force.writer(reader)
        for resolution in resolutions:
            writer.resolution(resolution, response.resolutions.add(), full)
        return response

    response = emit()
    summary = emit(full=False)
    stages: dict[str, Callable[[], object]] = {
        "parse request bytes": lambda: resolver_service_pb2.ResolveEvidenceRequest.FromString(raw),
        "intake (read + validate + group)": read,
        "fusion (groups, noisy-OR, status)": partial(
            resolve.resolve_evidence, base, in_force.loaded.policy
        ),
        "emit response messages": emit,
        "serialize response": lambda: response.SerializeToString(deterministic=True),
        "emit at SUMMARY detail": lambda: emit(full=False),
        "serialize at SUMMARY detail": lambda: summary.SerializeToString(deterministic=True),
        "floor's Python grouping pass": lambda: _group_only(claims),
        "bound: parse + read intake's fields": lambda: _read_only(raw),
        "bound: same messages, constant numbers": lambda: _emit_only(response),
    }
    print(f"  stages at {len(claims):,} claims (ms, best of {repeats}):")
    enabled = gc.isenabled()
    gc.disable()
    try:
        took = {name: best_of(stage, repeats) for name, stage in stages.items()}
    finally:
        if enabled:
            gc.enable()
    for name, seconds in took.items():
        print(f"    {name:<40} {seconds * 1000:>8.1f}")
    bound = (
        took["bound: parse + read intake's fields"] + took["bound: same messages, constant numbers"]
    )
    print(
        f"  without any resolution logic, reading the claims and building the response the"
        f" contract asks for already takes {bound / floor:.2f}x the floor"
    )


def _group_only(claims: Any) -> int:
    groups: dict[tuple[str, str], list[claim_pb2.Claim]] = {}
    for claim in claims:
        key = (claim.subject, claim.predicate)
        bucket = groups.get(key)
        if bucket is None:
            groups[key] = [claim]
        else:
            bucket.append(claim)
    return len(groups)


def _read_only(raw: bytes) -> int:
    """Parse, then read each field ``intake`` reads, once, doing nothing with them."""
    request = resolver_service_pb2.ResolveEvidenceRequest.FromString(raw)
    read = 0
    for c in request.evidence.claims:
        fields = (c.id, c.subject, c.predicate, c.value.string_value, c.source, c.source_ref,
                  c.confidence, c.HasField("reliability"), c.correlation_group, c.review_status,
                  c.HasField("relation"))  # fmt: skip
        read += len(fields)
    return read


def _emit_only(like: resolver_service_pb2.ResolveEvidenceResponse) -> int:
    """Build a response with the same messages as ``like`` (every resolution, value, claim
    weight, group, counted ref) from constants: the cost of the explanation's shape alone."""
    response = resolver_service_pb2.ResolveEvidenceResponse()
    for resolution in like.resolutions:
        out = response.resolutions.add(subject="s", predicate="p", confidence=0.5)
        for value in resolution.values:
            support = out.values.add(value_key="k", support=0.5)
            for _ in value.claims:
                support.claims.add(
                    claim_ref="c",
                    source="test_result",
                    reliability=0.85,
                    effective_weight=0.5,
                    correlation_group="g",
                    counted=True,
                )
            for _ in value.groups:
                support.groups.add(correlation_group="g", weight=0.5, counted_claim_ref="c")
            support.counted_claim_refs.extend(["c"] * len(value.counted_claim_refs))
    return len(response.resolutions)


def serve_child() -> None:
    """``--serve-child``: host the resolver on 127.0.0.1:0, print its address, serve until
    stdin closes or says anything. Run as its own process (``start_server``), so its CPU
    time is the server's alone, and from whichever source tree ``PYTHONPATH`` names."""
    from assay.runtime import loop
    from assay.runtime.gc_tuning import tune_for_serving
    from assay.runtime.logging import configure_logging
    from assay.runtime.server import serving
    from assay.services.registry import ServeOptions
    from assay.services.resolver.service import build_spec

    # The production log line per RPC stays on (it is part of the cost), sent to /dev/null.
    configure_logging("info", open(os.devnull, "w"))  # noqa: SIM115

    async def main() -> None:
        spec = await build_spec(ServeOptions(port=0))
        tune_for_serving()  # as ``assay serve`` does
        async with serving([spec]) as running:
            print(running[0].address, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

    loop.run(main(), "auto")  # the loop ``assay serve`` picks by default


@dataclass
class Server:
    """A benchmark server process: its label (which source tree), address and pid."""

    label: str
    process: subprocess.Popen[str]
    address: str

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the whole server process so far (every thread, those
        that ended included), from /proc; None where there is no /proc."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as stat:
                text = stat.read()
        except OSError:
            return None
        fields = text[text.rindex(")") + 2 :].split()  # from field 3 (state) on
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def start_server(label: str, source: str | None) -> Server:
    """This script as a ``--serve-child`` process; ``source``: a ``src`` directory to import
    ``assay`` from instead of the installed one (an A/B against another revision)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(source), *filter(None, [env.get("PYTHONPATH")])]
        )
    process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve-child"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    address = process.stdout.readline().strip()  # "" if it died: reported by the caller
    return Server(label, process, address)


def stop_server(server: Server) -> None:
    assert server.process.stdin is not None
    with contextlib.suppress(OSError):
        server.process.stdin.write("stop\n")
        server.process.stdin.flush()
    try:
        server.process.wait(15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@dataclass
class Phase:
    """One timed phase of one kind of call: how many completed, in how much wall-clock time
    and how much of the server's CPU time (None: not measurable here)."""

    calls: int
    wall: float
    cpu: float | None

    @property
    def per_second(self) -> float:
        return self.calls / self.wall

    @property
    def per_cpu_second(self) -> float | None:
        return None if not self.cpu else self.calls / self.cpu


async def phase(call: Call, concurrency: int, seconds: float, server: Server) -> Phase:
    """``concurrency`` callers for ``seconds``; every call finishes inside the phase, so the
    server's CPU time over it is what those calls cost (an idle server uses next to none)."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await call()
            done += 1

    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    cpu_after = server.cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return Phase(done, wall, cpu)


# What is compared with the no-op, and under which name it is printed.
_COMPARED = (
    ("resolve", "ResolveSemantic (10 claims)"),
    ("policy", "GetResolverPolicy (runtime only)"),
    ("raw resolve", "ResolveSemantic, raw bytes"),
)
_NOOP_OF = {"resolve": "noop", "policy": "noop", "raw resolve": "raw noop"}


async def rpc_calls(channel: grpc.aio.Channel) -> dict[str, Call]:
    request = resolver_service_pb2.ResolveSemanticRequest(
        evidence=build_evidence(10), subject="api:svc0.op0", predicate="idempotency.mode"
    )
    check = health_pb2.HealthCheckRequest(service="")
    raw_request, raw_check = request.SerializeToString(), check.SerializeToString()
    resolver = resolver_service_pb2_grpc.ResolverServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    response = await resolver.ResolveSemantic(request, timeout=10)
    assert response.resolution.values, "the 10-claim request must resolve something"
    # The same calls with bytes in and bytes out: no client-side protobuf work, so the
    # client process does less and the comparison is closer to the server's own cost.
    raw_resolve = channel.unary_unary(f"/{SERVICE}/ResolveSemantic")
    raw_health = channel.unary_unary("/grpc.health.v1.Health/Check")
    policy_request = resolver_service_pb2.GetResolverPolicyRequest()
    return {
        "noop": lambda: health.Check(check, timeout=10),
        "resolve": lambda: resolver.ResolveSemantic(request, timeout=10),
        # Same runtime handler (parse, request id, log line, error mapping), almost no
        # work: separates what the shared runtime costs per call from what resolution costs.
        "policy": lambda: resolver.GetResolverPolicy(policy_request, timeout=10),
        "raw noop": lambda: raw_health(raw_check, timeout=10),
        "raw resolve": lambda: raw_resolve(raw_request, timeout=10),
    }


async def bench_rpc(servers: list[Server], seconds: float, concurrency: int, rounds: int) -> None:
    """Every kind of call on every server, in interleaved rounds after a warm-up; each
    ratio is taken within a round (same minute, same machine load) and shown as the range
    over the rounds, next to the ratio of the best rates."""
    channels = [grpc.aio.insecure_channel(server.address) for server in servers]
    try:
        calls = [await rpc_calls(channel) for channel in channels]
        for server, mine in zip(servers, calls, strict=True):
            for call in mine.values():
                await phase(call, concurrency, 0.3, server)
        phases: list[dict[str, list[Phase]]] = [{name: [] for name in mine} for mine in calls]
        for _ in range(rounds):
            for server, mine, found in zip(servers, calls, phases, strict=True):
                for name, call in mine.items():
                    found[name].append(await phase(call, concurrency, seconds, server))
    finally:
        for channel in channels:
            await channel.close()
    print()
    print(
        f"RPC throughput, {concurrency} concurrent clients, each server in its own process;"
        f" {rounds} interleaved rounds of {seconds:g} s per call"
    )
    for server, found in zip(servers, phases, strict=True):
        _report_server(server, found)
    request_bytes = resolver_service_pb2.ResolveSemanticRequest(
        evidence=build_evidence(10), subject="api:svc0.op0", predicate="idempotency.mode"
    ).SerializeToString()
    servicer = make_servicer()
    work = best_of(lambda: _resolve_semantic_bytes(servicer, request_bytes), 7, 2000)
    print(
        f"  ResolveSemantic's own work in-process (parse, resolve, serialize; this"
        f" process's code): {work * 1e6:,.1f} us"
    )


def _report_server(server: Server, found: dict[str, list[Phase]]) -> None:
    wall = {name: max(p.per_second for p in runs) for name, runs in found.items()}
    cpu_rates = {name: [p.per_cpu_second for p in runs] for name, runs in found.items()}
    has_cpu = all(r is not None for rates in cpu_rates.values() for r in rates)
    print(f"  server {server.label}:")
    print(f"    {'':<34} {'calls/s':>9} {'calls/server-CPU-s':>19} {'server us/call':>15}")
    for name in found:
        best_cpu = max((r for r in cpu_rates[name] if r is not None), default=None)
        cpu_text = f"{best_cpu:>19,.0f} {1e6 / best_cpu:>15,.1f}" if best_cpu else " " * 35
        print(f"    {_LABELS[name]:<34} {wall[name]:>9,.0f} {cpu_text}")
    print(
        f"    {'ratio to the no-op':<34} {'wall (best; rounds)':>26}"
        f" {'server CPU (best; rounds)':>30}"
    )
    for name, label in _COMPARED:
        noop = _NOOP_OF[name]
        per_round = [
            (p.per_second / q.per_second, _ratio(p.per_cpu_second, q.per_cpu_second))
            for p, q in zip(found[name], found[noop], strict=True)
        ]
        walls = [w for w, _ in per_round]
        line = (
            f"    {label:<34} {wall[name] / wall[noop]:>9.2f}x ({min(walls):.2f}-{max(walls):.2f}x)"
        )
        if has_cpu:
            cpus = [c for _, c in per_round if c is not None]
            best = _ratio(
                max(r for r in cpu_rates[name] if r), max(r for r in cpu_rates[noop] if r)
            )
            line += f" {best:>14.2f}x ({min(cpus):.2f}-{max(cpus):.2f}x)"
        print(line)
    print("    (target: ResolveSemantic >= 0.75x the no-op per server-CPU second)")


_LABELS = {
    "noop": "health Check (no-op)",
    "resolve": "ResolveSemantic (10 claims)",
    "policy": "GetResolverPolicy (runtime only)",
    "raw noop": "health Check, raw bytes",
    "raw resolve": "ResolveSemantic, raw bytes",
}


def _ratio(a: float | None, b: float | None) -> float:
    return a / b if a and b else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter RPC phases")
    parser.add_argument("--skip-rpc", action="store_true", help="only the in-process part")
    parser.add_argument("--rpc", action="store_true", help="only the RPC part")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved RPC rounds")
    parser.add_argument(
        "--against",
        metavar="SRC",
        help="also serve from this src directory (another revision, e.g. from `git archive`),"
        " interleaved with the installed code: an A/B in the same run",
    )
    parser.add_argument("--serve-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_child:
        serve_child()
        return 0
    if not args.rpc:
        bench_in_process((10, 1_000, 100_000), args.quick)
    if args.skip_rpc:
        return 0
    wanted = [("this tree", None)]
    if args.against:
        wanted.append((args.against, args.against))
    servers: list[Server] = []
    try:
        for label, source in wanted:
            servers.append(start_server(label, source))
            if not servers[-1].address:
                print(f"the benchmark server ({label}) did not start", file=sys.stderr)
                return 1
        seconds = 1.0 if args.quick else 2.0
        asyncio.run(bench_rpc(servers, seconds, args.concurrency, args.rounds))
    finally:
        for server in servers:
            stop_server(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
