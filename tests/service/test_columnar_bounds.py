"""ResolveColumns is bounded like the per-claim RPCs: through real resolver processes.

Hostile testing found that 2,960 bytes of ZSTD-compressed Arrow expanded to a million
rows, 22 s of work on the event loop and 1.6 GB, while 20 of 25 health checks failed.
Here: the compression bombs are refused with RESOURCE_EXHAUSTED and
ERROR_REASON_REQUEST_TOO_EXPENSIVE naming the limit, each limit is set by its flag or its
``ASSAY_*`` twin, health checks sent throughout a large allowed request all answer, the
server's memory settles after such requests, and one whose caller's deadline passes is
stopped (the server logs it) and leaves the server answering; in process, a small
compressed stream that declares many rows goes to a worker.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pyarrow as pa
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from assay.errors import Reason
from assay.runtime.status import decode_rpc_error
from assay.services.resolver.adapters.offload import INLINE_MAX_UNITS
from assay.services.resolver.adapters.servicer import COLUMNS_BYTES_PER_UNIT, ResolverServicer
from assay.v1 import resolver_service_pb2 as rpb
from tests.support.arrow_bombs import identical, ipc, varied
from tests.support.eventually import eventually_async
from tests.support.heavy_calls import health_while, work_stopped
from tests.support.processes import AssayProcess, assay_command, free_port, service_process
from tests.support.resolver_in_process import OPTIONS, resolver_in_process

RESOLVE_COLUMNS = "/assay.v1.ResolverService/ResolveColumns"
SERVING = health_pb2.HealthCheckResponse.SERVING
TIMEOUT = 120.0
# Generous bounds, for two shared cores: how long to wait for memory to settle.
SETTLE_SECONDS = 15.0
SETTLED_RATIO = 1.5
# Identical id-less rows all tie, so each is given a content reference: ~25 us a row, the
# slowest rows the engine has, sent uncompressed (about 24 bytes a row) so no limit applies.
HEAVY_ROWS = 200_000
STOPPED_ROWS = 300_000


def columns_request(data: bytes, detail: int = rpb.RESOLUTION_DETAIL_SUMMARY) -> bytes:
    request = rpb.ResolveColumnsRequest(claims_arrow=data, detail=detail)  # type: ignore[arg-type]
    return request.SerializeToString()


def start(tmp: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[AssayProcess]:
    port = free_port()
    args = ["serve", "resolver", "--port", str(port), *flags]
    with service_process(args, tmp / "resolver.log", port, env=env) as running:
        yield running


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    """A resolver with the default limits."""
    yield from start(tmp_path_factory.mktemp("columnar-bounds"))


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    """A resolver with lower limits: two by flag, one by environment variable."""
    flags = ("--columns-max-rows", "50000", "--columns-max-ratio", "4")
    env = {"ASSAY_COLUMNS_MAX_BYTES": "1000000"}
    yield from start(tmp_path_factory.mktemp("columnar-configured"), *flags, env=env)


async def refused(target: str, data: bytes) -> dict[str, str]:
    """Send ``data`` as a ResolveColumns stream; it must be refused with RESOURCE_EXHAUSTED
    and REQUEST_TOO_EXPENSIVE naming ``claims_arrow``. Returns the ErrorInfo metadata."""
    async with grpc.aio.insecure_channel(target, options=OPTIONS) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await channel.unary_unary(RESOLVE_COLUMNS)(columns_request(data), timeout=TIMEOUT)
    error = decode_rpc_error(caught.value)
    assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED, (error.code, error.message)
    assert error.reason == Reason.REQUEST_TOO_EXPENSIVE, error.message
    assert [v.field for v in error.violations] == ["claims_arrow"]
    assert error.message.startswith("claims_arrow: the stream"), error.message
    return dict(error.metadata)


async def resolves(channel: grpc.aio.Channel, data: bytes) -> rpb.ResolveColumnsResponse:
    raw = await channel.unary_unary(RESOLVE_COLUMNS)(columns_request(data), timeout=TIMEOUT)
    return rpb.ResolveColumnsResponse.FromString(raw)


def resident_mib(pid: int) -> float:
    """The process's resident set size in MiB, as the kernel reports it."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.mark.process
class TestCompressionBombs:
    @pytest.mark.parametrize(
        ("rows", "codec", "limit_name"),
        [
            pytest.param(1_000_000, "zstd", "columns_max_ratio", id="1M-rows-in-3KB-zstd"),
            pytest.param(2_000_000, "zstd", "columns_max_rows", id="2M-rows-in-5KB-zstd"),
            pytest.param(1_000_000, "lz4", "columns_max_ratio", id="1M-rows-in-99KB-lz4"),
        ],
    )
    async def test_the_bombs_are_refused(
        self, resolver: AssayProcess, rows: int, codec: str, limit_name: str
    ) -> None:
        """Identical rows in a few kilobytes: RESOURCE_EXHAUSTED naming the limit passed."""
        data = ipc(identical(rows), codec)
        assert len(data) < 128 * 1024
        metadata = await refused(resolver.target, data)
        assert metadata["limit_name"] == limit_name
        assert int(metadata["requested"]) > int(metadata["limit"])

    async def test_a_bytes_bomb_is_refused(self, resolver: AssayProcess) -> None:
        """Few rows with long repeated strings: refused by what they decompress to."""
        rows = 20_000
        data = ipc(identical(rows, source_ref=pa.array(["r" * 2_000] * rows)), "zstd")
        assert len(data) < 128 * 1024  # for 40 MB of strings
        metadata = await refused(resolver.target, data)
        assert metadata["limit_name"] in ("columns_max_ratio", "columns_max_bytes")

    async def test_the_server_answers_after_the_bombs(self, resolver: AssayProcess) -> None:
        """A normal compressed request is resolved after the refusals."""
        async with grpc.aio.insecure_channel(resolver.target, options=OPTIONS) as channel:
            response = await resolves(channel, ipc(varied(5_000), "zstd"))
        assert response.semantics_arrow


