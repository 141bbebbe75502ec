"""One phase of load: many concurrent callers of one kind of call, timed call by call.

``Requests`` holds every call's bytes, serialized before any clock starts (the
adjudication cases and reviewers are registered first, through the server itself);
``run_phase`` drives one kind of call and returns a ``Phase``: calls/s, p99, the
server's CPU per call, and how busy the rest of the machine was meanwhile.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

import grpc
from planner import plan_request
from resolver import build_evidence
from service_fleet import Fleet, busy_seconds, cpu_of

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import gold_pb2, resolver_service_pb2

DISTURBED_CORES = 0.3  # other processes' CPU over a phase, in cores, that marks it disturbed
HEALTH = "/grpc.health.v1.Health/Check"
_ADJ = "/assay.v1.AdjudicationService/"
METHODS = {
    "ResolveSemantic": "/assay.v1.ResolverService/ResolveSemantic",
    "PlanEvidence": "/assay.v1.PlannerService/PlanEvidence",
    "GetCaseState": _ADJ + "GetCaseState",
    "SubmitReview": _ADJ + "SubmitReview",
}
# Whose CPU a call uses: the planner's calls reach its resolver too.
CPU_OF = {"planner": ("planner", "resolver")}


@dataclass
class Phase:
    calls: int  # served; refused and failed calls are counted in ``errors`` only
    wall: float
    p99: float
    cpu: float  # the server's (and, for the planner, its resolver's) CPU seconds
    others: float  # cores other processes kept busy on average
    errors: int

    @property
    def rate(self) -> float:
        return self.calls / self.wall

    @property
    def cpu_per_call(self) -> float:
        return self.cpu / max(1, self.calls)

    @property
    def disturbed(self) -> bool:
        return self.others > DISTURBED_CORES

    def line(self, name: str) -> str:
        mark = "*" if self.disturbed else " "
        return (
            f"{name:<18} {self.rate:>8,.0f}/s p99 {self.p99 * 1000:>7.1f} ms"
            f" CPU {self.cpu_per_call * 1e6:>6,.0f} us/call others {self.others:.2f}{mark}"
            + (f" ERRORS {self.errors}" if self.errors else "")
        )


@dataclass
class Requests:
    """What each kind of call sends to one fleet: one request, or (reviews) per round and
    caller, the list to send in order."""

    fixed: dict[str, bytes]
    reviews: list[list[list[bytes]]]

    @classmethod
    async def prepare(cls, fleet: Fleet, rounds: int, reviews: int, callers: int) -> Requests:
        semantic = resolver_service_pb2.ResolveSemanticRequest(
            evidence=build_evidence(10), subject="api:svc0.op0", predicate="idempotency.mode"
        )
        callers -= callers % 2  # in pairs
        cases = await _seed_cases(fleet.targets["adjudication"], callers, rounds * reviews // 2)
        read_case = cases.pop()  # reviewed twice below: a read of a resolved case
        per_round = reviews // 2
        plans = [
            _review_plan(callers, cases[r * per_round : (r + 1) * per_round]) for r in range(rounds)
        ]
        async with grpc.aio.insecure_channel(fleet.targets["adjudication"]) as channel:
            submit = channel.unary_unary(METHODS["SubmitReview"])
            for reviewer in ("r0", "r1"):
                await submit(_review(reviewer, read_case), timeout=30)
        return cls(
            {
                "ResolveSemantic": semantic.SerializeToString(),
                "PlanEvidence": plan_request(10, True).SerializeToString(),
                "GetCaseState": adj.GetCaseStateRequest(case_id=read_case).SerializeToString(),
                "noop": b"",  # an empty HealthCheckRequest: the server as a whole
            },
            plans,
        )


async def _seed_cases(target: str, reviewers: int, count: int) -> list[str]:
    """Register ``reviewers`` fixture reviewers r0, r1, ... and enqueue ``count`` + 1 cases."""
    async with grpc.aio.insecure_channel(target) as channel:
        register = channel.unary_unary(_ADJ + "RegisterReviewer")
        enqueue = channel.unary_unary(_ADJ + "EnqueueCase")
        kind = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
        for i in range(reviewers):
            reviewer = adj.Reviewer(reviewer_id=f"r{i}", kind=kind)
            await register(adj.RegisterReviewerRequest(reviewer=reviewer).SerializeToString())
        case = adj.Case(tenant="bench", subject="api:x", predicate="retries.mode")
        case.lineage.origin = "bench"
        for value in ("safe", "unsafe"):
            case.candidate_values.add().string_value = value
        case.local_verdict.string_value = "safe"
        raw = adj.EnqueueCaseRequest(case=case).SerializeToString()
        ids: list[str] = []

        async def worker(n: int) -> None:
            for _ in range(n):
                reply = adj.EnqueueCaseResponse.FromString(await enqueue(raw, timeout=30))
                ids.append(reply.case.case_id)

        share, rest = divmod(count + 1, 20)
        await asyncio.gather(*(worker(share + (i < rest)) for i in range(20)))
        return ids


def _review(reviewer: str, case_id: str) -> bytes:
    request = adj.SubmitReviewRequest(
        request_id=uuid.uuid4().hex,
        case_id=case_id,
        reviewer_id=reviewer,
        outcome=adj.REVIEW_OUTCOME_LABEL,
    )
    request.label.string_value = "safe"
    return request.SerializeToString()


def _review_plan(callers: int, cases: list[str]) -> list[list[bytes]]:
    """Callers 2k and 2k+1 (reviewers rk) review the same cases: each ends with two reviews."""
    plan: list[list[bytes]] = [[] for _ in range(callers)]
    for n, case_id in enumerate(cases):
        first = 2 * (n % (callers // 2))
        plan[first].append(_review(f"r{first}", case_id))
        plan[first + 1].append(_review(f"r{first + 1}", case_id))
    return plan


async def run_phase(
    fleet: Fleet,
    server: str,
    requests: Requests,
    name: str,
    in_flight: int,
    seconds: float,
    round_: int,
) -> Phase:
    """``in_flight`` callers of ``name`` on ``server`` for ``seconds`` (``SubmitReview``:
    until the round's reviews are sent, with as many callers as the plan has)."""
    latencies: list[float] = []
    errors = 0
    async with grpc.aio.insecure_channel(fleet.targets[server]) as channel:
        call = channel.unary_unary(HEALTH if name.startswith("noop") else METHODS[name])
        fixed = requests.fixed.get("noop" if name.startswith("noop") else name, b"")

        async def one(raw: bytes) -> None:
            nonlocal errors
            sent = time.perf_counter()
            try:
                await call(raw, timeout=60)
            except grpc.RpcError:  # refused (e.g. over the admission bound): not served
                errors += 1
                return
            latencies.append(time.perf_counter() - sent)

        async def timed() -> None:
            while time.perf_counter() < deadline:
                await one(fixed)

        async def listed(mine: list[bytes]) -> None:
            for raw in mine:
                await one(raw)

        await channel.channel_ready()
        whose = CPU_OF.get(server, (server,))
        cpu0, busy0, own0 = fleet.cpu_seconds(*whose), busy_seconds(), _ours(fleet)
        started = time.perf_counter()
        deadline = started + seconds
        if name == "SubmitReview":
            await asyncio.gather(*(listed(mine) for mine in requests.reviews[round_]))
        else:
            await asyncio.gather(*(timed() for _ in range(in_flight)))
        wall = time.perf_counter() - started
        cpu = fleet.cpu_seconds(*whose) - cpu0
        others = (busy_seconds() - busy0) - (_ours(fleet) - own0)
    latencies.sort()
    p99 = (
        latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))] if latencies else 0.0
    )
    return Phase(len(latencies), wall, p99, cpu, max(0.0, others) / wall, errors)


def _ours(fleet: Fleet) -> float:
    """CPU of this client and the fleet under load (the other fleet idles meanwhile)."""
    return cpu_of("self") + fleet.cpu_seconds()
