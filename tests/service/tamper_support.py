"""The tamper matrix's fixtures: one database populated through a real server, copied per
scenario, edited the way an attacker holding the database would edit it, and served again.

The pristine database is built once per engine (reviewers of both kinds, agreeing and split
rounds, an adjudicator's decision, two revisions of one case, an open case in a queue, a
second tenant, and approvals consumed, pending and denied: ``tamper_approvals``) and a
signed checkpoint of its ledger is saved before anything is touched, as an auditor would
save one. A scenario copies the database (a SQLite file copied, or a
PostgreSQL database created from it as a template: ``tamper_sql.Copies``), edits the copy
through ``tamper_sql``'s attacker connection (guards off, rows read by column name, one SQL
spelling for both engines), and starts a fresh server on it with the same ledger key, so
nothing cached hides the edit.

``reforge`` is the strongest attacker: after editing rows it recomputes every content,
approval and gold-label digest and every ledger event from the rows with the service's own
functions and re-chains the whole ledger, writing them back with plain SQL, so the database
is self-consistent and only a checkpoint saved before the edit can tell.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from assay.errors import AssayError
from assay.runtime.server import serving
from assay.runtime.status import status_code_for
from assay.services.adjudication.adapters.approval_servicer import ApprovalServicer
from assay.services.adjudication.domain import approvals, cases, ledger, records
from assay.services.adjudication.domain.digests import canonical_json
from assay.services.adjudication.domain.model import AuditEventType, ChainHead, RecordKind
from assay.services.adjudication.service import build_spec
from assay.services.adjudication.storage import approval_rows, rows
from assay.services.adjudication.use_cases.transparency import origin_for
from assay.services.registry import ServeOptions
from assay.tlog.checkpoint import load_or_create_signing_key, parse_signed_checkpoint
from assay.tlog.merkle import verify_consistency
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2
from tests.service import tamper_approvals
from tests.service.adjudication_support import FIXTURE, HUMAN, TIMEOUT, enqueue, register, review
from tests.service.tamper_sql import Raw, settle

Stub = pb_grpc.AdjudicationServiceStub

FIXTURES = ("fx-ann", "fx-bob")
HUMANS = ("hu-hana", "hu-hugo", "hu-ada")


@dataclass(frozen=True)
class Served:
    stub: Stub
    target: str
    approvals: ApprovalServicer  # what its ApprovalService RPCs call (``tamper_approvals``)


@contextlib.asynccontextmanager
async def serve(db: str, key: Path) -> AsyncIterator[Served]:
    """A real server on 127.0.0.1:0 over ``db``, its ledger signed with ``key``."""
    options = ServeOptions(
        port=0, db_path=str(db), ledger_signing_key=key, approvals=tamper_approvals.POLICY
    )
    spec = await build_spec(options)
    hosted = {descriptor.name: servicer for descriptor, servicer in spec.hosted}
    approval_servicer = hosted["ApprovalService"]
    assert isinstance(approval_servicer, ApprovalServicer)
    async with (
        serving([spec]) as running,
        grpc.aio.insecure_channel(running[0].address) as channel,
    ):
        stub = pb_grpc.AdjudicationServiceStub(channel)
        yield Served(stub, running[0].address, approval_servicer)


@dataclass
class Ids:
    """The records of the pristine database, by the role they play in the scenarios."""

    cases: dict[str, str] = field(default_factory=dict)  # agree, split, open, other
    reviews: dict[str, str] = field(default_factory=dict)  # "<case>/<reviewer>[/2]"
    approvals: dict[str, str] = field(default_factory=dict)  # consumed, pending, denied


@dataclass(frozen=True)
class Pristine:
    db: str  # a SQLite file or a PostgreSQL URL
    key: Path
    note: str  # the signed checkpoint saved before any tampering
    ids: Ids
    events: int


async def _resolve(stub: Stub, case_id: str, **fields: Any) -> None:
    request = pb.ResolveCaseRequest(case_id=case_id, **fields)
    await stub.ResolveCase(request, timeout=TIMEOUT)


async def _freeze(stub: Stub, case_id: str) -> None:
    await stub.FreezeGoldLabel(pb.FreezeGoldLabelRequest(case_id=case_id), timeout=TIMEOUT)


async def populate(served: Served) -> Ids:
    stub = served.stub
    ids = Ids()
    for name in FIXTURES:
        await register(stub, name, FIXTURE)
    for name in HUMANS:
        await register(stub, name, HUMAN)
    unanimous = gold_pb2.RESOLUTION_BASIS_UNANIMOUS_AGREEMENT

    async def reviewed(role: str, labels: dict[str, str], round_: int = 0, **kw: Any) -> None:
        for reviewer_id, label in labels.items():
            reply = await review(stub, ids.cases[role], reviewer_id, label, round_=round_)
            suffix = f"/{round_}" if round_ > 1 else ""
            ids.reviews[f"{role}/{reviewer_id}{suffix}"] = reply.review.review_id

    ids.cases["agree"] = (await enqueue(stub)).case_id
    await reviewed("agree", {"fx-ann": "key", "fx-bob": "key"})
    await _resolve(stub, ids.cases["agree"], basis=unanimous)
    await _freeze(stub, ids.cases["agree"])
    await reviewed("agree", {"fx-ann": "none", "fx-bob": "none"}, round_=2)
    await _resolve(stub, ids.cases["agree"], basis=unanimous)
    await _freeze(stub, ids.cases["agree"])

    ids.cases["split"] = (await enqueue(stub)).case_id
    await reviewed("split", {"hu-hana": "key", "hu-hugo": "none"})
    decision = pb.ResolveCaseRequest(
        case_id=ids.cases["split"],
        basis=gold_pb2.RESOLUTION_BASIS_ADJUDICATOR_DECISION,
        adjudicator_reviewer_id="hu-ada",
    )
    decision.label.string_value = "key"
    await stub.ResolveCase(decision, timeout=TIMEOUT)
    await _freeze(stub, ids.cases["split"])

    ids.cases["open"] = (await enqueue(stub)).case_id
    await reviewed("open", {"fx-ann": "key"})

    # A review amended before its round is decided: two records, the second counts.
    ids.cases["amended"] = (await enqueue(stub)).case_id
    await reviewed("amended", {"hu-hana": "key"})
    amend = pb.AmendReviewRequest(
        review_id=ids.reviews["amended/hu-hana"], outcome=pb.REVIEW_OUTCOME_LABEL
    )
    amend.label.string_value = "none"
    amended = await stub.AmendReview(amend, timeout=TIMEOUT)
    ids.reviews["amended/hu-hana/amend"] = amended.review.review_id

    # Approvals before the second tenant's case, whose freeze stays the ledger's last event.
    ids.approvals = await tamper_approvals.populate(served.approvals)

    ids.cases["other"] = (await enqueue(stub, tenant="tenant-b")).case_id
    # A case assigned to hana and hugo (change 1), then hugo taken off it (change 2).
    ids.cases["assigned"] = (await enqueue(stub)).case_id
    assign = pb.AssignCasesRequest(
        case_ids=[ids.cases["assigned"]],
        reviewer_ids=["hu-hana", "hu-hugo"],
        rule=pb.ASSIGNMENT_RULE_EACH,
    )
    await stub.AssignCases(assign, timeout=TIMEOUT)
    unassign = pb.UnassignCaseRequest(case_id=ids.cases["assigned"], reviewer_ids=["hu-hugo"])
    await stub.UnassignCase(unassign, timeout=TIMEOUT)
    await reviewed("other", {"fx-ann": "key", "fx-bob": "key"})
    await _resolve(stub, ids.cases["other"], basis=unanimous)
    await _freeze(stub, ids.cases["other"])
    return ids


async def build(db: str, key: Path) -> Pristine:
    """Populate ``db`` through a real server, save its checkpoint, and settle it for
    copying."""
    async with serve(db, key) as served:
        ids = await populate(served)
        reply = await served.stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=TIMEOUT)
    settle(db)
    return Pristine(db, key, reply.signed_note, ids, reply.tree_size)


def event_sequence(raw: Raw, event_type: str, **payload: str) -> int:
    """The sequence of the one event of ``event_type`` whose payload holds ``payload``."""
    where = " AND ".join(f"{raw.json_field('payload', k)} = ?" for k in payload)
    found = raw.one(
        f"SELECT sequence FROM audit_events WHERE event_type = ? AND {where}",
        event_type,
        *payload.values(),
    )
    return int(found["sequence"])


def swap(raw: Raw, table: str, key: str, a: object, b: object, cols: str) -> None:
    """Exchange ``cols`` between the rows whose ``key`` is ``a`` and ``b``."""
    names = [c.strip() for c in cols.split(",")]
    first = raw.one(f"SELECT {cols} FROM {table} WHERE {key} = ?", a)
    second = raw.one(f"SELECT {cols} FROM {table} WHERE {key} = ?", b)
    sets = ", ".join(f"{n} = ?" for n in names)
    raw.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", *(second[n] for n in names), a)
    raw.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", *(first[n] for n in names), b)


# --- the forger: every digest and the whole chain recomputed from the rows ------------


def gold_digest(fields: dict[str, Any]) -> str:
    """The digest a gold row with ``fields`` (``rows.gold_fields``, its version in ``v``)
    should carry, by the service's own function."""
    from assay.services.adjudication.domain import gold

    return gold.versioned_digest(fields)


