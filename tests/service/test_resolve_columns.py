"""ResolveColumns through a real grpc.aio server on loopback: tables, detail, codecs, errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
import pyarrow as pa
import pytest

from assay.client.resolver import AsyncResolverClient, ResolverClient
from assay.errors import Reason
from assay.runtime.config import ServerConfig
from assay.runtime.server import serving
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.services.registry import ServeOptions
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.columnar.input.stream import codec_of
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.service import build_spec
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc
from tests.support.eventually import eventually_async
from tests.unit.resolver.columnar_support import read, stream, to_claim, to_table

TIMEOUT = 30.0
SERVICE = "assay.v1.ResolverService"
SUBJECT = "api:payments.create"


def row(value: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "subject": SUBJECT,
        "predicate": "idempotency.mode",
        "value": value,
        "source": "test_result",
        "confidence": 0.9,
    }
    base.update(fields)
    return base


ROWS = [
    row('"key"', id="c1", source_ref="t"),
    row('"none"', id="c2", source="api_spec", source_ref="s"),
    row('"old"', id="c3", source="documentation"),
    row(
        '"new"', id="c4", source="vcs_state", confidence=0.1, relation_kind=3, relation_target="c3"
    ),
    row('"x"', subject="api:other", predicate="http.method", reliability=1.0, review_status=0),
    row('"y"', subject="api:other", predicate="http.method", review_status=3),
]


@pytest.fixture
async def address() -> AsyncIterator[str]:
    async with serving([await build_spec(ServeOptions(port=0))]) as running:
        yield running[0].address


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    async with serving([await build_spec(ServeOptions(port=0))]) as running:
        options = ServerConfig().channel_options()
        async with grpc.aio.insecure_channel(running[0].address, options=options) as chan:
            yield chan


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> pb_grpc.ResolverServiceStub:
    return pb_grpc.ResolverServiceStub(channel)


async def refusal(call: Awaitable[Any]) -> DecodedError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return decode_rpc_error(caught.value)


def request(
    rows: list[dict[str, Any]] = ROWS, codec: str | None = None, **fields: Any
) -> pb.ResolveColumnsRequest:
    return pb.ResolveColumnsRequest(claims_arrow=stream(to_table(rows), codec), **fields)


class TestResolveColumns:
    async def test_full_detail_matches_resolve_evidence(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """Statuses, leaders, supports and exclusions equal ResolveEvidence's on the same server."""
        response = await stub.ResolveColumns(request(), timeout=TIMEOUT)
        evidence = pb.ResolveEvidenceRequest()
        evidence.evidence.claims.extend(to_claim(r) for r in ROWS)
        reference = await stub.ResolveEvidence(evidence, timeout=TIMEOUT)
        semantics = read(response.semantics_arrow).to_pylist()
        values = read(response.values_arrow).to_pylist()
        assert [(s["subject"], s["predicate"]) for s in semantics] == [
            (r.subject, r.predicate) for r in reference.resolutions
        ]
        for sem, res in zip(semantics, reference.resolutions, strict=True):
            assert sem["status"] == res.status
            assert values[sem["leader"]]["value_key"] == res.leader.value_key
            assert sem["confidence"] == res.confidence
            assert sem["requires_review"] == res.requires_review
        assert [v["support"] for v in values] == [
            v.support for r in reference.resolutions for v in r.values
        ]
        excluded = read(response.excluded_arrow).to_pylist()
        assert [(e["row"], e["reason"], e["superseded_by"]) for e in excluded] == [
            (2, resolution_pb2.EXCLUSION_REASON_SUPERSEDED, ["c4"]),
            (5, resolution_pb2.EXCLUSION_REASON_REVIEWED_OUT, []),
        ]
        claims = read(response.claims_arrow)
        assert claims.num_rows == len(ROWS)
        assert claims.column("value").to_pylist()[2] is None
        assert read(response.groups_arrow).num_rows == 4
        warnings = read(response.warnings_arrow).to_pylist()
        assert [(w["code"], w["message"]) for w in warnings] == [
            (w.code, w.message) for w in reference.warnings
        ]
        assert [w["row"] for w in warnings] == [4]  # the capped reliability
        assert response.coverage_confidence == reference.coverage_confidence
        assert list(response.conflicted_safety_predicates) == list(
            reference.conflicted_safety_predicates
        )

    async def test_summary_leaves_the_per_claim_tables_empty(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """SUMMARY: the same semantics and values, no claims, groups or warnings."""
        full = await stub.ResolveColumns(request(), timeout=TIMEOUT)
        summary = await stub.ResolveColumns(
            request(detail=pb.RESOLUTION_DETAIL_SUMMARY), timeout=TIMEOUT
        )
        assert summary.semantics_arrow == full.semantics_arrow
        assert summary.values_arrow == full.values_arrow
        assert summary.excluded_arrow == full.excluded_arrow
        assert (summary.claims_arrow, summary.groups_arrow, summary.warnings_arrow) == (
            b"",
            b"",
            b"",
        )
        assert full.claims_arrow
        assert full.groups_arrow

    @pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
    async def test_the_response_uses_the_request_codec(
        self, stub: pb_grpc.ResolverServiceStub, codec: str | None
    ) -> None:
        """Each response table is compressed like the request (uncompressed when it was)."""
        sent = request(codec=codec)
        assert codec_of(sent.claims_arrow) == codec
        response = await stub.ResolveColumns(sent, timeout=TIMEOUT)
        plain = await stub.ResolveColumns(request(), timeout=TIMEOUT)
        for name in ("semantics_arrow", "values_arrow", "claims_arrow", "groups_arrow"):
            data = getattr(response, name)
            assert codec_of(data) == codec, name
            assert read(data).equals(read(getattr(plain, name)))

    async def test_request_bytes_are_read_as_protobuf_reads_them(
        self, channel: grpc.aio.Channel, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """The server takes the stream uncopied from the bytes received: a stream sent
        twice (the last counts, as in protobuf), the other fields after it, answers as the
        message would; bytes that are not a request are MALFORMED_REQUEST."""
        call = channel.unary_unary(f"/{SERVICE}/ResolveColumns")
        first = pb.ResolveColumnsRequest(claims_arrow=b"not arrow").SerializeToString()
        wanted = request(detail=pb.RESOLUTION_DETAIL_SUMMARY)
        raw: bytes = await call(first + wanted.SerializeToString(), timeout=TIMEOUT)
        expected = await stub.ResolveColumns(wanted, timeout=TIMEOUT)
        assert raw == expected.SerializeToString(deterministic=True)
        assert not pb.ResolveColumnsResponse.FromString(raw).claims_arrow  # SUMMARY was read
        error = await refusal(call(b"\x0a\x05abc", timeout=TIMEOUT))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == Reason.MALFORMED_REQUEST

    async def test_a_stream_that_is_not_arrow(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """Bytes that are not Arrow IPC: MALFORMED_REQUEST naming claims_arrow."""
        error = await refusal(
            stub.ResolveColumns(
                pb.ResolveColumnsRequest(claims_arrow=b"not arrow"), timeout=TIMEOUT
            )
        )
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == Reason.MALFORMED_REQUEST
        assert [v.field for v in error.violations] == ["claims_arrow"]

    async def test_missing_unknown_and_mistyped_columns(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """Every column problem is named at once, by column."""
        table = to_table(ROWS).drop_columns(["subject", "confidence"])
        table = table.append_column("confidance", pa.array([0.9] * len(ROWS)))
        table = table.append_column("confidence", pa.array(["0.9"] * len(ROWS)))
        error = await refusal(
            stub.ResolveColumns(
                pb.ResolveColumnsRequest(claims_arrow=stream(table)), timeout=TIMEOUT
            )
        )
        assert error.reason == Reason.MALFORMED_REQUEST
        assert [v.field for v in error.violations] == [
            "claims_arrow.confidance",
            "claims_arrow.confidence",
            "claims_arrow.subject",
        ]
        assert "unknown column" in error.violations[0].description
        assert "must be float64" in error.violations[1].description
        assert "missing" in error.violations[2].description

    async def test_bad_rows_name_column_and_row(self, stub: pb_grpc.ResolverServiceStub) -> None:
        """Each bad cell is named as claims_arrow.<column>[<row>]; the reason is the first's."""
        rows = [*ROWS]
        rows[1] = row('"none"', id="c2", source="api_spec", confidence=1.5)
        rows[4] = row('"x"', id="c1", source="nope", subject="api:other")
        error = await refusal(stub.ResolveColumns(request(rows), timeout=TIMEOUT))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == Reason.INVALID_CLAIM
        assert [v.field for v in error.violations] == [
            "claims_arrow.confidence[1]",
            "claims_arrow.source[4]",
            "claims_arrow.id[4]",
        ]
        assert "already used by claims_arrow.id[0]" in error.violations[2].description
        assert "known_sources" in error.metadata

    async def test_request_fields_are_checked_with_the_rows(
        self, stub: pb_grpc.ResolverServiceStub
    ) -> None:
        """An unknown detail and a lone stale_after are INVALID_FIELD, listed before the rows."""
        sent = request(detail=9)
        sent.stale_after.seconds = 10
        error = await refusal(stub.ResolveColumns(sent, timeout=TIMEOUT))
        assert error.reason == Reason.INVALID_FIELD
        assert [v.field for v in error.violations] == ["detail", "as_of"]

    async def test_an_oversized_response_is_refused(self) -> None:
        """With a 1 MiB message limit, a response repeating long names past it is
        RESPONSE_TOO_LARGE naming claims_arrow, not grpc's own error."""
        limit = 1 << 20
        rows = [
            row('"v"', id=f"c{i}", subject=f"{i:010d}", source_ref=f"{i:0100d}")
            for i in range(5000)
        ]
        sent = request(rows)
        assert sent.ByteSize() < limit
        spec = await build_spec(ServeOptions(port=0, max_message_bytes=limit))
        config = ServerConfig(max_message_bytes=limit)
        async with (
            serving([spec], config) as running,
            grpc.aio.insecure_channel(running[0].address, options=config.channel_options()) as chan,
        ):
            error = await refusal(
                pb_grpc.ResolverServiceStub(chan).ResolveColumns(sent, timeout=TIMEOUT)
            )
        assert error.reason == Reason.RESPONSE_TOO_LARGE
        assert [v.field for v in error.violations] == ["claims_arrow"]


class TestClient:
    async def test_resolve_table_takes_a_table(self, channel: grpc.aio.Channel) -> None:
        """The async client's resolve_table sends a pyarrow Table and returns the decoded tables."""
        client = AsyncResolverClient(channel)
        result = await client.resolve_table(to_table(ROWS), timeout=TIMEOUT)
        assert result.semantics.column("subject").to_pylist() == ["api:other", SUBJECT]
        assert result.claims is not None
        assert result.claims.num_rows == len(ROWS)
        summary = await client.resolve_table(to_table(ROWS), detail="summary", compression=None)
        assert summary.claims is None
        assert summary.groups is None
        assert summary.warnings is None
        assert summary.values.equals(result.values)
        assert result.conflicted_safety_predicates == [(SUBJECT, "idempotency.mode")]
        assert result.reliability_table_digest == DEFAULT_POLICY.digest
        assert summary.reliability_table_digest == DEFAULT_POLICY.digest

    async def test_the_blocking_client_too(self, address: str) -> None:
        """ResolverClient.resolve_table gives the same tables (run off the loop, which serves)."""

        def call() -> Any:
            with ResolverClient(address) as client:
                return client.resolve_table(to_table(ROWS), timeout=TIMEOUT)

        result = await asyncio.to_thread(call)
        assert result.semantics.column("status").to_pylist() == [
            resolution_pb2.RESOLUTION_STATUS_RESOLVED,
            resolution_pb2.RESOLUTION_STATUS_CONFLICTED,
        ]
        assert result.warnings is not None
        assert result.warnings.column("row").to_pylist() == [4]


def big_request(claims: int) -> bytes:
    """``claims`` valid claims over 1,000 semantics, as serialized request bytes."""
    table = pa.table(
        {
            "id": pa.array([f"c{i}" for i in range(claims)]),
            "subject": pa.array([f"s{i % 1000}" for i in range(claims)]).dictionary_encode(),
            "predicate": pa.array(["p"] * claims).dictionary_encode(),
            "value": pa.array(['"a"', '"b"'] * (claims // 2)).dictionary_encode(),
            "source": pa.array(["test_result"] * claims).dictionary_encode(),
            "source_ref": pa.array([f"r{i % 7}" for i in range(claims)]).dictionary_encode(),
            "confidence": pa.array([0.5 + (i % 50) / 100 for i in range(claims)]),
        }
    )
    return pb.ResolveColumnsRequest(claims_arrow=stream(table, "zstd")).SerializeToString()


class TestHeavyWork:
    async def test_heavy_work_runs_on_a_worker_and_stops_when_cancelled(self) -> None:
        """A small request stays on the loop; a large one goes to a worker, whose work
        stops once its caller cancels."""
        spec = await build_spec(ServeOptions(port=0))
        servicer = spec.servicer
        assert isinstance(servicer, ResolverServicer)
        async with (
            serving([spec]) as running,
            grpc.aio.insecure_channel(
                running[0].address, options=ServerConfig().channel_options()
            ) as chan,
        ):
            call = chan.unary_unary("/assay.v1.ResolverService/ResolveColumns")
            await call(request().SerializeToString(), timeout=TIMEOUT)
            assert servicer.offload.started == 0
            await call(big_request(20_000), timeout=TIMEOUT)
            assert servicer.offload.started == 1
            heavy = call(big_request(600_000), timeout=120)
            await eventually_async(
                lambda: servicer.offload.started == 2,
                message="the heavy work under way on a worker",
                timeout=TIMEOUT,
                interval=0.005,
            )
            heavy.cancel()
            await eventually_async(
                lambda: servicer.offload.stopped > 0,
                message="the cancelled work to stop",
                timeout=TIMEOUT,
            )
