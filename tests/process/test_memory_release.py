"""Rejected large requests leave nothing behind, and no log line grows with the input:
through real ``assay serve`` processes, measured as the operating system sees them.

Resident memory is the process's ``VmRSS`` from ``/proc``; nothing here forces a garbage
collection in the server, so what comes back is what a real server would give back.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import adjudication_service_pb2_grpc as adj_grpc
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as res
from assay.v1 import resolver_service_pb2_grpc as res_grpc
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, free_port, service_process

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(
        not Path("/proc/self/status").exists() or platform.libc_ver()[0] != "glibc",
        reason="reads /proc and relies on glibc's malloc_trim",
    ),
]

MIB = 1 << 20
# Under the 64 MiB default --max-message-bytes, and under the 32 MiB up to which glibc
# would keep such blocks in its heaps after the first (see assay.runtime.memory).
LARGE = 20 * MIB
REJECTED_CALLS = 8
SETTLED_RATIO = 1.5  # of the baseline: the target
SETTLE_SECONDS = 15.0
MAX_LOG_LINE = 4096

Call = Callable[[int], None]


def resident_mib(pid: int) -> float:
    """The process's resident set size in MiB, as the kernel reports it."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def expect_invalid(call: Callable[[], object]) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, raised.value.details()


def submit_review(channel: grpc.Channel) -> Call:
    """SubmitReview with a ``reason`` of the given size (more than 1,024 characters, and no
    case or reviewer by those names): INVALID_ARGUMENT."""
    stub = adj_grpc.AdjudicationServiceStub(channel)

    def call(size: int) -> None:
        request = adj.SubmitReviewRequest(
            case_id="no-such-case",
            reviewer_id="no-such-reviewer",
            outcome=adj.REVIEW_OUTCOME_UNRESOLVED,
            reason="r" * size,
        )
        expect_invalid(lambda: stub.SubmitReview(request, timeout=60))

    return call


def resolve_semantic(channel: grpc.Channel) -> Call:
    """ResolveSemantic over one claim with a source kind that does not exist and a value
    of the given size: INVALID_ARGUMENT."""
    stub = res_grpc.ResolverServiceStub(channel)

    def call(size: int) -> None:
        evidence = claim_pb2.Evidence()
        claim = evidence.claims.add(subject="api:x", predicate="idempotency.mode")
        claim.source = "runtime-trace"  # the kind is runtime_trace
        claim.value.string_value = "v" * size
        request = res.ResolveSemanticRequest(
            evidence=evidence, subject="api:x", predicate="idempotency.mode"
        )
        expect_invalid(lambda: stub.ResolveSemantic(request, timeout=60))

    return call


def unknown_source_kind(channel: grpc.Channel) -> Call:
    """ResolveSemantic over one claim whose source kind, of the given size, does not
    exist: the kind is what a violation names."""
    stub = res_grpc.ResolverServiceStub(channel)

    def call(size: int) -> None:
        evidence = claim_pb2.Evidence()
        claim = evidence.claims.add(subject="api:x", predicate="idempotency.mode")
        claim.source = "k" * size
        claim.value.string_value = "key"
        request = res.ResolveSemanticRequest(
            evidence=evidence, subject="api:x", predicate="idempotency.mode"
        )
        with pytest.raises(grpc.RpcError):  # which code is test_resolver_errors' concern
            stub.ResolveSemantic(request, timeout=60)

    return call


LARGE_REJECTED: dict[str, Callable[[grpc.Channel], Call]] = {
    "adjudication": submit_review,
    "resolver": resolve_semantic,
}
LARGE_BAD_VALUE: dict[str, Callable[[grpc.Channel], Call]] = {
    "adjudication": submit_review,
    "resolver": unknown_source_kind,
}


@pytest.fixture(params=sorted(LARGE_REJECTED))
def served(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, AssayProcess, grpc.Channel]]:
    service: str = request.param
    port = free_port()
    args = ["serve", service, "--port", str(port)]
    if service == "adjudication":
        args += ["--db", str(tmp_path / "assay.db")]
    with (
        service_process(args, tmp_path / f"{service}.log", port) as running,
        grpc.insecure_channel(running.target) as channel,
    ):
        yield service, running, channel


class TestRejectedLargeRequests:
    def test_resident_memory_returns_near_baseline(
        self, served: tuple[str, AssayProcess, grpc.Channel]
    ) -> None:
        """Eight rejected 20 MiB requests, then resident memory settles within 1.5x of what
        it was before them, with no collection forced."""
        service, running, channel = served
        call = LARGE_REJECTED[service](channel)
        pid = running.process.pid
        call(4096)  # the rejection path, warmed with a small request
        baseline = resident_mib(pid)
        for _ in range(REJECTED_CALLS):
            call(LARGE)
        peak = resident_mib(pid)

        def settled() -> bool:
            now = resident_mib(pid)
            assert now <= baseline * SETTLED_RATIO, (
                f"resident memory {baseline:.0f} MiB before {REJECTED_CALLS} rejected "
                f"{LARGE // MIB} MiB requests, {peak:.0f} MiB after them, {now:.0f} MiB now"
            )
            return True

        eventually(
            settled,
            message="resident memory to settle near its baseline",
            timeout=SETTLE_SECONDS,
            interval=0.1,
            ignoring=(AssertionError,),
        )


class TestLogLinesStayBounded:
    def test_a_megabyte_bad_value_writes_only_short_lines(
        self, served: tuple[str, AssayProcess, grpc.Channel]
    ) -> None:
        """A request rejected for a 1 MiB value: every line the server wrote, the call's
        among them, is under 4 KiB."""
        service, running, channel = served
        LARGE_BAD_VALUE[service](channel)(MIB)
        assert running.terminate() == 0
        raw_lines = running.log_path.read_text(encoding="utf-8").splitlines()
        assert [len(line) for line in raw_lines if len(line) >= MAX_LOG_LINE] == []
        rpc = [line for line in running.log_lines() if line.get("event") == "rpc"]
        assert len(rpc) == 1
        assert rpc[0]["code"] != "OK"
