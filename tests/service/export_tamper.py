"""A real export to tamper with, and the edits: one field of one record changed at a time.

``exported`` runs a real server on a SQLite file, records three kinds of gold label (a
unanimous one whose case was reviewed again in a new round, an adjudicated one, an
unresolved one with reasons) and exports them with their reviews through ``assay export``.
``edited`` changes one field of one record the way a forger would: to another valid value
of the field's kind (another candidate, another enum member, a time one microsecond later,
a hash or proof with one bit flipped), or sets a field the record leaves unset.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import io
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization

from assay.cli.main import main as cli
from assay.runtime.logging import configure_logging
from assay.tlog.checkpoint import load_or_create_signing_key
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2
from tests.service.adjudication_support import (
    TIMEOUT,
    adjudication_server,
    case_message,
    ledger_key,
    register,
    review,
    rid,
)

KINDS = ("unanimous", "adjudicated", "unresolved")
# Enum members an edit may swap a value for, by prefix.
ENUMS = {
    "AUDIT_EVENT_TYPE_": ("CASE_RESOLVED", "REVIEWER_REGISTERED"),
    "RESOLUTION_BASIS_": ("UNANIMOUS_AGREEMENT", "ADJUDICATOR_DECISION", "UNRESOLVED"),
    "LABELING_PROVENANCE_": ("HUMAN_ADJUDICATED", "SYNTHETIC_MECHANISM_TEST"),
    "REVIEW_OUTCOME_": ("LABEL", "UNRESOLVED", "NOT_EVALUABLE"),
}
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
_PART = re.compile(r"([A-Za-z_]+)(?:\[(\d+)\])?")


@dataclass(frozen=True)
class Export:
    corpus: Path
    public_key: Path
    lines: dict[str, dict[str, Any]]  # by kind
    order: tuple[str, ...]  # the kinds in file order


async def _freeze(
    stub: Any,
    case_id: str,
    basis: gold_pb2.ResolutionBasis.ValueType,
    label: str = "",
    by: str = "",
    rationale: str = "",
) -> None:
    request = pb.ResolveCaseRequest(
        request_id=rid(),
        case_id=case_id,
        basis=basis,
        adjudicator_reviewer_id=by,
        rationale=rationale,
    )
    if by:
        request.label.string_value = label
    await stub.ResolveCase(request, timeout=TIMEOUT)
    freeze = pb.FreezeGoldLabelRequest(request_id=rid(), case_id=case_id)
    await stub.FreezeGoldLabel(freeze, timeout=TIMEOUT)


async def _enqueue_with_claims(stub: Any) -> pb.Case:
    """A case carrying the claims it was raised from and a spot-check rate, so the export's
    claims and their binding are edited like every other field."""
    message = case_message()
    for kind, value, confidence in (("documentation", "key", 0.9), ("runtime_trace", "none", 0.7)):
        claim = message.claims.add(
            claim_id=f"claim-{kind}",
            source_kind=kind,
            confidence=confidence,
            correlation_group=f"group-{kind}",
        )
        claim.value.string_value = value
        claim.observe_time.FromDatetime(datetime(2026, 11, 1, tzinfo=UTC))
    message.spot_check_rate = 0.25
    reply = await stub.EnqueueCase(
        pb.EnqueueCaseRequest(request_id=rid(), case=message), timeout=TIMEOUT
    )
    case: pb.Case = reply.case
    return case


async def _populate_and_export(db: str | Path, corpus: Path) -> dict[str, str]:
    async with adjudication_server(db) as server:
        stub = server.stub
        for name in ("ann", "bob", "cid"):
            await register(stub, name)
        kinds: dict[str, str] = {}
        case = await _enqueue_with_claims(stub)
        kinds[case.case_id] = "unanimous"
        await review(stub, case.case_id, "ann", "key")
        await review(stub, case.case_id, "bob", "key")
        await _freeze(stub, case.case_id, gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT)
        await review(stub, case.case_id, "cid", "none", round_=2)
        case = await _enqueue_with_claims(stub)
        kinds[case.case_id] = "adjudicated"
        await review(stub, case.case_id, "ann", "key")
        first = await review(stub, case.case_id, "bob", "key")
        amend = pb.AmendReviewRequest(
            request_id=rid(),
            review_id=first.review.review_id,
            outcome=pb.REVIEW_OUTCOME_LABEL,
            rationale="the changelog says otherwise",
        )
        amend.label.string_value = "none"
        await stub.AmendReview(amend, timeout=TIMEOUT)
        await _freeze(
            stub,
            case.case_id,
            gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
            "none",
            "cid",
            rationale="bob's source is the newer one",
        )
        case = await _enqueue_with_claims(stub)
        kinds[case.case_id] = "unresolved"
        unresolved = pb.REVIEW_OUTCOME_UNRESOLVED
        await review(stub, case.case_id, "ann", None, unresolved, reason="the sources conflict")
        await review(stub, case.case_id, "bob", None, unresolved, reason="cannot tell")
        await _freeze(stub, case.case_id, gold_pb2.RESOLUTION_BASIS_UNRESOLVED)
        args = ["export", "--reviews", "--out", str(corpus), "--target", server.target]
        assert await asyncio.to_thread(cli, args) == 0
    return kinds


def exported(directory: Path, db: str | Path | None = None) -> Export:
    """The export of the three kinds of label from a server on ``db`` (default: a SQLite file
    in ``directory``), its public key, and its lines by kind."""
    configure_logging("info", io.StringIO())  # the server's log lines stay out of the output
    corpus = directory / "corpus.jsonl"
    db = directory / "a.db" if db is None else db
    kinds = asyncio.run(_populate_and_export(db, corpus))
    public = load_or_create_signing_key(ledger_key(db)).public_key()
    pem = directory / "ledger.pub.pem"
    pem.write_bytes(
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    records = [json.loads(line) for line in corpus.read_text().splitlines()]
    order = tuple(kinds[r["revision"]["caseId"]] for r in records)
    return Export(corpus, pem, dict(zip(order, records, strict=True)), order)


def _changed(value: Any, key: str) -> Any:
    """Another valid value of ``value``'s kind (``key``: the field's name)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if not isinstance(value, str):
        raise TypeError(f"no edit for {key}={value!r}")
    if value in ("key", "none"):
        return "none" if value == "key" else "key"
    if value in ('"key"', '"none"'):
        return '"none"' if value == '"key"' else '"key"'
    if value.isdigit():
        return str(int(value) + 1)
    if _TIME.fullmatch(value):
        later = datetime.fromisoformat(value.replace("Z", "+00:00")) + timedelta(microseconds=1)
        return later.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for prefix, members in ENUMS.items():
        if value.startswith(prefix):
            return prefix + next(m for m in members if prefix + m != value)
    if value.startswith("sha256:"):
        return value[:-1] + ("0" if value[-1] != "0" else "1")
    if key == "digestVersion":
        return "assay.gold.v1" if value != "assay.gold.v1" else "assay.gold.v2"
    if key in ("inclusionPath", "revisionDigested", "answerOpening") and len(value) > 40:
        if key == "inclusionPath":
            raw = bytearray(base64.b64decode(value))
            raw[0] ^= 1
            return base64.b64encode(bytes(raw)).decode("ascii")
        return value + " "
    return value + "x"


