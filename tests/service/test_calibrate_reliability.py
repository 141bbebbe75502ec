"""CalibrateReliability through real servers on both engines: claims checked against frozen
gold labels, the spot-check figure beside the conflict-only one, the honesty rules
(human labels only unless asked, INSUFFICIENT below the minimum), the proposal
byte-identical at the same checkpoint, and bad input named field by field."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.cli.main import main as cli
from assay.runtime.server import serving
from assay.services.registry import ServeOptions
from assay.services.resolver.domain.policy import load_policy
from assay.services.resolver.service import build_spec as resolver_spec
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2, resolver_service_pb2, resolver_service_pb2_grpc
from tests.service.adjudication_support import (
    FIXTURE,
    HUMAN,
    TIMEOUT,
    adjudication_server,
    case_message,
    failure,
    register,
    review,
    rid,
)
from tests.service.test_adjudication_security import assert_refused

DECLARED = {"documentation": 0.5, "llm_inference": 0.4, "human_review": 1.0}


async def labelled(
    stub: Any,
    claims: list[tuple[str, str]],
    rate: float = 0.0,
    reviewers: tuple[str, str] = ("ann", "bob"),
    tenant: str = "tenant-a",
) -> str:
    """A case with ``claims`` (source kind, value), labelled "key" by both reviewers,
    resolved unanimously and frozen."""
    message = case_message(tenant=tenant)
    for kind, value in claims:
        claim = message.claims.add(source_kind=kind, confidence=0.8)
        claim.value.string_value = value
    message.spot_check_rate = rate
    reply = await stub.EnqueueCase(
        pb.EnqueueCaseRequest(request_id=rid(), case=message), timeout=TIMEOUT
    )
    case_id: str = reply.case.case_id
    for who in reviewers:
        await review(stub, case_id, who, "key")
    await stub.ResolveCase(
        pb.ResolveCaseRequest(
            request_id=rid(),
            case_id=case_id,
            basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT,
        ),
        timeout=TIMEOUT,
    )
    await stub.FreezeGoldLabel(
        pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
    )
    return case_id


async def calibrated(stub: Any, **fields: Any) -> pb.CalibrateReliabilityResponse:
    request = pb.CalibrateReliabilityRequest(declared=fields.pop("declared", DECLARED), **fields)
    reply: pb.CalibrateReliabilityResponse = await stub.CalibrateReliability(
        request, timeout=TIMEOUT
    )
    return reply


def by_kind(reply: pb.CalibrateReliabilityResponse) -> dict[str, pb.SourceCalibration]:
    return {s.source_kind: s for s in reply.sources}


class TestCalibration:
    async def test_claims_are_checked_against_human_labels(self, adjudication_db: str) -> None:
        """Documentation always agreed with the label, the model never did: the figures say
        so, the declared 0.5 lies outside documentation's spot-check interval and the
        proposal raises it, human_review stays fixed; synthetic labels are left out and
        counted, and a source kind the table lacks is counted, not used."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name, HUMAN)
            for name in ("fx-a", "fx-b"):
                await register(stub, name, FIXTURE)
            for _ in range(6):
                await labelled(stub, [("documentation", "key"), ("llm_inference", "none")])
            for _ in range(6):
                await labelled(stub, [("documentation", "key")], rate=0.5)
            await labelled(stub, [("documentation", "none")], reviewers=("fx-a", "fx-b"))
            await labelled(stub, [("vendor_blog", "key")])
            reply = await calibrated(stub, min_count=5)
            kinds = by_kind(reply)
            assert sorted(kinds) == sorted(DECLARED)
            spot = kinds["documentation"].spot_check
            conflict = kinds["documentation"].conflict_only
            assert (spot.status, spot.count, spot.labels) == (pb.AGREEMENT_STATUS_COMPUTED, 6, 6)
            assert spot.estimate == pytest.approx(1.0)
            assert spot.effective_count == pytest.approx(6.0)
            assert spot.declared_outside
            assert conflict.count == 6
            assert conflict.estimate == pytest.approx(1.0)
            model = kinds["llm_inference"].conflict_only
            assert model.count == 6
            assert model.estimate == pytest.approx(0.0)
            assert kinds["llm_inference"].spot_check.status == pb.AGREEMENT_STATUS_INSUFFICIENT
            assert not kinds["llm_inference"].spot_check.HasField("estimate")
            assert (reply.spot_check_labels, reply.conflict_labels) == (6, 6)
            assert reply.synthetic_labels_left_out == 1
            assert not reply.synthetic
            assert dict(reply.unknown_source_kinds) == {"vendor_blog": 1}
            proposal = json.loads(reply.proposal)
            assert proposal["sources"]["human_review"] == 1.0
            assert proposal["sources"]["documentation"] > 0.5
            assert kinds["documentation"].proposal_reason == "CALIBRATED"
            assert proposal["calibration"]["checkpoint"]["tree_size"] == reply.tree_size

            with_synthetic = await calibrated(stub, min_count=5, include_synthetic=True)
            assert with_synthetic.synthetic
            assert by_kind(with_synthetic)["documentation"].conflict_only.synthetic
            assert by_kind(with_synthetic)["documentation"].conflict_only.count == 7

    async def test_the_proposal_is_the_same_at_the_same_checkpoint(
        self, adjudication_db: str
    ) -> None:
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name, HUMAN)
            for _ in range(3):
                await labelled(stub, [("documentation", "key")], rate=0.25)
            first = await calibrated(stub, min_count=2)
            again = await calibrated(stub, min_count=2)
            assert again.proposal == first.proposal
            await labelled(stub, [("documentation", "none")], rate=0.25)
            later = await calibrated(stub, min_count=2)
            assert later.tree_size > first.tree_size
            assert later.proposal != first.proposal
            back = await calibrated(stub, min_count=2, tree_size=first.tree_size)
            assert back.proposal == first.proposal
            assert back.root_hash == first.root_hash
            assert back.labels_frozen_later == 1

    async def test_below_the_minimum_no_number_and_no_gold_reads_empty(
        self, adjudication_db: str
    ) -> None:
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name, HUMAN)
            await labelled(stub, [("documentation", "key")], rate=1.0)
            few = by_kind(await calibrated(stub, min_count=100))["documentation"].spot_check
            assert few.status == pb.AGREEMENT_STATUS_INSUFFICIENT
            assert not few.HasField("posterior_mean")
            empty = await calibrated(stub, tenant="tenant-none")
            assert (empty.spot_check_labels, empty.conflict_labels) == (0, 0)
            assert all(
                s.spot_check.status == pb.AGREEMENT_STATUS_INSUFFICIENT for s in empty.sources
            )
            assert json.loads(empty.proposal)["sources"] == DECLARED

    @pytest.mark.parametrize(
        ("fields", "field"),
        [
            ({"declared": {"documentation": 1.5}}, "declared"),
            ({"declared": {}}, "declared"),
            ({"min_count": -1}, "min_count"),
            ({"tree_size": -1}, "tree_size"),
            ({"tree_size": 10**9}, "tree_size"),
        ],
    )
    async def test_bad_input_is_named(
        self, adjudication_db: str, fields: dict[str, Any], field: str
    ) -> None:
        async with adjudication_server(adjudication_db) as server:
            error = await failure(calibrated(server.stub, **fields))
            assert_refused(error, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", field)


class TestCalibrateCommand:
    async def test_reads_the_resolvers_table_and_writes_the_proposal(
        self, adjudication_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``assay calibrate`` asks the running resolver for the table in use, prints the
        figures, and writes the proposal owner-only, byte for byte the RPC's; the proposal
        loads as the resolver's ``--reliability-table``."""
        spec = await resolver_spec(ServeOptions(port=0))
        async with adjudication_server(adjudication_db) as server, serving([spec]) as running:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name, HUMAN)
            for _ in range(3):
                await labelled(stub, [("documentation", "key"), ("generated_mock", "none")], 0.5)
            proposed = tmp_path / "proposed.json"
            args = [
                "calibrate",
                "--target",
                server.target,
                "--resolver",
                running[0].address,
                "--min-count",
                "2",
                "--propose",
                str(proposed),
            ]
            assert await asyncio.to_thread(cli, args) == 0
            shown = capsys.readouterr().out
            assert "documentation" in shown
            assert "generated_mock" in shown
            assert stat.S_IMODE(proposed.stat().st_mode) == 0o600
            table = (await resolver_policy(running[0].address)).reliability_table
            declared = {row.source: row.reliability for row in table}
            reply = await calibrated(stub, min_count=2, declared=declared)
            assert proposed.read_bytes() == reply.proposal
            assert load_policy(str(proposed)).reliability["human_review"] == 1.0

    def test_a_declared_file_that_is_no_table_is_one_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        bad = tmp_path / "bad.json"
        bad.write_text('{"tables": {}}')
        code = cli(["calibrate", "--target", "127.0.0.1:1", "--declared", str(bad)])
        assert code == 1
        assert "not a reliability table" in capsys.readouterr().err


async def resolver_policy(target: str) -> Any:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = resolver_service_pb2_grpc.ResolverServiceStub(channel)
        return await stub.GetResolverPolicy(
            resolver_service_pb2.GetResolverPolicyRequest(), timeout=TIMEOUT
        )
