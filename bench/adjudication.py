"""Adjudication benchmark: durable review throughput against raw durable commits, and export speed.

Not a test: a script (``python bench/adjudication.py``) that prints, from one run,

1. the *raw* rate of sqlite3 ``INSERT`` + ``COMMIT`` of a review-sized row, one transaction
   per row, with the service's durability settings (WAL, ``synchronous=FULL``), on the same
   disk in the same run, on a thread of its own awaited from asyncio's loop and from uvloop
   (as the service's connection is): the faster is the baseline, so the server's loop cannot
   flatter the ratio;
2. ``SubmitReview`` as the service runs it -- validation, the domain rules, the audit event,
   the retry record, group commit -- called in-process by concurrent tasks, without gRPC:
   what the storage path costs;
3. ``SubmitReview`` through a real server (``assay serve adjudication`` in its own process on
   loopback) driven by concurrent asyncio clients, as a ratio to (1) (target: at least
   0.8x; committing concurrent reviews together -- group commit -- can pass 1x);
4. a no-op RPC (health ``Check``) on the same server under the same load: the ceiling the
   gRPC layer alone allows on this machine, to tell transport cost from storage cost;
5. ``ExportCorpus`` throughput for 100,000 gold labels (seeded directly through the storage
   layer), in records/s as the client receives them (target: at least 20,000/s);
6. what the target leaves per review beyond the no-op RPC, next to what the use case costs,
   and the disk's fsync time, which is what bounds the raw rate;
7. the transparency log over a ledger of 100,000 real audit events (``--tlog-events``),
   written through the service's use cases (every case enqueued, reviewed twice, resolved and
   frozen): in-process, building the RFC 6962 tree, inclusion and consistency proofs generated
   and verified, checkpoints signed and verified, and recomputing the root from every leaf
   ("verify-all"), each next to hashing the leaves once with hashlib; then through a real
   server, ``GetInclusionProof`` throughput (against a no-op RPC on the same server),
   ``VerifyAuditChain`` over every event (against reading and hashing every event row once),
   and the offline check of the proofs the server returned against its signed checkpoint
   (against hashing as many nodes with hashlib). ``--only-tlog`` runs this section alone;
   ``--only-reviews`` runs section 1 alone (for before/after comparisons).

``--db postgresql://...`` (or ``--db postgres-temp``, a throwaway server started here) runs
the durable-writes comparison on PostgreSQL instead: SubmitReview through one replica and
through two against raw ``asyncpg`` commits on the same server (``adjudication_postgres``).

Reviews arrive as in real use: every case is reviewed twice, each client by its own pair.
The machine may be shared: each figure is the best of a few repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import cast

import grpc
from adjudication_postgres import TEMP, postgres_section
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from harness import best_of
from review_load import (
    HEALTH,
    HEALTH_CHECK,
    SUBMIT,
    Server,
    drive,
    in_process_reviews,
    review_plan,
    seed_reviews,
)

from assay.runtime import loop
from assay.services.adjudication.domain import cases, gold
from assay.services.adjudication.domain.model import (
    Basis,
    Case,
    CaseInput,
    CaseSnapshot,
    Lineage,
    Outcome,
    Resolution,
    Review,
    ReviewerKind,
)
from assay.services.adjudication.domain.model import GoldLabelRevision as Gold
from assay.services.adjudication.domain.resolution import ResolveRequest
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.domain.times import now
from assay.services.adjudication.storage import Store, WriteTx
from assay.services.adjudication.storage.sqlite.schema import PRAGMAS
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey
from assay.services.adjudication.use_cases.transparency import leaf_data
from assay.tlog.checkpoint import Checkpoint, NoteSigner, parse_signed_checkpoint
from assay.tlog.merkle import MerkleTree, verify_consistency, verify_inclusion
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc

# --- 1. durable writes ---------------------------------------------------------

RAW_TABLE = (
    "CREATE TABLE reviews (review_id TEXT PRIMARY KEY, case_id TEXT, reviewer_id TEXT,"
    " round INTEGER, outcome TEXT, label_key TEXT, reason TEXT, submit_time INTEGER)"
)


async def raw_commits(path: Path, count: int) -> float:
    """Rows/s of sqlite3 INSERT + COMMIT, one transaction per row, with the service's PRAGMAS
    (WAL, synchronous=FULL), on a thread of its own as the service's connection is: each row
    is one hop from the loop to that thread and back."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="raw-sqlite") as thread:
        running = asyncio.get_running_loop()

        def hop(work: Callable[[], object]) -> asyncio.Future[object]:
            return running.run_in_executor(thread, work)

        db = cast(
            sqlite3.Connection, await hop(lambda: sqlite3.connect(path, isolation_level=None))
        )
        try:
            for pragma in PRAGMAS:
                await hop(partial(db.execute, pragma))
            await hop(lambda: db.execute(RAW_TABLE))

            def insert_and_commit(i: int) -> None:
                db.execute("BEGIN")
                db.execute(
                    "INSERT INTO reviews VALUES (?, ?, ?, 1, 'LABEL', '\"safe\"', '', ?)",
                    (uuid.uuid4().hex, f"case-{i % 100}", f"r{i % 64}", time.time_ns() // 1000),
                )
                db.execute("COMMIT")

            started = time.perf_counter()
            for i in range(count):
                await hop(partial(insert_and_commit, i))
            return count / (time.perf_counter() - started)
        finally:
            await hop(db.close)


def fsync_micros(path: Path, count: int = 500) -> float:
    """Median microseconds of a 4 KiB write + fsync on the benchmark's disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        times = []
        for _ in range(count):
            started = time.perf_counter()
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
    return sorted(times)[count // 2] * 1e6


# --- 2. export -----------------------------------------------------------------


async def seed_gold(path: Path, count: int) -> None:
    """``count`` cases, each with one frozen gold label, written through the storage layer."""
    store = await Store.open(path)
    try:
        at = now()
        chunk = 5000
        for start in range(0, count, chunk):
            batch_cases: list[Case] = []
            batch_gold: list[Gold] = []
            for i in range(start, min(count, start + chunk)):
                case = cases.new_case(
                    f"case_{i:08d}",
                    CaseInput(
                        tenant="bench",
                        subject=f"api:endpoint-{i % 1000}",
                        predicate="idempotency.mode",
                        candidate_values=("key", "none"),
                        evidence_refs=(f"claim-{i}",),
                        context="",
                        local_verdict="key",
                        lineage=Lineage("bench"),
                        expire_time=None,
                    ),
                    at,
                )
                reviews = tuple(
                    Review(f"rev_{i}_{r}", case.case_id, f"r{r}", 1, Outcome.LABEL, "key",
                           '"key"', "", at)
                    for r in range(2)
                )  # fmt: skip
                resolution = Resolution(
                    case.case_id, 1, Basis.UNANIMOUS_AGREEMENT, "key", '"key"', "",
                    tuple(r.review_id for r in reviews), at,
                )  # fmt: skip
                snapshot = CaseSnapshot(case, 0, reviews, resolution)
                kinds = {"r0": ReviewerKind.MECHANISM_TEST_FIXTURE}
                batch_cases.append(case)
                batch_gold.append(gold.new_revision(snapshot, resolution, kinds, at))

            def job(tx: WriteTx, c: list[Case] = batch_cases, g: list[Gold] = batch_gold) -> None:
                tx.bulk_insert(c, g)

            await store.write(job)
    finally:
        await store.close()


async def export_rate(target: str, expected: int) -> float:
    options = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        stub = pb_grpc.AdjudicationServiceStub(channel)
        started = time.perf_counter()
        received = 0
        manifest = None
        async for message in stub.ExportCorpus(pb.ExportCorpusRequest(), timeout=300):
            if message.WhichOneof("item") == "batch":
                received += len(message.batch.records)
            else:
                manifest = message.manifest
        elapsed = time.perf_counter() - started
    if manifest is None or received != expected or manifest.record_count != expected:
        raise RuntimeError(f"export returned {received} records, expected {expected}")
    return received / elapsed


# --- 3. transparency log -------------------------------------------------------

GET_INCLUSION = "/assay.v1.AdjudicationService/GetInclusionProof"
REVIEWERS = 5  # ledger seeding: r0 and r1 review every case; five registrations in all


async def seed_ledger(path: Path, events: int, workers: int = 100) -> int:
    """A ledger of ``events`` real events: every case goes through its whole life (enqueue,
    two reviews, resolve, freeze: five events) through the service's own use cases and
    writer, group-committed, so the chain, the records and their cross-checks are exactly
    what the service writes. Returns the number of cases."""
    store = await Store.open(path)
    adjudication = Adjudication(store)
    case_count = (events - REVIEWERS) // 5
    try:
        for i in range(REVIEWERS + (events - REVIEWERS) % 5):
            await adjudication.register_reviewer(
                RequestKey("", "RegisterReviewer", ""),
                f"r{i}", ReviewerKind.MECHANISM_TEST_FIXTURE, "", lambda _: b"",
            )  # fmt: skip
        data = CaseInput("bench", "api:x", "retries.mode", ("safe", "unsafe"), (), "", "safe",
                         Lineage("bench"), None)  # fmt: skip
        todo = iter(range(case_count))

        def key(method: str) -> RequestKey:
            return RequestKey(uuid.uuid4().hex, method, uuid.uuid4().hex)

        async def worker() -> None:
            for _ in todo:
                raw = await adjudication.enqueue_case(
                    key("EnqueueCase"), data, lambda c: c.case_id.encode()
                )
                case_id = raw.decode()
                for reviewer in ("r0", "r1"):
                    submission = ReviewSubmission(case_id, reviewer, 0, Outcome.LABEL, "safe", "")
                    await adjudication.submit_review(key("SubmitReview"), submission, lambda _: b"")
                decision = ResolveRequest(case_id, Basis.UNANIMOUS_AGREEMENT, None, "")
                await adjudication.resolve_case(key("ResolveCase"), decision, lambda _: b"")
                await adjudication.freeze(key("FreezeGoldLabel"), case_id, 0, lambda _: b"")

        await asyncio.gather(*(worker() for _ in range(workers)))
        return case_count
    finally:
        await store.close()


def read_events(path: Path) -> list[tuple[bytes, ...]]:
    """Every audit event row, in sequence order, read with plain sqlite3."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        found: list[tuple[bytes, ...]] = db.execute(
            "SELECT * FROM audit_events ORDER BY sequence"
        ).fetchall()
        return found