@pytest.mark.process
class TestConfiguredLimits:
    @pytest.mark.parametrize(
        ("table", "codec", "limit_name", "limit"),
        [
            pytest.param(identical(60_000), None, "columns_max_rows", 50_000, id="rows-by-flag"),
            pytest.param(varied(30_000), None, "columns_max_bytes", 1_000_000, id="bytes-by-env"),
            pytest.param(identical(40_000), "zstd", "columns_max_ratio", None, id="ratio-by-flag"),
        ],
    )
    async def test_each_limit_follows_its_setting(
        self,
        configured: AssayProcess,
        table: pa.Table,
        codec: str | None,
        limit_name: str,
        limit: int | None,
    ) -> None:
        """--columns-max-rows, ASSAY_COLUMNS_MAX_BYTES and --columns-max-ratio apply."""
        metadata = await refused(configured.target, ipc(table, codec))
        assert metadata["limit_name"] == limit_name
        if limit is not None:
            assert metadata["limit"] == str(limit)

    @pytest.mark.parametrize(
        "flag", ["--columns-max-rows", "--columns-max-bytes", "--columns-max-ratio"]
    )
    def test_a_limit_must_be_positive(self, flag: str) -> None:
        """A limit of 0 stops the start with one line naming the flag."""
        args = ["serve", "resolver", "--port", str(free_port()), flag, "0"]
        done = subprocess.run(
            assay_command(*args), capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [f"assay: {flag} must be positive"]

    async def test_within_the_settings_a_stream_resolves(self, configured: AssayProcess) -> None:
        """A stream under every configured limit is answered."""
        async with grpc.aio.insecure_channel(configured.target, options=OPTIONS) as channel:
            response = await resolves(channel, ipc(varied(2_000), "zstd"))
        assert response.semantics_arrow


@pytest.mark.process
class TestLargeAllowedRequests:
    async def test_health_answers_throughout(self, resolver: AssayProcess) -> None:
        """Every health check sent while a large allowed stream is resolved answers SERVING."""
        data = ipc(identical(HEAVY_ROWS))
        async with grpc.aio.insecure_channel(resolver.target, options=OPTIONS) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
            heavy = asyncio.ensure_future(resolves(channel, data))
            answers = await health_while(channel, heavy)
            response = await heavy
        assert response.semantics_arrow
        assert len(answers) >= 5, "the large call ended too soon to check much"
        assert answers == [SERVING] * len(answers)

    async def test_memory_settles_afterwards(self, resolver: AssayProcess) -> None:
        """After large allowed streams, resident memory returns within 1.5x of before."""
        pid = resolver.process.pid
        async with grpc.aio.insecure_channel(resolver.target, options=OPTIONS) as channel:
            await resolves(channel, ipc(varied(1_000)))  # the path warmed with a small call
            baseline = resident_mib(pid)
            for _ in range(2):
                await resolves(channel, ipc(identical(HEAVY_ROWS)))
            peak = resident_mib(pid)

            def settled() -> bool:
                now = resident_mib(pid)
                assert now <= baseline * SETTLED_RATIO, (
                    f"resident memory {baseline:.0f} MiB before, {peak:.0f} MiB after two "
                    f"{HEAVY_ROWS:,}-row streams, {now:.0f} MiB now"
                )
                return True

            await eventually_async(
                settled,
                message="resident memory to settle near its baseline",
                timeout=SETTLE_SECONDS,
                interval=0.1,
                ignoring=(AssertionError,),
            )

    async def test_work_stops_at_the_callers_deadline(self, resolver: AssayProcess) -> None:
        """A large allowed stream with a 0.5 s deadline: DEADLINE_EXCEEDED, the server logs
        that it stopped the work shortly after, and answers the next call."""
        raw = columns_request(ipc(identical(STOPPED_ROWS)))
        async with grpc.aio.insecure_channel(resolver.target, options=OPTIONS) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await channel.unary_unary(RESOLVE_COLUMNS)(raw, timeout=0.5)
            assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            await work_stopped(resolver, "ResolveColumns")
            response = await resolves(channel, ipc(varied(1_000), "zstd"))
        assert response.semantics_arrow


@pytest.fixture
async def in_process() -> AsyncIterator[tuple[ResolverServicer, grpc.aio.Channel]]:
    async with resolver_in_process() as pair:
        yield pair


class TestWhereTheWorkRuns:
    async def test_a_small_stream_of_many_rows_goes_to_a_worker(
        self, in_process: tuple[ResolverServicer, grpc.aio.Channel]
    ) -> None:
        """A hundred rows stay on the loop; a few hundred bytes of ZSTD declaring 10,000
        rows run on a worker, as the same rows sent uncompressed would."""
        servicer, channel = in_process
        small = ipc(varied(100), "zstd")
        await resolves(channel, small)
        assert servicer.offload.started == 0
        many = ipc(identical(10_000), "zstd")
        # Counted by its size alone, as before, it would have stayed on the loop.
        assert len(many) // COLUMNS_BYTES_PER_UNIT <= INLINE_MAX_UNITS
        await resolves(channel, many)
        assert servicer.offload.started == 1
