"""Hostile-input and load probes: replays them against real servers and prints figures.

Not a test: a script (``python bench/hostile.py``, ``--quick`` for a short smoke run) that
starts real ``assay serve`` processes on loopback (free ports, a temporary database) and,
per service where the probe applies, prints:

1. **oversized errors** -- the worst bad input found by a black-box run (60 claims with the mistyped
   source kind ``runtime-trace``, one 6,000-character source, 100 invalid ``missing_signals``,
   huge ``EnqueueCase`` fields): the code a default client receives and the size of
   ``grpc-status-details-bin``, and the same through a client that accepts any trailer size
   (what the server really sent). Target: at most 8 KiB of details, ``INVALID_ARGUMENT``;
2. **rejected large requests** -- resident memory (``VmRSS``) at baseline, its peak
   (``VmHWM``) and where it settles after N rejected 20-40 MiB requests, waiting up to a
   deadline without forcing a collection. Target: settled within 1.5x of baseline;
3. **a heavy request with a short deadline** (``ResolveEvidence`` with 500,000 claims; a
   small ``ResolveHypotheses`` at FULL detail whose answer is huge; ``PlanEvidence`` with
   100,000 claims) while a second client checks health every 100 ms: the share of checks
   answered (SERVING within 1 s; target 100%), how long after the caller gave up a small
   follow-up call is answered, and how long the process kept using CPU after it (work moved
   off the event loop answers the follow-up at once but may still burn CPU);
4. **a 2,000-call burst**: how many came back OK, refused (``RESOURCE_EXHAUSTED`` /
   ``UNAVAILABLE``, and how many of those carried ``RetryInfo``), ``CANCELLED``, other, and
   how many were dropped without a status a client can act on (target 0);
5. **SIGTERM under load** with ``--grace 1``, an open ``Health.Watch`` stream, a ``Check``
   poller, 200 callers and (resolver, planner) a heavy call in flight: time from SIGTERM to
   exit (target: grace + 1 s), what the stream and the poller saw, and what the calls in
   flight (or queued) at SIGTERM and the calls sent after it got;
6. **compression bombs** (resolver): ``ResolveColumns`` with a few kilobytes of ZSTD
   that declare a million or two identical rows (the rows bomb; the finding's 2,960-byte
   request was one), or few rows of long repeated strings (the bytes bomb), then, for
   comparison, a large allowed stream: per request the code (and the limit that refused
   it), how long the answer took, the server's peak resident memory during the call
   (``VmHWM``, reset before it through ``/proc/PID/clear_refs``), and the share of health
   checks (every 100 ms, 1 s deadline) answered SERVING meanwhile. Target: each bomb
   refused at once with RESOURCE_EXHAUSTED, every check answered.

"Dropped without an actionable status" counts calls that ended neither OK, nor refused with
``RESOURCE_EXHAUSTED`` / ``UNAVAILABLE`` (which clients retry), nor with an ``ErrorInfo``
the server chose -- e.g. ``CANCELLED`` from gRPC's own queue, which the client never asked
for. Errors, burst, bombs and heavy share one server per service; memory and SIGTERM get
fresh ones. Against a server from before the columnar limits, the bombs take tens of
seconds and gigabytes each (``--bomb-rows`` scales them down).

The script works against any version of the server: flags beyond the basic ones
(``--max-concurrent-rpcs``) are passed only when ``assay serve --help`` lists them. It never
decides pass/fail (the figures are for reading) and takes about a minute and a half on two
cores (``--quick``: about half a minute, smaller sizes).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2
from harness import free_port

from assay.v1 import (
    adjudication_service_pb2,
    claim_pb2,
    planner_service_pb2,
    resolver_service_pb2,
)

SERVICES = ("resolver", "planner", "adjudication")
PROBES = ("errors", "burst", "bombs", "heavy", "memory", "sigterm")
OPTIONAL_FLAGS = ("--max-concurrent-rpcs",)
DETAILS_KEY = "grpc-status-details-bin"
DETAILS_TARGET = 8 * 1024
MEMORY_TARGET = 1.5
GRACE = 1.0
HEAVY_HEAD_START = 0.3  # seconds a heavy call runs before SIGTERM
RESOLVER = "/assay.v1.ResolverService/"
PLANNER = "/assay.v1.PlannerService/"
ADJUDICATION = "/assay.v1.AdjudicationService/"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
HEALTH_WATCH = "/grpc.health.v1.Health/Watch"
BIG = 256 * 1024 * 1024
# What an ordinary client accepts, apart from message size (the probes send large requests).
PLAIN = [("grpc.max_send_message_length", BIG), ("grpc.max_receive_message_length", BIG)]
# A client that accepts trailers of any size: shows what the server really sent.
ROOMY = [*PLAIN, ("grpc.max_metadata_size", BIG), ("grpc.absolute_max_metadata_size", BIG)]
SUBJECT, PREDICATE = "api:payments.create", "idempotency.mode"
SOURCES = ("api_spec", "runtime_trace", "test_result", "static_analysis", "llm_inference")
VALUES = ("key", "none", "natural")
REFUSALS = ("RESOURCE_EXHAUSTED", "UNAVAILABLE")


# --- requests --------------------------------------------------------------------------


def add_claims(
    evidence: claim_pb2.Evidence,
    count: int,
    subjects: int = 1,
    source: str | None = None,
    pad: int = 0,
) -> None:
    """``count`` valid claims over ``subjects`` subjects (``source`` overrides every source
    kind; ``pad`` lengthens ``source_ref`` and ``method``, to make bytes cheaply)."""
    filler = "p" * pad
    for i in range(count):
        claim = evidence.claims.add(
            id=f"c{i}",
            subject=SUBJECT if subjects == 1 else f"api:op{i % subjects}",
            predicate=PREDICATE,
            source=source or SOURCES[i % len(SOURCES)],
            source_ref=f"ref-{i % 17}{filler}",
            method=f"bench{filler}",
            confidence=0.5 + (i % 40) / 100,
        )
        claim.value.string_value = VALUES[i % 7 % 3]
        claim.observe_time.seconds = 1_760_000_000 + i


def resolve_evidence(count: int, subjects: int = 1, source: str | None = None) -> bytes:
    request = resolver_service_pb2.ResolveEvidenceRequest()
    add_claims(request.evidence, count, subjects, source)
    return request.SerializeToString()


def plan_evidence(count: int, subjects: int = 1, source: str | None = None) -> bytes:
    request = planner_service_pb2.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
    add_claims(request.evidence, count, subjects, source)
    return request.SerializeToString()


def resolve_semantic(count: int) -> bytes:
    request = resolver_service_pb2.ResolveSemanticRequest(subject=SUBJECT, predicate=PREDICATE)
    add_claims(request.evidence, count)
    return request.SerializeToString()


def bad_missing_signals(count: int) -> bytes:
    request = planner_service_pb2.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
    for i in range(count):
        request.missing_signals.add(signal_class=1000 + i, availability=1000 + i)
    return request.SerializeToString()


def case(**overrides: object) -> adjudication_service_pb2.Case:
    """A valid case, with fields replaced by ``overrides`` (strings or lists of strings)."""
    made = adjudication_service_pb2.Case(
        tenant="bench",
        subject=SUBJECT,
        predicate=PREDICATE,
        lineage=adjudication_service_pb2.CaseLineage(origin="bench"),
    )
    for candidate in ("key", "none"):
        made.candidate_values.add().string_value = candidate
    made.local_verdict.string_value = "key"
    for name, value in overrides.items():
        if isinstance(value, list):
            del getattr(made, name)[:]
            if name == "candidate_values":
                for item in value:
                    slot = made.candidate_values.add()
                    if item is None:
                        slot.null_value = struct_pb2.NULL_VALUE
                    else:
                        slot.string_value = str(item)
            else:
                getattr(made, name).extend(value)
        else:
            setattr(made, name, value)
    return made


def enqueue(**overrides: object) -> bytes:
    return adjudication_service_pb2.EnqueueCaseRequest(case=case(**overrides)).SerializeToString()


def padded_claims(message: resolver_service_pb2.ResolveEvidenceRequest, mib: int) -> None:
    """Valid claims of about 1 KiB each up to ``mib`` MiB, then one invalid claim (confidence
    2): a large request the service must parse and then reject."""
    add_claims(message.evidence, mib * 1024, subjects=1000, pad=480)
    message.evidence.claims.add(
        id="bad", subject=SUBJECT, predicate=PREDICATE, source="api_spec", confidence=2.0
    ).value.string_value = "key"


def large_rejected(service: str, mib: int) -> tuple[str, bytes]:
    if service == "adjudication":
        refs = [f"ref-{i:06d}-" + "r" * 1000 for i in range(mib * 1024)]
        return ADJUDICATION + "EnqueueCase", enqueue(evidence_refs=refs)
    request = resolver_service_pb2.ResolveEvidenceRequest()
    padded_claims(request, mib)
    if service == "resolver":
        return RESOLVER + "ResolveEvidence", request.SerializeToString()
    plan = planner_service_pb2.PlanEvidenceRequest(subject=SUBJECT, predicate=PREDICATE)
    plan.evidence.CopyFrom(request.evidence)
    return PLANNER + "PlanEvidence", plan.SerializeToString()


def small_call(service: str) -> tuple[str, bytes]:
    """A cheap but real call of each service (the follow-up and the baseline warm-up)."""
    if service == "resolver":
        return RESOLVER + "GetResolverPolicy", b""
    if service == "planner":
        return PLANNER + "ListProbes", b""
    return ADJUDICATION + "ListReviewers", b""


def load_call(service: str) -> tuple[str, bytes]:
    """The call the burst and the SIGTERM probe send many of: real work, small request."""
    if service == "resolver":
        return RESOLVER + "ResolveSemantic", resolve_semantic(10)
    if service == "planner":
        return PLANNER + "PlanEvidence", plan_evidence(10)
    return ADJUDICATION + "EnqueueCase", enqueue()


# --- servers ---------------------------------------------------------------------------


@functools.cache
def serve_flags() -> frozenset[str]:
    """The flags this version of ``assay serve`` knows (from its --help)."""
    done = subprocess.run(
        [sys.executable, "-m", "assay.cli.main", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return frozenset(re.findall(r"--[a-z][a-z0-9-]*", done.stdout))


def proc_kib(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` figure in KiB (``VmRSS``: resident now, ``VmHWM``: its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} for process {pid}")


@dataclass
class Server:
    """A running ``assay serve`` process."""

    name: str
    process: subprocess.Popen[bytes]
    target: str
    log: Path
    upstream: Server | None = None  # a planner's resolver

    def rss_mib(self) -> float:
        return proc_kib(self.process.pid, "VmRSS") / 1024

    def peak_mib(self) -> float:
        return proc_kib(self.process.pid, "VmHWM") / 1024

    def log_lines(self) -> int:
        return len(self.log.read_bytes().splitlines())


@dataclass
class Fleet:
    """Starts servers into ``root`` and stops every one it started."""

    root: Path
    extra: list[str]
    stack: ExitStack = field(default_factory=ExitStack)
    started: int = 0

    def serve(self, name: str, *flags: str) -> Server:
        """``assay serve NAME`` (a planner gets its own resolver), SERVING on return."""
        self.started += 1
        args = [name, "--port", str(free_port()), "--log-level", "warning", *self.extra, *flags]
        if name == "adjudication":
            args += ["--db", str(self.root / f"adjudication-{self.started}.db")]
        upstream = None
        if name == "planner":
            upstream = self.serve("resolver")
            args += ["--resolver", upstream.target]
        return self.stack.enter_context(self._running(name, args, upstream))

    @contextmanager
    def _running(self, name: str, args: list[str], upstream: Server | None) -> Iterator[Server]:
        log = self.root / f"{name}-{self.started}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "assay.cli.main", "serve", *args],
                stdout=subprocess.DEVNULL,
                stderr=sink,
            )
        server = Server(name, process, f"127.0.0.1:{args[2]}", log, upstream)
        try:
            wait_serving(server)
            yield server
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


def wait_serving(server: Server, timeout: float = 30) -> None:
    check = health_pb2.HealthCheckRequest().SerializeToString()
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(server.target) as channel:
        call = channel.unary_unary(HEALTH_CHECK)
        while True:
            try:
                if health_pb2.HealthCheckResponse.FromString(call(check, timeout=1)).status == 1:
                    return
            except grpc.RpcError:
                pass
            if server.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{server.name} did not start; see {server.log}")
            time.sleep(0.1)


# --- outcomes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """How one call ended, as a client sees it."""

    code: str
    details: int = 0  # bytes of grpc-status-details-bin
    error_info: bool = False
    retry_info: bool = False
    violations: int = 0


def outcome_of(error: grpc.aio.AioRpcError) -> Outcome:
    raw = b""
    for key, value in error.trailing_metadata() or ():
        if key == DETAILS_KEY:
            raw = value if isinstance(value, bytes) else value.encode()
    info = retry = False
    violations = 0
    if raw:
        for detail in status_pb2.Status.FromString(raw).details:
            info = info or detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)
            retry = retry or detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR)
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations += len(bad.field_violations)
    return Outcome(error.code().name, len(raw), info, retry, violations)


async def call_once(
    call: Callable[..., Awaitable[object]], payload: bytes, seconds: float
) -> Outcome:
    """One call with a deadline of ``seconds``, and how it ended."""
    try:
        await call(payload, timeout=seconds)
    except grpc.aio.AioRpcError as error:
        return outcome_of(error)
    return Outcome("OK")


def actionable(outcome: Outcome) -> bool:
    """OK, a refusal a client retries, or a deliberate error (one with an ErrorInfo)."""
    return outcome.code == "OK" or outcome.code in REFUSALS or outcome.error_info


def codes(outcomes: Sequence[Outcome]) -> str:
    counted = Counter(o.code for o in outcomes)
    return ", ".join(f"{code} {n}" for code, n in counted.most_common()) or "none"


# --- 1. oversized errors ---------------------------------------------------------------


def bad_inputs(service: str) -> list[tuple[str, str, bytes]]:
    if service == "resolver":
        return [
            ("60 claims, source 'runtime-trace'", RESOLVER + "ResolveEvidence",
             resolve_evidence(60, source="runtime-trace")),
            ("1 claim, 6,000-char source", RESOLVER + "ResolveEvidence",
             resolve_evidence(1, source="s" * 6000)),
        ]  # fmt: skip
    if service == "planner":
        return [
            ("60 claims, source 'runtime-trace'", PLANNER + "PlanEvidence",
             plan_evidence(60, source="runtime-trace")),
            ("1 claim, 6,000-char source", PLANNER + "PlanEvidence",
             plan_evidence(1, source="s" * 6000)),
            ("100 invalid missing_signals", PLANNER + "PlanEvidence", bad_missing_signals(100)),
        ]  # fmt: skip
    method = ADJUDICATION + "EnqueueCase"
    return [
        ("context of 1 MiB", method, enqueue(context="c" * 1024 * 1024)),
        ("subject of 1 MiB", method, enqueue(subject="s" * 1024 * 1024)),
        ("5,000 evidence_refs of 200 chars", method, enqueue(evidence_refs=["r" * 200] * 5000)),
        ("1,000 null candidate_values", method, enqueue(candidate_values=[None] * 1000)),
        ("100 candidate_values of 6,000 chars", method,
         enqueue(candidate_values=[f"{i}" + "v" * 6000 for i in range(100)])),
    ]  # fmt: skip


async def probe_errors(server: Server) -> None:
    print(f"  {'bad input':38} {'default client':>24}   {'any-size client':>36}")
    worst = 0
    async with (
        grpc.aio.insecure_channel(server.target, options=PLAIN) as plain,
        grpc.aio.insecure_channel(server.target, options=ROOMY) as roomy,
    ):
        for label, method, payload in bad_inputs(server.name):
            seen = await call_once(plain.unary_unary(method), payload, 60)
            real = await call_once(roomy.unary_unary(method), payload, 60)
            worst = max(worst, real.details)
            print(
                f"  {label:38} {seen.code:>16} {seen.details:>7,}B"
                f"   {real.code:>16} {real.details:>8,}B {real.violations:>4} viol."
            )
    verdict = "within" if worst <= DETAILS_TARGET else "OVER"
    print(
        f"  worst status details: {worst:,} B ({verdict} the {DETAILS_TARGET:,} B target;"
        f" base64 on the wire: {(worst + 2) // 3 * 4:,} B)"
    )


# --- 2. rejected large requests --------------------------------------------------------


async def probe_memory(server: Server, count: int, mib: int, settle: float) -> None:
    method, payload = large_rejected(server.name, mib)
    warm_method, warm = small_call(server.name)
    async with grpc.aio.insecure_channel(server.target, options=PLAIN) as channel:
        for _ in range(5):
            await call_once(channel.unary_unary(warm_method), warm, 10)
        baseline = server.rss_mib()
        outcomes = [
            await call_once(channel.unary_unary(method), payload, 120) for _ in range(count)
        ]
    peak = server.peak_mib()
    started = time.monotonic()
    settled = server.rss_mib()
    while settled > MEMORY_TARGET * baseline and time.monotonic() - started < settle:
        await asyncio.sleep(0.25)
        settled = server.rss_mib()
    waited = time.monotonic() - started
    ratio = settled / baseline
    verdict = "within" if ratio <= MEMORY_TARGET else "OVER"
    print(
        f"  {count} rejected {len(payload) / 2**20:.1f} MiB {method.rsplit('/', 1)[1]}: "
        f"{codes(outcomes)}"
    )
    print(
        f"  RSS baseline {baseline:,.0f} MiB, peak {peak:,.0f} MiB, settled {settled:,.0f} MiB"
        f" after {waited:.1f}s (waited up to {settle:g}s) = {ratio:.2f}x baseline"
        f" ({verdict} the {MEMORY_TARGET:g}x target)"
    )


# --- 3. heavy request, short deadline ---------------------------------------------------


def hypotheses(base: int, count: int) -> bytes:
    """``ResolveHypotheses`` at FULL detail: ``count`` one-claim hypotheses over ``base``
    claims about one semantic, each answered with every base claim's detail -- a small
    request that costs the server a lot of work (the amplification case, scaled)."""
    request = resolver_service_pb2.ResolveHypothesesRequest(
        subject=SUBJECT, predicate=PREDICATE, detail=resolver_service_pb2.RESOLUTION_DETAIL_FULL
    )
    add_claims(request.evidence, base)
    for i in range(count):
        claim = request.hypotheses.add(label=f"h{i}").claims.add(
            id=f"h{i}",
            subject=SUBJECT,
            predicate=PREDICATE,
            source="test_result",
            source_ref=f"probe-{i}",
            confidence=0.9,
        )
        claim.value.string_value = VALUES[i % 3]
    return request.SerializeToString()


def heavy_cases(service: str, claims: int, base: int) -> list[tuple[str, str, bytes]]:
    if service == "resolver":
        return [
            (f"ResolveEvidence, {claims:,} claims", RESOLVER + "ResolveEvidence",
             resolve_evidence(claims, max(1, claims // 100))),
            (f"ResolveHypotheses FULL, {base:,} claims x 1,024 hypotheses",
             RESOLVER + "ResolveHypotheses", hypotheses(base, 1024)),
        ]  # fmt: skip
    if service == "planner":
        return [(f"PlanEvidence, {claims:,} claims on the planned semantic",
                 PLANNER + "PlanEvidence", plan_evidence(claims))]  # fmt: skip
    return []


def sigterm_heavy(service: str, claims: int) -> tuple[str, str, bytes] | None:
    """A CPU-bound call that succeeds but outlasts the grace (the resolver's) or waits on
    the resolver (the planner's), to be in flight at SIGTERM."""
    if service == "resolver":
        # Under the 64 MiB message limit (~90 bytes a claim): a larger request is refused by
        # gRPC on arrival, and while the client is still sending it the other callers' calls
        # queue behind it on the same connection, never reaching the server before SIGTERM.
        more = min(3 * claims, 600_000)
        return (f"ResolveEvidence, {more:,} claims", RESOLVER + "ResolveEvidence",
                resolve_evidence(more, max(1, more // 100)))  # fmt: skip
    return next(iter(heavy_cases(service, claims, 0)), None)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def busy_for(server: Server, since: float, limit: float = 60) -> float:
    """Seconds after ``since`` until the process stops using CPU (below 20% of a core for
    half a second): how long it kept working, whether or not it still answered calls."""
    last_busy, before, at = since, cpu_seconds(server.process.pid), time.monotonic()
    while time.monotonic() - since < limit and time.monotonic() - last_busy < 0.5:
        await asyncio.sleep(0.1)
        used, now = cpu_seconds(server.process.pid), time.monotonic()
        if (used - before) / (now - at) > 0.2:
            last_busy = now
        before, at = used, now
    return max(0.0, last_busy - since)


async def probe_heavy(
    server: Server, label: str, method: str, payload: bytes, deadline: float
) -> None:
    follow_method, follow = small_call(server.name)
    check = health_pb2.HealthCheckRequest().SerializeToString()
    checks: list[tuple[float, bool]] = []
    stop = asyncio.Event()
    watched = [server] if server.upstream is None else [server, server.upstream]

    async with (
        grpc.aio.insecure_channel(server.target, options=PLAIN) as channel,
        grpc.aio.insecure_channel(server.target) as prober,
    ):
        health = prober.unary_unary(HEALTH_CHECK)
        await health(check, timeout=5)  # connected before the heavy call goes out

        async def one_check() -> None:
            sent = time.monotonic()
            try:
                reply = health_pb2.HealthCheckResponse.FromString(await health(check, timeout=1))
                checks.append((time.monotonic() - sent, reply.status == 1))
            except grpc.aio.AioRpcError:
                checks.append((time.monotonic() - sent, False))

        async def poll() -> None:
            pending = []
            while not stop.is_set():
                pending.append(asyncio.ensure_future(one_check()))
                with suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.1)
            await asyncio.gather(*pending)

        poller = asyncio.ensure_future(poll())
        sent = time.monotonic()
        heavy = await call_once(channel.unary_unary(method), payload, deadline)
        gave_up = time.monotonic()
        busy = asyncio.gather(*(busy_for(s, gave_up) for s in watched))
        follow_up = await call_once(channel.unary_unary(follow_method), follow, 120)
        answered = time.monotonic()
        working = await busy
        stop.set()
        await poller
    ok = sum(1 for _, good in checks if good)
    slowest = max((took for took, _ in checks), default=0.0)
    print(
        f"  {label} ({len(payload) / 2**20:.1f} MiB), deadline {deadline:g}s:"
        f" {heavy.code} after {gave_up - sent:.2f}s"
    )
    print(
        f"    a follow-up {follow_method.rsplit('/', 1)[1]} ({follow_up.code}) answered"
        f" {answered - gave_up:.2f}s after the caller gave up; CPU busy for "
        + ", ".join(f"{s:.2f}s ({w.name})" for s, w in zip(working, watched, strict=True))
        + " after it"
    )
    print(
        f"    health checks every 100 ms: {ok}/{len(checks)} answered SERVING within 1s"
        f" = {100 * ok / max(1, len(checks)):.0f}% (target 100%); slowest {slowest:.2f}s"
    )


# --- 4. burst --------------------------------------------------------------------------


async def probe_burst(server: Server, calls: int, clients: int) -> None:
    method, payload = load_call(server.name)
    lines = server.log_lines()
    channels = [grpc.aio.insecure_channel(server.target, options=PLAIN) for _ in range(clients)]
    try:
        for channel in channels:
            await channel.channel_ready()
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(
                call_once(channels[i % clients].unary_unary(method), payload, 60)
                for i in range(calls)
            )
        )
        took = time.monotonic() - started
    finally:
        for channel in channels:
            await channel.close()
    counted = Counter(o.code for o in outcomes)
    refused = [o for o in outcomes if o.code in REFUSALS]
    known = ("OK", *REFUSALS, "CANCELLED")
    other = {code: n for code, n in counted.items() if code not in known}
    dropped = sum(1 for o in outcomes if not actionable(o))
    print(
        f"  {calls:,} simultaneous {method.rsplit('/', 1)[1]} from {clients} channels,"
        f" all done in {took:.1f}s:"
    )
    print(
        f"  OK {counted['OK']}, RESOURCE_EXHAUSTED {counted['RESOURCE_EXHAUSTED']},"
        f" UNAVAILABLE {counted['UNAVAILABLE']} ({sum(o.retry_info for o in refused)} refusals"
        f" with RetryInfo), CANCELLED {counted['CANCELLED']}, other {other or 0}"
    )
    print(
        f"  dropped without an actionable status: {dropped} (target 0);"
        f" server log lines (warning and up) meanwhile: {server.log_lines() - lines}"
    )


# --- 6. compression bombs ---------------------------------------------------------------


def _pyarrow() -> Any:
    """pyarrow, untyped (it ships no type stubs)."""
    return importlib.import_module("pyarrow")


def identical_stream(rows: int, codec: str | None, ref_chars: int = 0) -> bytes:
    """``rows`` identical id-less claims as an Arrow IPC stream (``ref_chars``: a repeated
    ``source_ref`` of that length): what compresses best, and ties everywhere."""
    pa = _pyarrow()
    columns = {
        "subject": pa.array([SUBJECT] * rows).dictionary_encode(),
        "predicate": pa.array([PREDICATE] * rows).dictionary_encode(),
        "value": pa.array(['"key"'] * rows).dictionary_encode(),
        "source": pa.array(["test_result"] * rows).dictionary_encode(),
        "confidence": pa.array([0.9] * rows, pa.float64()),
    }
    if ref_chars:
        columns["source_ref"] = pa.array(["r" * ref_chars] * rows)
    table = pa.table(columns)
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def resolve_columns(stream: bytes) -> bytes:
    summary = resolver_service_pb2.RESOLUTION_DETAIL_SUMMARY
    request = resolver_service_pb2.ResolveColumnsRequest(claims_arrow=stream, detail=summary)
    return request.SerializeToString()


def bomb_cases(rows: int) -> list[tuple[str, bytes]]:
    """The rows bomb at ``rows`` and twice that (the finding's two sizes at the default),
    the bytes bomb, and a large allowed stream (uncompressed) to compare them with."""
    cases = [
        (f"rows bomb, {n:,} identical rows, ZSTD", identical_stream(n, "zstd"))
        for n in (rows, 2 * rows)
    ]
    few = max(1, rows // 50)
    cases.append(
        (f"bytes bomb, {few:,} rows of 2,000-char refs, ZSTD",
         identical_stream(few, "zstd", ref_chars=2_000))
    )  # fmt: skip
    allowed = max(1, rows // 5)
    cases.append((f"allowed, {allowed:,} identical rows, uncompressed",
                  identical_stream(allowed, None)))  # fmt: skip
    return cases


def reset_peak(pid: int) -> bool:
    """Reset the process's ``VmHWM`` to its resident size now (Linux, same user)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def limit_of(error: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo metadata's ``limit_name`` (the limit a refusal names), if any."""
    for key, value in error.trailing_metadata() or ():
        if key != DETAILS_KEY:
            continue
        for detail in status_pb2.Status.FromString(value).details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                return str(info.metadata.get("limit_name", info.reason))
    return ""


async def probe_bomb(server: Server, label: str, stream: bytes) -> None:
    check = health_pb2.HealthCheckRequest().SerializeToString()
    checks: list[bool] = []
    done = asyncio.Event()
    pid = server.process.pid
    async with (
        grpc.aio.insecure_channel(server.target, options=PLAIN) as channel,
        grpc.aio.insecure_channel(server.target) as prober,
    ):
        health = prober.unary_unary(HEALTH_CHECK)
        await health(check, timeout=5)

        async def one_check() -> None:
            try:
                reply = health_pb2.HealthCheckResponse.FromString(await health(check, timeout=1))
                checks.append(reply.status == 1)
            except grpc.aio.AioRpcError:
                checks.append(False)

        async def poll() -> None:
            pending = []
            while not done.is_set():
                pending.append(asyncio.ensure_future(one_check()))
                with suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), 0.1)
            await asyncio.gather(*pending)

        peak_reset = reset_peak(pid)
        before = server.rss_mib()
        poller = asyncio.ensure_future(poll())
        sent = time.monotonic()
        call = channel.unary_unary(RESOLVER + "ResolveColumns")
        try:
            await call(resolve_columns(stream), timeout=300)
            outcome = "OK"
        except grpc.aio.AioRpcError as error:
            limit = limit_of(error)
            outcome = error.code().name + (f" ({limit})" if limit else "")
        took = time.monotonic() - sent
        done.set()
        await poller
    peak = server.peak_mib() if peak_reset else float("nan")
    ok = sum(checks)
    print(f"  {label} ({len(stream):,} bytes): {outcome} after {took:.2f}s")
    print(
        f"    RSS {before:,.0f} MiB before, peak {peak:,.0f} MiB during the call;"
        f" health checks every 100 ms: {ok}/{len(checks)} answered SERVING within 1s"
        f" = {100 * ok / max(1, len(checks)):.0f}% (target 100%)"
    )


# --- 5. SIGTERM under load --------------------------------------------------------------


@dataclass
class Sent:
    sent: float
    done: float
    outcome: Outcome
    heavy: bool


@dataclass
class Load:
    """What the SIGTERM probe's callers saw."""

    calls: list[Sent] = field(default_factory=list)
    heavy_since: float | None = None  # when the heavy call now in flight was sent
    watched: list[tuple[float, str]] = field(default_factory=list)
    polled: list[tuple[float, str]] = field(default_factory=list)
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)

    def check(self, callers: int, heavy: bool) -> None:
        """Sets ``go`` once the load flows (some small calls have been answered) and, with a
        heavy caller, its call has been running for a moment (so SIGTERM finds it in flight,
        not queued)."""
        since = self.heavy_since
        running = since is not None and time.monotonic() - since >= HEAVY_HEAD_START
        # A server that answers the heavy call at once (refuses it, say) is not waited on.
        fast = sum(c.heavy and c.done - c.sent < HEAVY_HEAD_START for c in self.calls) >= 2
        flowing = sum(not c.heavy for c in self.calls) >= min(callers, 20)
        if flowing and (not heavy or running or fast):
            self.go.set()


def status_name(raw: bytes) -> str:
    status = health_pb2.HealthCheckResponse.FromString(raw).status
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(status))


async def probe_sigterm(server: Server, callers: int, heavy: tuple[str, str, bytes] | None) -> None:
    method, payload = load_call(server.name)
    check = health_pb2.HealthCheckRequest().SerializeToString()
    load = Load()
    loop = asyncio.get_running_loop()

    async with (
        grpc.aio.insecure_channel(server.target, options=PLAIN) as channel,
        grpc.aio.insecure_channel(server.target) as prober,
    ):

        async def caller(call_method: str, request: bytes, is_heavy: bool) -> None:
            call = channel.unary_unary(call_method)
            while not load.exited.is_set():
                sent = time.monotonic()
                if is_heavy:
                    load.heavy_since = sent
                    loop.call_later(HEAVY_HEAD_START, load.check, callers, True)
                outcome = await call_once(call, request, 30)
                if is_heavy:
                    load.heavy_since = None
                load.calls.append(Sent(sent, time.monotonic(), outcome, is_heavy))
                load.check(callers, heavy is not None)
                if outcome.code != "OK":
                    await asyncio.sleep(0.1)  # as a retrying client would back off

        async def watch() -> str:
            stream = prober.unary_stream(HEALTH_WATCH)(check, timeout=60)
            try:
                async for raw in stream:
                    load.watched.append((time.monotonic(), status_name(raw)))
            except grpc.aio.AioRpcError as error:
                return str(error.code().name)
            return "OK (stream closed)"

        async def poll() -> None:
            call = prober.unary_unary(HEALTH_CHECK)
            while not load.exited.is_set():
                sent = time.monotonic()
                try:
                    load.polled.append((sent, status_name(await call(check, timeout=1))))
                except grpc.aio.AioRpcError as error:
                    load.polled.append((sent, error.code().name))
                with suppress(TimeoutError):
                    await asyncio.wait_for(load.exited.wait(), 0.1)

        watcher = asyncio.ensure_future(watch())
        tasks = [asyncio.ensure_future(caller(method, payload, False)) for _ in range(callers)]
        if heavy is not None:
            tasks.append(asyncio.ensure_future(caller(heavy[1], heavy[2], True)))
        tasks.append(asyncio.ensure_future(poll()))
        with suppress(TimeoutError):
            await asyncio.wait_for(load.go.wait(), 30)
        term = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(server.process.wait, 30)
        gone = time.monotonic()
        load.exited.set()
        await asyncio.gather(*tasks)
        try:
            stream_end = await asyncio.wait_for(watcher, 10)
        except TimeoutError:
            stream_end = "still open 10s after the exit"
        ended = time.monotonic()

    running = server.process.poll() is None
    exit_time = gone - term
    verdict = "within" if exit_time <= GRACE + 1 and not running else "OVER"
    how = "still running after 30s" if running else f"exit code {server.process.returncode}"
    also = f" + 1 caller of {heavy[0]}" if heavy else ""
    print(f"  {callers} callers of {method.rsplit('/', 1)[1]}{also}, then SIGTERM:")
    print(
        f"    exit after {exit_time:.2f}s, {how} ({verdict} the grace + 1 = {GRACE + 1:g}s target)"
    )
    at_term = [c for c in load.calls if c.sent < term <= c.done]
    in_flight = [c.outcome for c in at_term if not c.heavy]
    heavy_in_flight = [c.outcome for c in at_term if c.heavy]
    after = [c.outcome for c in load.calls if term <= c.sent < gone]
    print(f"    in flight at SIGTERM (incl. queued): {codes(in_flight)}")
    if heavy is not None:
        print(f"    heavy call in flight at SIGTERM: {codes(heavy_in_flight)}")
    dropped = sum(not actionable(o) for o in in_flight + heavy_in_flight + after)
    print(
        f"    sent after SIGTERM, before exit: {codes(after)};"
        f" dropped without an actionable status: {dropped} (target 0)"
    )
    statuses = [status for at, status in load.watched if at >= term]
    print(
        f"    Health.Watch after SIGTERM: saw {', '.join(statuses) or 'nothing'}; the stream"
        f" ended {ended - term:.2f}s after SIGTERM with {stream_end}"
    )
    seen = Counter(status for at, status in load.polled if at >= term)
    print(f"    Check polls after SIGTERM: {', '.join(f'{k} {n}' for k, n in seen.items())}")


# --- main ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    memory_count: int
    memory_mib: int
    settle: float
    heavy_claims: int
    hypotheses_base: int
    deadline: float
    burst: int
    clients: int
    callers: int
    bomb_rows: int


def settings(args: argparse.Namespace) -> Settings:
    if args.quick:
        return Settings(3, 20, 3.0, 20_000, 1_000, 0.3, 500, 5, 50, 1_000_000)
    return Settings(
        args.rejected,
        args.rejected_mib,
        args.settle,
        args.heavy_claims,
        args.hypotheses_base,
        args.deadline,
        args.burst,
        10,
        args.callers,
        args.bomb_rows,
    )


SHARED = ("errors", "burst", "bombs", "heavy")  # probes that share one server, in this order


@contextmanager
def section(probe: str) -> Iterator[None]:
    started = time.monotonic()
    print(f"{TITLES[probe]}:")
    yield
    print(f"  ({time.monotonic() - started:.0f}s)")


def run_service(
    root: Path, extra: list[str], service: str, probes: Sequence[str], s: Settings
) -> None:
    """Every chosen probe against ``service``: errors, burst and heavy share one server (the
    heaviest last); memory and SIGTERM each get a fresh one."""
    cases = heavy_cases(service, s.heavy_claims, s.hypotheses_base)
    shared = [p for p in SHARED if p in probes]
    if shared:
        with Fleet(root, extra) as fleet:
            server = fleet.serve(service)
            for probe in shared:
                with section(probe):
                    if probe == "errors":
                        asyncio.run(probe_errors(server))
                    elif probe == "burst":
                        asyncio.run(probe_burst(server, s.burst, s.clients))
                    elif probe == "bombs":
                        if service == "resolver":
                            for label, payload in bomb_cases(s.bomb_rows):
                                asyncio.run(probe_bomb(server, label, payload))
                        else:
                            print("  n/a (no columnar RPC)")
                    elif cases:
                        for label, method, payload in cases:
                            asyncio.run(probe_heavy(server, label, method, payload, s.deadline))
                    else:
                        print("  n/a (no CPU-heavy RPC)")
    if "memory" in probes:
        with section("memory"), Fleet(root, extra) as fleet:
            server = fleet.serve(service)
            asyncio.run(probe_memory(server, s.memory_count, s.memory_mib, s.settle))
    if "sigterm" in probes:
        with section("sigterm"), Fleet(root, extra) as fleet:
            server = fleet.serve(service, "--grace", f"{GRACE:g}")
            asyncio.run(probe_sigterm(server, s.callers, sigterm_heavy(service, s.heavy_claims)))


TITLES = {
    "errors": "oversized errors: status details of the worst bad input",
    "burst": "a burst of simultaneous calls",
    "bombs": "compression bombs (ResolveColumns), health checked meanwhile",
    "heavy": "a heavy request with a short deadline, health checked meanwhile",
    "memory": "rejected large requests: resident memory",
    "sigterm": f"SIGTERM under load, --grace {GRACE:g}",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--service", action="append", choices=SERVICES, help="default: all")
    parser.add_argument("--probe", action="append", choices=PROBES, help="default: all")
    parser.add_argument("--rejected", type=int, default=10, help="large rejected requests")
    parser.add_argument("--rejected-mib", type=int, default=32, help="their size in MiB")
    parser.add_argument(
        "--settle", type=float, default=10.0, help="seconds to wait for memory to settle"
    )
    # 500,000: ResolveEvidence over 100,000 claims finishes within the 1 s deadline on 2 cores,
    # so it would not show what happens to work the caller gave up on.
    parser.add_argument("--heavy-claims", type=int, default=500_000)
    parser.add_argument(
        "--hypotheses-base",
        type=int,
        default=3_000,
        help="base claims of the heavy ResolveHypotheses",
    )
    parser.add_argument("--deadline", type=float, default=1.0, help="the heavy call's deadline")
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--callers", type=int, default=200, help="callers in the SIGTERM probe")
    parser.add_argument(
        "--bomb-rows",
        type=int,
        default=1_000_000,
        help="rows of the smaller rows bomb (the larger has twice as many)",
    )
    parser.add_argument(
        "--max-concurrent-rpcs", type=int, help="passed to the servers when they know the flag"
    )
    args = parser.parse_args(argv)
    s = settings(args)
    flags = serve_flags()
    extra: list[str] = []
    if args.max_concurrent_rpcs is not None and "--max-concurrent-rpcs" in flags:
        extra += ["--max-concurrent-rpcs", str(args.max_concurrent_rpcs)]
    optional = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in OPTIONAL_FLAGS)
    print(f"assay serve knows {optional}; extra flags used: {' '.join(extra) or 'none'}")
    print(
        f"{os.cpu_count()} CPUs; {'quick' if args.quick else 'full'} run; servers log at"
        " warning level; every call has a deadline"
    )
    os.environ["ASSAY_LOG_LEVEL"] = "warning"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="assay-hostile-") as tmp:
        for service in args.service or SERVICES:
            print(f"\n== {service}")
            run_service(Path(tmp), extra, service, args.probe or PROBES, s)
    print(f"\ntotal {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