def read_leaves(path: Path) -> list[bytes]:
    """The transparency log's leaves: each event's 32-byte chain hash, in sequence order."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT sequence, hash FROM audit_events ORDER BY sequence")
        return [leaf_data(int(sequence), str(chain)) for sequence, chain in rows]


def in_memory(leaves: list[bytes], proofs: int, signatures: int, repeats: int) -> None:
    """Tree build, verify-all, proofs and checkpoints in-process, over the ledger's leaves."""
    events = len(leaves)
    rng = random.Random(12)

    def hash_once() -> None:
        for data in leaves:
            hashlib.sha256(b"\x00" + data).digest()

    def build() -> MerkleTree:
        tree = MerkleTree()
        for data in leaves:
            tree.append(data)
        return tree

    baseline = best_of(repeats=repeats, fn=hash_once)
    build_time = best_of(repeats=repeats, fn=build)
    tree = build()
    root = tree.root()
    # verify-all: what an auditor holding every leaf does -- rebuild, compare with the root.
    verify_all = best_of(repeats=repeats, fn=lambda: build().root() == root or sys.exit("bad root"))

    indexes = [rng.randrange(events) for _ in range(proofs)]
    made: list[list[bytes]] = []
    generate = best_of(
        repeats=repeats,
        fn=lambda: made.__setitem__(
            slice(None), [tree.inclusion_proof(i, events) for i in indexes]
        ),
    )

    def check_inclusion() -> None:
        for i, proof in zip(indexes, made, strict=True):
            if not verify_inclusion(leaves[i], i, events, proof, root):
                raise RuntimeError(f"inclusion proof for leaf {i} failed")

    verify_inc = best_of(repeats=repeats, fn=check_inclusion)
    sizes = [rng.randrange(1, events) for _ in range(proofs)]
    roots = {m: tree.root(m) for m in sizes}
    consistency: list[list[bytes]] = []
    generate_con = best_of(
        repeats=repeats,
        fn=lambda: consistency.__setitem__(
            slice(None), [tree.consistency_proof(m, events) for m in sizes]
        ),
    )

    def check_consistency() -> None:
        for m, proof in zip(sizes, consistency, strict=True):
            if not verify_consistency(m, events, roots[m], root, proof):
                raise RuntimeError(f"consistency proof from {m} failed")

    verify_con = best_of(repeats=repeats, fn=check_consistency)

    key = Ed25519PrivateKey.generate()
    signer = NoteSigner(key, "assay.v1/adjudication/bench")
    checkpoint = Checkpoint(signer.name, events, root)
    notes: list[str] = []
    sign = best_of(
        repeats=repeats,
        fn=lambda: notes.__setitem__(
            slice(None), [signer.sign(checkpoint) for _ in range(signatures)]
        ),
    )
    public = key.public_key()

    def check_notes() -> None:
        for note in notes:
            if parse_signed_checkpoint(note, public, signer.name) != checkpoint:
                raise RuntimeError("checkpoint did not verify")

    verify_sig = best_of(repeats=repeats, fn=check_notes)
    average = sum(len(p) for p in made) / len(made)

    print(f"  in memory (assay.tlog, in-process, best of {repeats}):")
    print(f"    baseline: SHA-256 of every leaf once (hashlib)      : {baseline * 1e3:8.1f} ms")
    print(f"    build the RFC 6962 tree (append every leaf)         : {build_time * 1e3:8.1f} ms"
          f" = {build_time / baseline:.1f}x baseline"
          f" ({events / build_time:,.0f} leaves/s)")  # fmt: skip
    print(f"    verify-all: rebuild from every leaf, compare root   : {verify_all * 1e3:8.1f} ms"
          f" = {verify_all / baseline:.1f}x baseline")  # fmt: skip
    print(f"    inclusion proofs, {proofs:,} random leaves (avg {average:.1f} hashes):")
    print(f"      generate (MerkleTree.inclusion_proof)             : "
          f"{proofs / generate:10,.0f} proofs/s")  # fmt: skip
    print(f"      verify (merkle.verify_inclusion)                  : "
          f"{proofs / verify_inc:10,.0f} proofs/s")  # fmt: skip
    print(f"    consistency proofs to {events:,} from {proofs:,} random sizes:")
    print(f"      generate                                          : "
          f"{proofs / generate_con:10,.0f} proofs/s")  # fmt: skip
    print(f"      verify                                            : "
          f"{proofs / verify_con:10,.0f} proofs/s")  # fmt: skip
    print(f"    checkpoints (C2SP signed note, Ed25519), {signatures:,} each:")
    print(f"      sign                                              : "
          f"{signatures / sign:10,.0f} checkpoints/s")  # fmt: skip
    print(f"      parse + verify                                    : "
          f"{signatures / verify_sig:10,.0f} checkpoints/s")  # fmt: skip
    print(f"    one inclusion check ({average:.0f} hashes) costs "
          f"{verify_inc / proofs / (baseline / events):.0f} leaf hashes; verify-all costs "
          f"{verify_all / (baseline / events):,.0f}")  # fmt: skip