# What an unset field is set to (proto JSON leaves unset and empty fields out).
UNSET = {
    "reason": "x",
    "rationale": "x",
    "supersedesReviewId": "rev_0000000000000000",
    "superseded": True,
    "adjudicatorReviewerId": "cid",
    "label": "key",
    "labelKey": '"key"',
    "previousRevision": 1,
}


def edited(record: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``record`` with the field at ``path`` (``reviews[1].reason``) changed."""
    copied = copy.deepcopy(record)
    parts = [_PART.fullmatch(p) for p in path.split(".")]
    node: Any = copied
    for i, match in enumerate(parts):
        assert match is not None, path
        key, index = match.group(1), match.group(2)
        last = i == len(parts) - 1
        if last and index is None:
            node[key] = _changed(node[key], key) if key in node else UNSET[key]
        elif last:
            node[key][int(index)] = _changed(node[key][int(index)], key)
        else:
            node = node[key] if index is None else node[key][int(index)]
    return copied


def write(export: Export, replaced: dict[str, dict[str, Any]], to: Path) -> Path:
    """The export's lines, ``replaced`` by kind, as a corpus at ``to`` with the manifest."""
    lines = [replaced.get(kind, export.lines[kind]) for kind in export.order]
    to.write_text("".join(json.dumps(line) + "\n" for line in lines))
    manifest = export.corpus.with_name(export.corpus.name + ".manifest.json")
    to.with_name(to.name + ".manifest.json").write_text(manifest.read_text())
    return to
