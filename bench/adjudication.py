"""Adjudication benchmark: durable review throughput against raw durable commits, and export speed.

Not a test: a script (``python bench/adjudication.py``) that prints, from one run,

1. the *raw* rate of aiosqlite ``INSERT`` + ``COMMIT`` of a review-sized row, one transaction
   per row, with the service's durability settings (WAL, ``synchronous=FULL``), on the same
   disk in the same run, on asyncio's loop and on uvloop: the faster is the baseline, so the
   server's loop cannot flatter the ratio;
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
7. the transparency log over 100,000 audit events (``--tlog-events``), in-process: building the
   RFC 6962 tree, inclusion and consistency proofs generated and verified, checkpoints signed
   and verified, and recomputing the root from every leaf ("verify-all"), each next to hashing
   the leaves once with hashlib. ``--only-tlog`` runs this section alone.

Reviews arrive as in real use: every case is reviewed twice, each client by its own pair.
The machine may be shared: each figure is the best of a few repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiosqlite
import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from harness import best_of, free_port

from assay.runtime import loop
from assay.services.adjudication import cases, gold
from assay.services.adjudication.canonical import now
from assay.services.adjudication.model import (
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
from assay.services.adjudication.model import GoldLabelRevision as Gold
from assay.services.adjudication.operations import Adjudication
from assay.services.adjudication.retries import RequestKey
from assay.services.adjudication.reviews import ReviewSubmission
from assay.services.adjudication.storage import Store, WriteTx
from assay.services.adjudication.storage.schema import PRAGMAS
from assay.tlog.checkpoint import Checkpoint, NoteSigner, parse_signed_checkpoint
from assay.tlog.merkle import MerkleTree, verify_consistency, verify_inclusion
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import adjudication_service_pb2_grpc as pb_grpc
from assay.v1 import gold_pb2

FIXTURE = gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
SUBMIT = "/assay.v1.AdjudicationService/SubmitReview"
HEALTH = "/grpc.health.v1.Health/Check"
HEALTH_CHECK = b""  # an empty HealthCheckRequest: the overall server status


class Server:
    """``assay serve adjudication`` in a subprocess (its own interpreter and GIL)."""

    def __init__(self, db: Path, event_loop: str) -> None:
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "assay.cli.main", "serve", "adjudication"]
        command += ["--port", str(self.port), "--db", str(db), "--log-level", "warning"]
        command += ["--event-loop", event_loop]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(self.target) as channel:
            stub = pb_grpc.AdjudicationServiceStub(channel)
            while True:
                try:
                    stub.ListReviewers(pb.ListReviewersRequest(page_size=1), timeout=1)
                    return
                except grpc.RpcError:
                    if time.monotonic() > deadline or self.process.poll() is not None:
                        raise RuntimeError("the adjudication server did not start") from None
                    time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


# --- 1. durable writes ---------------------------------------------------------


async def raw_commits(path: Path, count: int) -> float:
    """Rows/s of aiosqlite INSERT + COMMIT, one transaction per row, WAL + synchronous=FULL."""
    db = await aiosqlite.connect(path)
    try:
        for pragma in PRAGMAS:
            await db.execute(pragma)
        await db.execute(
            "CREATE TABLE reviews (review_id TEXT PRIMARY KEY, case_id TEXT, reviewer_id TEXT,"
            " round INTEGER, outcome TEXT, label_key TEXT, reason TEXT, submit_time INTEGER)"
        )
        await db.commit()
        started = time.perf_counter()
        for i in range(count):
            await db.execute(
                "INSERT INTO reviews VALUES (?, ?, ?, 1, 'LABEL', '\"safe\"', '', ?)",
                (uuid.uuid4().hex, f"case-{i % 100}", f"r{i % 64}", time.time_ns() // 1000),
            )
            await db.commit()
        return count / (time.perf_counter() - started)
    finally:
        await db.close()


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


async def seed_reviews(target: str, reviewers: int, case_count: int) -> list[str]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.AdjudicationServiceStub(channel)
        await asyncio.gather(
            *(
                stub.RegisterReviewer(
                    pb.RegisterReviewerRequest(
                        reviewer=pb.Reviewer(reviewer_id=f"r{i}", kind=FIXTURE)
                    )
                )
                for i in range(reviewers)
            )
        )
        ids = []
        for _ in range(case_count):
            case = pb.Case(
                tenant="bench",
                subject="api:x",
                predicate="retries.mode",
                lineage=pb.CaseLineage(origin="bench"),
            )
            for value in ("safe", "unsafe"):
                case.candidate_values.add().string_value = value
            case.local_verdict.string_value = "safe"
            ids.append((await stub.EnqueueCase(pb.EnqueueCaseRequest(case=case))).case.case_id)
        return ids


def assignments(reviewers: int, case_ids: list[str]) -> list[list[str]]:
    """Each case double-reviewed, as in real use: pairs (r0, r1), (r2, r3), ... share cases,
    so every client has its own stream of cases and each case ends with two reviews."""
    plan: list[list[str]] = [[] for _ in range(reviewers)]
    pairs = reviewers // 2
    for k, case_id in enumerate(case_ids):
        first = 2 * (k % pairs)
        plan[first].append(case_id)
        plan[first + 1].append(case_id)
    return plan


def review_bytes(reviewer: str, case_id: str) -> bytes:
    request = pb.SubmitReviewRequest(
        request_id=uuid.uuid4().hex,
        case_id=case_id,
        reviewer_id=reviewer,
        outcome=pb.REVIEW_OUTCOME_LABEL,
    )
    request.label.string_value = "safe"
    data: bytes = request.SerializeToString()
    return data


async def drive(target: str, method: str, requests: list[list[bytes]]) -> float:
    """Calls/s with one concurrent client per list, each sending its requests in order.

    Requests are serialized beforehand and responses left as bytes, so the client spends
    as little of the shared CPU as possible on protobuf.
    """
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.unary_unary(method)

        async def client(mine: list[bytes]) -> None:
            for raw in mine:
                await call(raw, timeout=60)

        started = time.perf_counter()
        await asyncio.gather(*(client(mine) for mine in requests))
        return sum(len(m) for m in requests) / (time.perf_counter() - started)


async def in_process_reviews(path: Path, reviewers: int, case_count: int) -> float:
    """Reviews/s through the service's own use case (domain rules, retry record, audit event,
    group commit) without gRPC: what the storage path costs on its own."""
    store = await Store.open(path)
    adjudication = Adjudication(store)
    try:
        for i in range(reviewers):
            key = RequestKey("", "RegisterReviewer", "")
            await adjudication.register_reviewer(
                key, f"r{i}", ReviewerKind.MECHANISM_TEST_FIXTURE, "", lambda _: b""
            )
        case_ids = []
        for _ in range(case_count):
            data = CaseInput("bench", "api:x", "retries.mode", ("safe", "unsafe"), (), "",
                             "safe", Lineage("bench"), None)  # fmt: skip
            raw = await adjudication.enqueue_case(
                RequestKey("", "EnqueueCase", ""), data, lambda c: c.case_id.encode()
            )
            case_ids.append(raw.decode())

        plan = assignments(reviewers, case_ids)

        async def client(index: int) -> None:
            for case_id in plan[index]:
                submission = ReviewSubmission(case_id, f"r{index}", 0, Outcome.LABEL, "safe", "")
                key = RequestKey(uuid.uuid4().hex, "SubmitReview", uuid.uuid4().hex)
                await adjudication.submit_review(key, submission, lambda r: r[0].review_id.encode())

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(reviewers)))
        return sum(len(p) for p in plan) / (time.perf_counter() - started)
    finally:
        await store.close()


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


def tlog_section(events: int, proofs: int, signatures: int, repeats: int) -> None:
    """Tree build, proofs, checkpoints and verify-all over ``events`` 32-byte leaves."""
    rng = random.Random(12)
    leaves = [rng.randbytes(32) for _ in range(events)]

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

    print(f"transparency log over {events:,} audit events (32-byte leaves, in-process, "
          f"best of {repeats})")  # fmt: skip
    print(f"  baseline: SHA-256 of every leaf once (hashlib)        : {baseline * 1e3:8.1f} ms")
    print(f"  build the RFC 6962 tree (append every leaf)           : {build_time * 1e3:8.1f} ms"
          f" = {build_time / baseline:.1f}x baseline"
          f" ({events / build_time:,.0f} leaves/s)")  # fmt: skip
    print(f"  verify-all: rebuild from every leaf, compare the root : {verify_all * 1e3:8.1f} ms"
          f" = {verify_all / baseline:.1f}x baseline")  # fmt: skip
    print(f"  inclusion proofs, {proofs:,} random leaves (avg {average:.1f} hashes):")
    print(f"    generate                                            : "
          f"{proofs / generate:10,.0f} proofs/s")  # fmt: skip
    print(f"    verify                                              : "
          f"{proofs / verify_inc:10,.0f} proofs/s")  # fmt: skip
    print(f"  consistency proofs to {events:,} from {proofs:,} random sizes:")
    print(f"    generate                                            : "
          f"{proofs / generate_con:10,.0f} proofs/s")  # fmt: skip
    print(f"    verify                                              : "
          f"{proofs / verify_con:10,.0f} proofs/s")  # fmt: skip
    print(f"  checkpoints (C2SP signed note, Ed25519), {signatures:,} each:")
    print(f"    sign                                                : "
          f"{signatures / sign:10,.0f} checkpoints/s")  # fmt: skip
    print(f"    parse + verify                                      : "
          f"{signatures / verify_sig:10,.0f} checkpoints/s")  # fmt: skip
    print(f"  one inclusion check (verify, {average:.0f} hashes) costs "
          f"{verify_inc / proofs / (baseline / events):.0f} leaf hashes; verify-all costs "
          f"{verify_all / (baseline / events):,.0f}")  # fmt: skip


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
    parser.add_argument("--only-tlog", action="store_true",
                        help="only the transparency-log section (no server, no disk)")  # fmt: skip
    args = parser.parse_args()
    if args.tlog_events < 2:
        parser.error("--tlog-events must be at least 2")
    if args.only_tlog:
        tlog_section(args.tlog_events, args.tlog_proofs, args.tlog_signatures, args.repeats)
        return 0
    if args.reviewers < 2 or args.reviewers % 2:
        parser.error("--reviewers must be an even number >= 2 (reviewers work in pairs)")
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
                in_process_reviews(root / f"inproc{attempt}.db", args.reviewers, case_count),
                args.event_loop,
            )
            inproc_best = max(inproc_best, inproc)
            server = Server(root / f"server{attempt}.db", args.event_loop)
            try:
                server.wait_ready()
                ids = asyncio.run(seed_reviews(server.target, args.reviewers, case_count))
                plan = [
                    [review_bytes(f"r{i}", c) for c in mine]
                    for i, mine in enumerate(assignments(args.reviewers, ids))
                ]
                server_best = max(server_best, asyncio.run(drive(server.target, SUBMIT, plan)))
                noop = [[HEALTH_CHECK] * args.cases for _ in range(args.reviewers)]
                noop_best = max(noop_best, asyncio.run(drive(server.target, HEALTH, noop)))
            finally:
                server.stop()
        print("durable writes (WAL, synchronous=FULL, same disk, same run)")
        for name, rate in raw_by_loop.items():
            print(
                f"  raw aiosqlite INSERT+COMMIT per row, {name:7} loop        : {rate:8,.0f} rows/s"
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

        gold_db = root / "gold.db"
        started = time.perf_counter()
        asyncio.run(seed_gold(gold_db, args.gold))
        seeded = time.perf_counter() - started
        server = Server(gold_db, args.event_loop)
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
    tlog_section(args.tlog_events, args.tlog_proofs, args.tlog_signatures, args.repeats)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("ASSAY_LOG_LEVEL", "warning")
    sys.exit(main())
