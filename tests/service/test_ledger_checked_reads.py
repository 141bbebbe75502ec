"""Every read checks the records it returns against their ledger events, and an export
carries each label's inclusion proof, which ``assay audit verify-export`` checks offline.

Rows are edited as an attacker with the database would (``tests/service/tamper_sql``'s
raw connection, guards off); a fresh server then reads the edited database. Every test runs
on both engines (``module_db``).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.cli.main import main as cli
from assay.services.adjudication.domain import cases
from assay.services.adjudication.storage import rows
from assay.tlog.checkpoint import load_or_create_signing_key
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
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
from tests.service.tamper_sql import Copies, copy_row, settle, tampering
from tests.service.tamper_support import gold_digest

Stub = pb_grpc.AdjudicationServiceStub


@dataclass(frozen=True)
class Built:
    frozen: str  # reviewed by ann and bob, resolved, frozen (revision 1)
    resolved: str  # reviewed by ann and bob, resolved, not frozen
    queued: str  # no reviews: in carl's queue
    bob_review: str  # bob's review of ``resolved``


async def _resolved(stub: Stub) -> str:
    case = await enqueue(stub)
    for name in ("ann", "bob"):
        await review(stub, case.case_id, name, "key")
    await stub.ResolveCase(
        pb.ResolveCaseRequest(
            case_id=case.case_id, basis=gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT
        ),
        timeout=TIMEOUT,
    )
    return case.case_id


async def build(db: str) -> Built:
    async with adjudication_server(db) as server:
        stub = server.stub
        for name in ("ann", "bob", "carl"):
            await register(stub, name)
        frozen = await _resolved(stub)
        await stub.FreezeGoldLabel(
            pb.FreezeGoldLabelRequest(request_id=rid(), case_id=frozen), timeout=TIMEOUT
        )
        resolved = await _resolved(stub)
        queued = (await enqueue(stub)).case_id
        detail = await stub.GetCase(pb.GetCaseRequest(case_id=resolved), timeout=TIMEOUT)
        bob = next(r.review_id for r in detail.reviews if r.reviewer_id == "bob")
    return Built(frozen, resolved, queued, bob)


async def export(stub: Stub) -> tuple[list[pb.CorpusRecord], pb.ExportManifest]:
    found: list[pb.CorpusRecord] = []
    manifest = pb.ExportManifest()
    async for message in stub.ExportCorpus(pb.ExportCorpusRequest(), timeout=TIMEOUT):
        if message.WhichOneof("item") == "manifest":
            manifest = message.manifest
        else:
            found.extend(message.batch.records)
    return found, manifest


def _forge_case(db: str, case_id: str) -> None:
    """The case's subject edited and its content digest recomputed: the row verifies alone."""
    with tampering(db) as raw:
        row = raw.one(f"SELECT {rows.CASE_COLUMNS} FROM cases WHERE case_id = ?", case_id)
        forged = rows.case(row | {"subject": "api:other"}, check=False)
        raw.execute(
            "UPDATE cases SET subject = 'api:other', content_digest = ? WHERE case_id = ?",
            cases.case_digest(forged),
            case_id,
        )


