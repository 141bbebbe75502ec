"""Agreement breadth and the export with reviews, through a real server on both engines."""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import grpc
import krippendorff
import pandas as pd  # type: ignore[import-untyped]
import pytest
from crowdkit.aggregation import MajorityVote
from cryptography.hazmat.primitives import serialization

from assay.cli.main import main as cli
from assay.tlog.checkpoint import load_or_create_signing_key
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    enqueue,
    failure,
    ledger_key,
    register,
    review,
    rid,
)
from tests.service.tamper_sql import edit
from tests.unit.adjudication.test_agreement_breadth import hand_alpha, hand_fleiss

Stub = object


async def _resolve_and_freeze(stub: object, case_id: str, label: str, by: str = "") -> None:
    basis = (
        gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION
        if by
        else gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
    )
    request = pb.ResolveCaseRequest(
        request_id=rid(), case_id=case_id, basis=basis, adjudicator_reviewer_id=by
    )
    if by:
        request.label.string_value = label
    await stub.ResolveCase(request, timeout=TIMEOUT)  # type: ignore[attr-defined]
    await stub.FreezeGoldLabel(  # type: ignore[attr-defined]
        pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id), timeout=TIMEOUT
    )


class TestAgreementFigures:
    async def test_every_figure_through_the_service(self, adjudication_db: str) -> None:
        """Three reviewers, each pair on 20 rounds of two reviews (a round takes no third):
        three pairs, two categories, Fleiss and Krippendorff by hand, the same interval
        twice, fixtures flagged throughout."""
        base = [("key", "key")] * 9 + [("none", "key")] * 6
        base += [("key", "none")] * 3 + [("none", "none")] * 2
        pairs = [("ann", "bob"), ("ann", "cid"), ("bob", "cid")]
        rounds = [(pairs[0], t) for t in base]
        rounds += [(pairs[1], (b, a)) for a, b in base]
        rounds += [(pairs[2], t) for t in reversed(base)]
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cid"):
                await register(stub, name)
            for pair, answers in rounds:
                case = await enqueue(stub)
                for name, answer in zip(pair, answers, strict=True):
                    await review(stub, case.case_id, name, answer)
            result = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
            again = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
        assert result.status == pb.AGREEMENT_STATUS_COMPUTED
        assert [(p.reviewer_a, p.reviewer_b) for p in result.pairs] == pairs
        assert all(p.kappa.case_count == 20 for p in result.pairs)
        assert [c.category for c in result.categories] == ['"key"', '"none"']
        counts = [[t.count("key"), t.count("none")] for _, t in rounds]
        fleiss = result.fleiss_kappa
        assert fleiss.status == pb.AGREEMENT_STATUS_COMPUTED
        assert fleiss.value == pytest.approx(hand_fleiss(counts), abs=1e-12)
        assert not fleiss.HasField("ci_lower")
        alpha = result.krippendorff_alpha
        assert alpha.status == pb.AGREEMENT_STATUS_COMPUTED
        assert alpha.case_count == 60
        assert alpha.min_cases == 20
        assert alpha.value == pytest.approx(hand_alpha([t for _, t in rounds]), abs=1e-12)
        assert alpha.ci_lower < alpha.value < alpha.ci_upper
        assert (alpha.ci_lower, alpha.ci_upper) == (
            again.krippendorff_alpha.ci_lower,
            again.krippendorff_alpha.ci_upper,
        )
        assert alpha.fixture_reviewers_contributed
        assert fleiss.fixture_reviewers_contributed
        assert all(p.kappa.fixture_reviewers_contributed for p in result.pairs)

    async def test_few_rounds_are_insufficient_and_bad_resamples_refused(
        self, adjudication_db: str
    ) -> None:
        """Below 20 rounds every figure is INSUFFICIENT; negative resamples name the field."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "ann", "key")
            await review(stub, case.case_id, "bob", "none")
            result = await stub.ComputeAgreement(pb.ComputeAgreementRequest(), timeout=TIMEOUT)
            bad = await failure(
                stub.ComputeAgreement(
                    pb.ComputeAgreementRequest(bootstrap_resamples=-1), timeout=TIMEOUT
                )
            )
        for figure in (result.fleiss_kappa, result.krippendorff_alpha, result.pairs[0].kappa):
            assert figure.status == pb.AGREEMENT_STATUS_INSUFFICIENT
            assert figure.case_count == 1
            assert not figure.HasField("value")
        assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in bad.violations] == ["bootstrap_resamples"]


async def _export(stub: object, include_reviews: bool) -> list[pb.CorpusRecord]:
    records: list[pb.CorpusRecord] = []
    request = pb.ExportCorpusRequest(include_reviews=include_reviews, batch_size=1)
    async for message in stub.ExportCorpus(request, timeout=TIMEOUT):  # type: ignore[attr-defined]
        if message.WhichOneof("item") == "batch":
            records.extend(message.batch.records)
    return records


def _public_key(db: str, path: Path) -> Path:
    key = load_or_create_signing_key(ledger_key(db)).public_key()
    path.write_bytes(
        key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return path


class TestExportWithReviews:
    async def test_reviews_in_round_then_submit_order_and_ledger_checked(
        self, adjudication_db: str
    ) -> None:
        """Every review of the case, later rounds after; an edited review ends the export
        with DATA_LOSS, and an export without reviews does not read them."""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cid"):
                await register(stub, name)
            case = await enqueue(stub)
            await review(stub, case.case_id, "bob", "key")
            await review(stub, case.case_id, "ann", "key")
            await _resolve_and_freeze(stub, case.case_id, "key")
            await review(stub, case.case_id, "cid", "none", round_=2)
            (plain,) = await _export(stub, include_reviews=False)
            (full,) = await _export(stub, include_reviews=True)
        assert list(plain.reviews) == []
        assert [(r.reviewer_id, r.round) for r in full.reviews] == [
            ("bob", 1),
            ("ann", 1),
            ("cid", 2),
        ]
        assert full.reviews[2].label_key == '"none"'
        edit(
            adjudication_db,
            "UPDATE reviews SET label_key = '\"none\"' WHERE review_id = ?",
            full.reviews[0].review_id,
        )
        async with adjudication_server(adjudication_db) as server:
            assert len(await _export(server.stub, include_reviews=False)) == 1
            lost = await failure(_export(server.stub, include_reviews=True))
        assert lost.code == grpc.StatusCode.DATA_LOSS
        assert full.reviews[0].review_id in lost.message

    async def test_csv_for_crowdkit_and_krippendorff_and_jsonl_verifies(
        self,
        adjudication_db: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        log_stream: io.StringIO,
    ) -> None:
        """``--format csv --out -`` reads straight into crowd-kit and krippendorff; the JSON
        Lines with ``--reviews`` still pass ``verify-export``, and a dropped contributing
        review is named. (The server's log goes to ``log_stream``, not standard output.)"""
        async with adjudication_server(adjudication_db) as server:
            stub = server.stub
            for name in ("ann", "bob", "cid", "dee"):
                await register(stub, name)
            plan = [
                (("ann", "bob"), ("key", "key")),
                (("bob", "cid"), ("key", "none")),
                (("ann", "cid"), ("none", "none")),
            ]
            agreed: dict[str, str] = {}
            for pair, answers in plan:
                case = await enqueue(stub)
                for name, answer in zip(pair, answers, strict=True):
                    await review(stub, case.case_id, name, answer)
                if len(set(answers)) == 1:
                    agreed[case.case_id] = f'"{answers[0]}"'
                    await _resolve_and_freeze(stub, case.case_id, answers[0])
                else:
                    await _resolve_and_freeze(stub, case.case_id, "key", by="dee")
            out = io.StringIO()

            def export_csv() -> int:
                with redirect_stdout(out):
                    return cli(
                        ["export", "--format", "csv", "--out", "-", "--target", server.target]
                    )

            assert await asyncio.to_thread(export_csv) == 0
            corpus = tmp_path / "corpus.jsonl"
            done = await asyncio.to_thread(
                cli, ["export", "--reviews", "--out", str(corpus), "--target", server.target]
            )
            assert done == 0
        frame = pd.read_csv(io.StringIO(out.getvalue()))
        assert list(frame.columns) == ["case_id", "reviewer_id", "label"]
        assert len(frame) == 6
        matrix = frame.pivot(index="reviewer_id", columns="case_id", values="label")
        codes = matrix.apply(lambda column: column.map({'"key"': 0, '"none"': 1}))
        value = krippendorff.alpha(
            reliability_data=codes.to_numpy(dtype=float), level_of_measurement="nominal"
        )
        assert value == pytest.approx(hand_alpha([a for _, a in plan]), abs=1e-12)
        votes = MajorityVote().fit_predict(
            frame.rename(columns={"case_id": "task", "reviewer_id": "worker"})
        )
        assert {case: votes[case] for case in agreed} == agreed

        pub = _public_key(adjudication_db, tmp_path / "ledger.pub.pem")
        verify = ["audit", "verify-export", str(corpus), "--public-key", str(pub)]
        capsys.readouterr()
        assert cli(verify) == 0
        lines = [json.loads(line) for line in corpus.read_text().splitlines()]
        assert all(len(line["reviews"]) == 2 for line in lines)
        named = lines[0]["revision"]["contributingReviewIds"][0]
        dropped = dict(lines[0])
        dropped["reviews"] = [r for r in lines[0]["reviews"] if r["reviewId"] != named]
        # The review alone: the count of its bindings no longer matches.
        corpus.write_text("".join(json.dumps(line) + "\n" for line in [dropped, *lines[1:]]))
        assert cli(verify) == 3
        assert "reviewBindings: binds 2 review(s); the record has 1" in capsys.readouterr().err
        # The review and its binding together: the label still names it.
        dropped["reviewBindings"] = [
            b for b in lines[0]["reviewBindings"] if named not in json.dumps(b)
        ]
        assert len(dropped["reviewBindings"]) == 1
        corpus.write_text("".join(json.dumps(line) + "\n" for line in [dropped, *lines[1:]]))
        assert cli(verify) == 3
        assert f"names review {named}" in capsys.readouterr().err