def _commitments(raw: Raw) -> dict[tuple[RecordKind, str], records.Commitment]:
    found: dict[tuple[RecordKind, str], records.Commitment] = {}
    for row in raw.all(f"SELECT {rows.REVIEWER_COLUMNS} FROM reviewers"):
        key = (RecordKind.REVIEWER, row["reviewer_id"])
        found[key] = records.reviewer_commitment(rows.reviewer(row))
    for row in raw.all(f"SELECT {rows.CASE_COLUMNS} FROM cases"):
        commitment = records.case_commitment(rows.case(row))
        assert commitment is not None
        found[RecordKind.CASE, row["case_id"]] = commitment
    for row in raw.all(f"SELECT {rows.REVIEW_COLUMNS} FROM reviews"):
        found[RecordKind.REVIEW, row["review_id"]] = records.review_commitment(rows.review(row))
    for row in raw.all(f"SELECT {rows.RESOLUTION_COLUMNS} FROM resolutions"):
        value = rows.resolution(row)
        found[RecordKind.RESOLUTION, records.resolution_id(value)] = records.resolution_commitment(
            value
        )
    for row in raw.all(f"SELECT {approval_rows.APPROVAL_COLUMNS} FROM approvals"):
        commitment = records.approval_commitment(approval_rows.approval(row))
        assert commitment is not None
        found[RecordKind.APPROVAL, row["approval_id"]] = commitment
    for row in raw.all(f"SELECT {approval_rows.STEP_COLUMNS} FROM approval_steps"):
        step = approval_rows.step(row)
        found[RecordKind.APPROVAL_STEP, records.step_id(step)] = records.step_commitment(step)
    return found