def _forge_gold(db: str, case_id: str) -> None:
    """The label made "none" and its digest recomputed by the service's own function."""
    with tampering(db) as raw:
        row = raw.one(f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels WHERE case_id = ?", case_id)
        fields = rows.gold_fields(row) | {"label_key": '"none"'}
        raw.execute(
            "UPDATE gold_labels SET label_key = '\"none\"', digest = ? WHERE case_id = ?",
            gold_digest(fields),
            case_id,
        )


def _sql(sql: str, *params: Callable[[Built], object]) -> Callable[[str, Built], None]:
    def tamper(db: str, built: Built) -> None:
        with tampering(db) as raw:
            assert raw.execute(sql, *[p(built) for p in params]) == 1

    return tamper


def _eve(db: str, built: Built) -> None:
    with tampering(db) as raw:
        copy_row(raw, "reviewers", "reviewer_id = 'ann'", reviewer_id="eve")


Call = Callable[[Stub, Built], Awaitable[Any]]


async def _export_call(stub: Stub, built: Built) -> None:
    await export(stub)


READS: dict[str, Call] = {
    "GetReviewer(bob)": lambda s, b: s.GetReviewer(pb.GetReviewerRequest(reviewer_id="bob")),
    "GetReviewer(eve)": lambda s, b: s.GetReviewer(pb.GetReviewerRequest(reviewer_id="eve")),
    "ListReviewers": lambda s, b: s.ListReviewers(pb.ListReviewersRequest()),
    "GetCase": lambda s, b: s.GetCase(pb.GetCaseRequest(case_id=b.resolved)),
    "GetCaseState": lambda s, b: s.GetCaseState(pb.GetCaseStateRequest(case_id=b.resolved)),
    "GetBlindedCase": lambda s, b: s.GetBlindedCase(pb.GetBlindedCaseRequest(case_id=b.resolved)),
    "ListQueue": lambda s, b: s.ListQueue(pb.ListQueueRequest(reviewer_id="carl")),
    "ListGoldLabelRevisions": lambda s, b: s.ListGoldLabelRevisions(
        pb.ListGoldLabelRevisionsRequest()
    ),
    "ExportCorpus": _export_call,
}

# (name, tamper, (record, key of it), the reads that must refuse it)
TAMPERS: list[
    tuple[str, Callable[[str, Built], None], tuple[str, Callable[[Built], str]], list[str]]
] = [
    (
        "reviewer kind",
        _sql("UPDATE reviewers SET kind = 'HUMAN', attested_by = 'x' WHERE reviewer_id = 'bob'"),
        ("reviewer", lambda b: "bob"),
        ["GetReviewer(bob)", "ListReviewers"],
    ),
    (
        "reviewer inserted",
        _eve,
        ("reviewer", lambda b: "eve"),
        ["GetReviewer(eve)", "ListReviewers"],
    ),
    (
        "case forged",
        lambda p, b: _forge_case(p, b.resolved),
        ("case", lambda b: b.resolved),
        ["GetCase", "GetCaseState", "GetBlindedCase"],
    ),
    (
        "queued case forged",
        lambda p, b: _forge_case(p, b.queued),
        ("case", lambda b: b.queued),
        ["ListQueue"],
    ),
    (
        "exported case forged",
        lambda p, b: _forge_case(p, b.frozen),
        ("case", lambda b: b.frozen),
        ["ExportCorpus"],
    ),
    (
        "review label",
        _sql(
            "UPDATE reviews SET label_key = '\"none\"' WHERE review_id = ?", lambda b: b.bob_review
        ),
        ("review", lambda b: b.bob_review),
        ["GetCase", "GetCaseState", "GetBlindedCase"],
    ),
    (
        "resolution basis",
        _sql(
            "UPDATE resolutions SET basis = 'ADJUDICATOR_DECISION' WHERE case_id = ?",
            lambda b: b.resolved,
        ),
        ("resolution", lambda b: f"{b.resolved}#1"),
        ["GetCase", "GetCaseState"],
    ),
    (
        "gold label forged",
        lambda p, b: _forge_gold(p, b.frozen),
        ("gold label", lambda b: f"{b.frozen}#1"),
        ["ListGoldLabelRevisions", "ExportCorpus"],
    ),
    (
        "gold label without its event",
        _sql("UPDATE audit_events SET event_type = 'X' WHERE event_type = 'GOLD_LABEL_FROZEN'"),
        ("gold label", lambda b: f"{b.frozen}#1"),
        ["ListGoldLabelRevisions", "ExportCorpus"],
    ),
]


@pytest.fixture(scope="module")
def pristine(module_db: str) -> tuple[str, Built]:
    """One populated database per engine (settled: ready to copy), copied by each test."""
    built = asyncio.run(build(module_db))
    settle(module_db)
    return module_db, built


class TestReadsCheckTheLedger:
    @pytest.mark.parametrize(
        ("name", "tamper", "record", "reads"), TAMPERS, ids=[t[0] for t in TAMPERS]
    )
    async def test_a_tampered_record_is_data_loss_naming_it(
        self,
        tmp_path: Path,
        copies: Copies,
        pristine: tuple[str, Built],
        name: str,
        tamper: Callable[[str, Built], None],
        record: tuple[str, Callable[[Built], str]],
        reads: list[str],
    ) -> None:
        """Each read returning the edited record fails with DATA_LOSS and names it."""
        built = pristine[1]
        db = copies.copy(pristine[0], tmp_path)
        tamper(db, built)
        async with adjudication_server(db) as server:
            for read in reads:
                error = await failure(READS[read](server.stub, built))
                assert error.code == grpc.StatusCode.DATA_LOSS, (name, read, error.message)
                assert error.reason == "ERROR_REASON_STORED_RECORD_INVALID", (name, read)
                kind, key = record
                assert (error.metadata["record"], error.metadata["key"]) == (kind, key(built)), (
                    name,
                    read,
                )

    async def test_untampered_reads_work(
        self, tmp_path: Path, copies: Copies, pristine: tuple[str, Built]
    ) -> None:
        """Every checked read answers on the untouched database."""
        built = pristine[1]
        db = copies.copy(pristine[0], tmp_path)
        async with adjudication_server(db) as server:
            for name, read in READS.items():
                if name != "GetReviewer(eve)":  # eve exists only when forged
                    await read(server.stub, built)
            records, _ = await export(server.stub)
            assert [r.revision.case_id for r in records] == [built.frozen]


# --- the export, verified offline ------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, found: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in found))


def _flip_proof(record: dict[str, Any]) -> None:
    first = bytearray(base64.b64decode(record["inclusion"]["inclusionPath"][0]))
    first[0] ^= 1
    record["inclusion"]["inclusionPath"][0] = base64.b64encode(bytes(first)).decode()


def _label(record: dict[str, Any]) -> None:
    record["revision"]["labelKey"] = '"none"'
    record["revision"]["label"] = "none"


def _payload(record: dict[str, Any]) -> None:
    digest = record["revision"]["digest"]
    flipped = "1" if digest.endswith("0") else "0"
    record["inclusion"]["event"]["payload"]["digest"] = digest[:-1] + flipped


def _leaf(record: dict[str, Any]) -> None:
    record["inclusion"]["leafIndex"] = str(int(record["inclusion"].get("leafIndex", 0)) + 1)


def _no_proof(record: dict[str, Any]) -> None:
    del record["inclusion"]


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "label edited": (_label, ": revision.labelKey: is not what the ledger recorded"),
    "proof hash flipped": (_flip_proof, ": inclusion.inclusionPath: does not prove"),
    "event payload edited": (_payload, ": inclusion.event.payload.digest: "),
    "wrong leaf index": (_leaf, ": inclusion.leafIndex: "),
    "proof removed": (_no_proof, ": inclusion: is missing"),
}