async def fetch_proofs(
    target: str, sequences: list[int]
) -> tuple[pb.GetCheckpointResponse, list[pb.GetInclusionProofResponse]]:
    """The server's checkpoint, then the audit path of each sequence at its tree size."""
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.AdjudicationServiceStub(channel)
        head = await stub.GetCheckpoint(pb.GetCheckpointRequest(), timeout=60)
        found = []
        for start in range(0, len(sequences), 100):
            found += await asyncio.gather(
                *(
                    stub.GetInclusionProof(
                        pb.GetInclusionProofRequest(sequence=s, tree_size=head.tree_size),
                        timeout=60,
                    )
                    for s in sequences[start : start + 100]
                )
            )
        return head, found


def through_server(
    path: Path, leaves: list[bytes], proofs: int, clients: int, repeats: int, event_loop: str
) -> None:
    """GetInclusionProof and VerifyAuditChain on a real server over the seeded ledger, and an
    auditor's offline check of the proofs it returned."""
    events = len(leaves)
    rng = random.Random(13)
    sequences = [rng.randrange(1, events + 1) for _ in range(proofs)]
    started = time.perf_counter()
    server = Server(str(path), event_loop)
    try:
        server.wait_ready()
        ready = time.perf_counter() - started
        per_client = -(-proofs // clients)
        plan = [
            [pb.GetInclusionProofRequest(sequence=s).SerializeToString()
             for s in sequences[c * per_client : (c + 1) * per_client]]
            for c in range(clients)
        ]  # fmt: skip
        noop = [[HEALTH_CHECK] * len(mine) for mine in plan]
        asyncio.run(drive([server.target], GET_INCLUSION, plan))  # warm-up
        rpc = health = 0.0
        for _ in range(repeats):  # interleaved, so machine load hits both alike
            rpc = max(rpc, asyncio.run(drive([server.target], GET_INCLUSION, plan)))
            health = max(health, asyncio.run(drive([server.target], HEALTH, noop)))
        head, replies = asyncio.run(fetch_proofs(server.target, sequences))

        with grpc.insecure_channel(server.target) as channel:
            stub = pb_grpc.AdjudicationServiceStub(channel)
            verdicts: list[pb.VerifyAuditChainResponse] = []

            def verify_chain() -> None:
                verdicts.append(stub.VerifyAuditChain(pb.VerifyAuditChainRequest(), timeout=600))

            chain = best_of(repeats=repeats, fn=verify_chain)
    finally:
        server.stop()
    bad = [v for v in verdicts if not v.ok or v.events_checked != events]
    if bad:
        raise RuntimeError(f"VerifyAuditChain over the seeded ledger failed: {bad[0]}")

    rows = read_events(path)

    def read_and_hash() -> None:
        for row in read_events(path):
            hashlib.sha256(repr(row).encode()).digest()

    floor = best_of(repeats=repeats, fn=read_and_hash)

    # Offline, as `assay audit` would: the note's signature with the public key, then each
    # proof from the event's own chain hash up to the signed root.
    public = serialization.load_pem_public_key(head.public_key_pem.encode("ascii"))
    assert isinstance(public, Ed25519PublicKey)
    signed = parse_signed_checkpoint(head.signed_note, public, head.origin)

    def check_offline() -> None:
        for s, reply in zip(sequences, replies, strict=True):
            if not verify_inclusion(
                leaves[s - 1], reply.leaf_index, signed.size, list(reply.hashes), signed.root
            ):
                raise RuntimeError(f"inclusion proof of event {s} failed offline")

    offline = best_of(repeats=repeats, fn=check_offline)
    hashes = sum(len(r.hashes) for r in replies) + len(replies)  # the leaf's own hash too

    def hash_as_many() -> None:
        for _ in range(hashes):
            hashlib.sha256(b"\x01" + leaves[0] + leaves[-1]).digest()

    hash_floor = best_of(repeats=repeats, fn=hash_as_many)

    print(f"  through a real server (assay serve adjudication, {loop.resolve_loop(event_loop)}"
          f" loop), best of {repeats}:")  # fmt: skip
    print(f"    server ready in {ready:.1f} s (rebuilds the tree from {events:,} stored events)")
    print(
        f"    GetInclusionProof, {proofs:,} random events, {clients} clients: "
        f"{rpc:10,.0f} proofs/s = {rpc / health:.2f}x a no-op RPC ({health:,.0f} calls/s)"
    )
    print(f"    VerifyAuditChain over {events:,} events (chain + record cross-checks): "
          f"{chain:6.2f} s = {events / chain:,.0f} events/s")  # fmt: skip
    print(f"      = {chain / floor:.1f}x reading every event row with sqlite3 and hashing it"
          f" once ({floor:.2f} s for {len(rows):,} rows)")  # fmt: skip
    print(f"    offline: the RPC's {proofs:,} proofs against the signed checkpoint"
          f" (merkle.verify_inclusion): {proofs / offline:10,.0f} proofs/s")  # fmt: skip
    print(f"      = {offline / hash_floor:.1f}x hashing the same {hashes:,} nodes with hashlib"
          f" ({hashes / proofs:.1f} per proof)")  # fmt: skip


def tlog_section(
    events: int, proofs: int, signatures: int, clients: int, repeats: int, event_loop: str
) -> None:
    """The transparency log over a ledger of ``events`` real events."""
    with tempfile.TemporaryDirectory(prefix="assay-bench-tlog-") as tmp:
        path = Path(tmp) / "ledger.db"
        started = time.perf_counter()
        case_count = loop.run(seed_ledger(path, events), event_loop)
        seeded = time.perf_counter() - started
        leaves = read_leaves(path)
        if len(leaves) != events:
            raise RuntimeError(f"seeded {len(leaves)} events, expected {events}")
        print(f"transparency log over {events:,} audit events ({case_count:,} cases, each"
              f" enqueued, reviewed twice, resolved and frozen through the service's use"
              f" cases; seeded in {seeded:.1f} s)")  # fmt: skip
        in_memory(leaves, proofs, signatures, repeats)
        through_server(path, leaves, proofs, clients, repeats, event_loop)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviewers", type=int, default=50, help="concurrent review clients")
    parser.add_argument("--cases", type=int, default=60, help="reviews each client submits")
    parser.add_argument("--raw-rows", type=int, default=3000)
    parser.add_argument("--gold", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--event-loop", choices=loop.LOOPS, default="auto",
                        help="the server's event loop (as assay serve --event-loop)")  # fmt: skip
    parser.add_argument("--tlog-events", type=int, default=100_000,
                        help="audit events (leaves) in the transparency-log section")  # fmt: skip
    parser.add_argument("--tlog-proofs", type=int, default=10_000,
                        help="random inclusion and consistency proofs")  # fmt: skip
    parser.add_argument("--tlog-signatures", type=int, default=2_000,
                        help="checkpoints signed and verified")  # fmt: skip
    parser.add_argument("--tlog-clients", type=int, default=50,
                        help="concurrent GetInclusionProof clients")  # fmt: skip
    parser.add_argument("--db", metavar="URL",
                        help="PostgreSQL instead: a postgresql:// URL (the role needs CREATEDB), or"
                        f" '{TEMP}' to start a throwaway server here; runs only the"
                        " durable-writes section, with one replica and two")  # fmt: skip
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--only-tlog", action="store_true",
                      help="only the transparency-log section")  # fmt: skip
    only.add_argument("--only-reviews", action="store_true",
                      help="only the durable-writes section (reviews vs raw commits)")  # fmt: skip
    args = parser.parse_args()
    if args.tlog_events < REVIEWERS + 5:
        parser.error(f"--tlog-events must be at least {REVIEWERS + 5}")
    tlog = (args.tlog_events, args.tlog_proofs, args.tlog_signatures, args.tlog_clients,
            args.repeats, args.event_loop)  # fmt: skip
    if args.only_tlog:
        tlog_section(*tlog)
        return 0
    if args.reviewers < 2 or args.reviewers % 2:
        parser.error("--reviewers must be an even number >= 2 (reviewers work in pairs)")
    if args.db is not None:
        if args.db != TEMP and not args.db.startswith(("postgresql://", "postgres://")):
            parser.error(f"--db takes a postgresql:// URL or '{TEMP}'")
        postgres_section(args.db, args.reviewers, args.cases, args.raw_rows, args.repeats,
                         args.event_loop)  # fmt: skip
        return 0
    case_count = args.reviewers * args.cases // 2

    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp:
        root = Path(tmp)
        raw_best = inproc_best = server_best = noop_best = 0.0
        # The baseline is the faster of the two loops, so a faster loop in the server cannot
        # flatter the ratio.
        raw_by_loop = dict.fromkeys(
            ("asyncio", "uvloop") if loop.uvloop_available() else ("asyncio",), 0.0
        )
        for attempt in range(args.repeats):
            for name in raw_by_loop:
                rate = loop.run(raw_commits(root / f"raw{attempt}{name}.db", args.raw_rows), name)
                raw_by_loop[name] = max(raw_by_loop[name], rate)
            raw_best = max(raw_by_loop.values())
            inproc = loop.run(
                in_process_reviews(
                    partial(Store.open, root / f"inproc{attempt}.db"), args.reviewers, case_count
                ),
                args.event_loop,
            )
            inproc_best = max(inproc_best, inproc)
            server = Server(str(root / f"server{attempt}.db"), args.event_loop)
            try:
                server.wait_ready()
                ids = asyncio.run(seed_reviews(server.target, args.reviewers, case_count))
                plan = review_plan(args.reviewers, ids)
                server_best = max(server_best, asyncio.run(drive([server.target], SUBMIT, plan)))
                noop = [[HEALTH_CHECK] * args.cases for _ in range(args.reviewers)]
                noop_best = max(noop_best, asyncio.run(drive([server.target], HEALTH, noop)))
            finally:
                server.stop()
        print("durable writes (WAL, synchronous=FULL, same disk, same run)")
        for name, rate in raw_by_loop.items():
            print(
                f"  raw sqlite3 INSERT+COMMIT per row (thread), {name:7} loop: {rate:8,.0f} rows/s"
            )
        print(f"  baseline (the faster raw rate)                      : {raw_best:8,.0f} rows/s")
        print(f"  server event loop: {loop.resolve_loop(args.event_loop)}")
        print(f"  SubmitReview use case in-process (no gRPC), {args.reviewers} tasks : "
              f"{inproc_best:8,.0f} reviews/s = {inproc_best / raw_best:.2f}x raw")  # fmt: skip
        print(f"  SubmitReview via server, {args.reviewers} concurrent clients    : "
              f"{server_best:8,.0f} reviews/s = {server_best / raw_best:.2f}x raw"
              "  (target >= 0.8x)")  # fmt: skip
        if len(raw_by_loop) > 1:
            lenient = server_best / raw_by_loop["asyncio"]
            print(f"    (against asyncio's raw rate alone: {lenient:.2f}x;"
                  " the baseline above is the stricter one)")  # fmt: skip
        print(f"  no-op RPC (health Check) on the same server, same load: {noop_best:8,.0f} calls/s"
              f"; SubmitReview reaches {server_best / noop_best:.2f}x of it")  # fmt: skip
        # What the target leaves for SubmitReview's own work, next to what that work costs.
        budget = 1e6 / (0.8 * raw_best) - 1e6 / noop_best
        sync = fsync_micros(root / "fsync.probe")
        print(f"  0.8x raw leaves {budget:,.0f} us per review beyond a no-op RPC;"
              f" the use case alone (in-process) takes {1e6 / inproc_best:,.0f} us")  # fmt: skip
        print(f"  write 4 KiB + fsync on this disk: {sync:,.0f} us -- what bounds the raw rate;"
              " where fsync costs 1 ms, raw drops to ~1,000/s")  # fmt: skip
        if args.only_reviews:
            return 0

        gold_db = root / "gold.db"
        started = time.perf_counter()
        asyncio.run(seed_gold(gold_db, args.gold))
        seeded = time.perf_counter() - started
        server = Server(str(gold_db), args.event_loop)
        best = 0.0
        try:
            server.wait_ready()
            for _ in range(args.repeats):
                best = max(best, asyncio.run(export_rate(server.target, args.gold)))
        finally:
            server.stop()
        print(f"export of {args.gold:,} gold labels (seeded in {seeded:.1f}s)")
        print(f"  ExportCorpus, records received by the client   : {best:10,.0f} records/s"
              "  (target >= 20,000/s)")  # fmt: skip
    tlog_section(*tlog)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("ASSAY_LOG_LEVEL", "warning")
    sys.exit(main())