def reforge(raw: Raw) -> int:
    """Make the edited database self-consistent: content (cases, approvals) and gold digests
    recomputed from the rows, every record event's payload rewritten to commit to its (edited)
    row, every GOLD_LABEL_FROZEN to its row's digest, and the chain re-hashed from the first
    event that changed. Returns that event's sequence (0 when no event had to change)."""
    for row in raw.all(f"SELECT {rows.CASE_COLUMNS} FROM cases"):
        real = cases.case_digest(rows.case(row, check=False))
        raw.execute("UPDATE cases SET content_digest = ? WHERE case_id = ?", real, row["case_id"])
    for row in raw.all(f"SELECT {approval_rows.APPROVAL_COLUMNS} FROM approvals"):
        real = approvals.approval_digest(approval_rows.approval(row))
        set_digest = "UPDATE approvals SET content_digest = ? WHERE approval_id = ?"
        raw.execute(set_digest, real, row["approval_id"])
    golds: dict[tuple[str, str], tuple[str, str]] = {}
    for row in raw.all(f"SELECT {rows.GOLD_COLUMNS} FROM gold_labels"):
        real = gold_digest(rows.gold_fields(row))
        raw.execute(
            "UPDATE gold_labels SET digest = ? WHERE case_id = ? AND revision = ?",
            real,
            row["case_id"],
            row["revision"],
        )
        golds[str(row["case_id"]), str(row["revision"])] = (real, str(row["provenance"]))
    committed = _commitments(raw)
    head = ledger.EMPTY_HEAD
    first_changed = 0
    for row in raw.all(f"SELECT {rows.AUDIT_COLUMNS} FROM audit_events ORDER BY sequence"):
        event = rows.audit_event(row)
        payload = dict(event.payload)
        key = records.record_key(event.event_type.value, payload)
        if key is not None and key in committed:
            payload.update({k: v for k, v in committed[key].items() if k in payload or v != ""})
        if event.event_type is AuditEventType.GOLD_LABEL_FROZEN:
            gold_key = (payload["case_id"], payload["revision"])
            if gold_key in golds:
                payload["digest"], payload["provenance"] = golds[gold_key]
        sequence = head.sequence + 1
        hashed = ledger.event_hash(
            sequence, event.event_type, event.occur_time, payload, head.hash, event.actor
        )
        if hashed != event.hash or sequence != event.sequence:
            first_changed = first_changed or sequence
            raw.execute(
                "UPDATE audit_events SET sequence = ?, payload = ?, previous_hash = ?, hash = ? "
                "WHERE sequence = ?",
                sequence,
                canonical_json(payload),
                head.hash,
                hashed,
                event.sequence,
            )
        head = ChainHead(sequence, hashed)
    return first_changed


# --- what the tampered server says ------------------------------------------------------


async def extends_checkpoint(stub: Stub, pristine: Pristine) -> bool:
    """Whether the server's signed log provably extends the checkpoint saved before
    tampering (both notes verified with the ledger key; RFC 6962 consistency)."""
    public = load_or_create_signing_key(pristine.key).public_key()
    origin = origin_for(public)
    old = parse_signed_checkpoint(pristine.note, public, origin)
    reply = await stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=TIMEOUT)
    new = parse_signed_checkpoint(reply.signed_note, public, origin)
    if new.size < old.size:
        return False
    request = pb.GetConsistencyProofRequest(first_size=old.size, second_size=new.size)
    proof = await stub.GetConsistencyProof(request, timeout=TIMEOUT)
    return verify_consistency(old.size, new.size, old.root, new.root, list(proof.hashes))


async def status_of(call: Any) -> grpc.StatusCode:
    """OK, or the code the call failed with (a stream is drained to its end); a servicer
    called in-process (``tamper_approvals``) fails with the code the runtime's error table
    gives its error."""
    try:
        if hasattr(call, "__aiter__"):
            async for _ in call:
                pass
        else:
            await call
    except grpc.aio.AioRpcError as error:
        return error.code()
    except AssayError as error:
        return status_code_for(error)
    return grpc.StatusCode.OK