class TestVerifyExport:
    async def test_an_export_verifies_offline_and_edits_are_refused(
        self,
        tmp_path: Path,
        copies: Copies,
        pristine: tuple[str, Built],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """The CLI's own export verifies with the public key alone; each edit of the file is
        refused with exit 3 naming the case, revision and the field that failed."""
        built = pristine[1]
        db = copies.copy(pristine[0], tmp_path)
        corpus = tmp_path / "corpus.jsonl"
        pub = tmp_path / "ledger.pub.pem"
        async with adjudication_server(db) as server:
            done = await asyncio.to_thread(
                cli, ["export", "--out", str(corpus), "--target", server.target]
            )
            assert done == 0
        public = load_or_create_signing_key(ledger_key(db)).public_key()
        from cryptography.hazmat.primitives import serialization

        pub.write_bytes(
            public.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        verify = ["audit", "verify-export", str(corpus), "--public-key", str(pub), "--json"]
        capsys.readouterr()
        assert cli(verify) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["ok"] is True
        assert report["records"] == 1
        original = _lines(corpus)
        assert original[0]["inclusion"]["event"]["payload"]["case_id"] == built.frozen
        for name, (edit, expected) in EDITS.items():
            changed = json.loads(json.dumps(original))
            edit(changed[0])
            _write(corpus, changed)
            assert cli(verify) == 3, name
            err = capsys.readouterr().err
            assert f"case {built.frozen} revision 1" in err, (name, err)
            assert expected in err, (name, err)
