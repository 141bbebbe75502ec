"""What checking every record against its ledger event costs a read, in-process.

Not a test: a script (``python bench/read_checks.py``) that opens the SQLite store on a
fresh file (``--db postgres-temp``, or a ``postgresql://`` URL whose role may create
databases: PostgreSQL's store on a fresh database), enqueues cases and reviews each twice
through the service's own use case, then reads case states the way ``GetCaseState`` does
(``case_state``: the snapshot, the case's reviews, resolutions and gold labels, each
checked against its ledger event in the same read transaction) and the same rows without
the checks, on the same pooled readers.

Both run with ``--in-flight`` concurrent readers for ``--seconds``, interleaved over
``--rounds``; it prints reads/s, p99 and this process's CPU per read for each, and the
checked over the unchecked, per round. The checks are a guarantee (a row edited in the file
is refused with DATA_LOSS), so this says what it costs; it never decides pass or fail.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable

from adjudication_postgres import fresh_database, server_url

from assay.services.adjudication.domain.model import CaseInput, Lineage, Outcome, ReviewerKind
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.storage.postgres import queries as pg_queries
from assay.services.adjudication.storage.postgres.store import PostgresStore
from assay.services.adjudication.storage.sqlite import queries
from assay.services.adjudication.storage.sqlite.store import Store
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey

Read = Callable[[str], Awaitable[object]]


async def seed(store: Store | PostgresStore, cases: int) -> list[str]:
    """``cases`` cases, each reviewed by two fixture reviewers (a resolved round)."""
    adjudication = Adjudication(store)
    for reviewer in ("r0", "r1"):
        key = RequestKey("", "RegisterReviewer", "")
        await adjudication.register_reviewer(
            key, reviewer, ReviewerKind.MECHANISM_TEST_FIXTURE, "", lambda _: b""
        )
    ids = []
    for _ in range(cases):
        data = CaseInput("bench", "api:x", "retries.mode", ("safe", "unsafe"), (), "",
                         "safe", Lineage("bench"), None)  # fmt: skip
        raw = await adjudication.enqueue_case(
            RequestKey("", "EnqueueCase", ""), data, lambda c: c.case_id.encode()
        )
        case_id = raw.decode()
        for reviewer in ("r0", "r1"):
            submission = ReviewSubmission(case_id, reviewer, 0, Outcome.LABEL, "safe", "")
            key = RequestKey(uuid.uuid4().hex, "SubmitReview", uuid.uuid4().hex)
            await adjudication.submit_review(key, submission, lambda _: b"")
        ids.append(case_id)
    return ids


def unchecked(store: Store) -> Read:
    """The rows ``case_state`` reads, in one read transaction, without the ledger checks."""

    async def read(case_id: str) -> object:
        def work(db: sqlite3.Connection) -> object:
            snap = queries.snapshot(db, case_id)
            if snap is None:
                return None
            history = queries.case_history(db, case_id)
            labels = queries.gold_labels(db, case_id, None, snap.revision_count + 1)
            return snap, history, labels

        return await store._read(work)

    return read


def pg_unchecked(store: PostgresStore) -> Read:
    """``unchecked`` on PostgreSQL: the same rows in one read-only snapshot, no checks."""

    async def read(case_id: str) -> object:
        async def work(db: pg_queries.Db) -> object:
            snap = await pg_queries.snapshot(db, case_id)
            if snap is None:
                return None
            history = await pg_queries.case_history(db, case_id)
            labels = await pg_queries.gold_labels(db, case_id, None, snap.revision_count + 1)
            return snap, history, labels

        return await store._read(work)

    return read


async def phase(read: Read, ids: list[str], in_flight: int, seconds: float) -> tuple[float, ...]:
    """Reads/s, p99 (s) and CPU seconds per read of ``in_flight`` readers for ``seconds``."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def reader(offset: int) -> None:
        n = offset
        while time.perf_counter() < deadline:
            sent = time.perf_counter()
            await read(ids[n % len(ids)])
            latencies.append(time.perf_counter() - sent)
            n += in_flight
            # Let a reader woken for the connection this one gave back take it: reading again
            # at once would take it first (asyncio.Queue is not fair to woken waiters), as no
            # server caller sends its next call within the same loop step.
            await asyncio.sleep(0)

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(reader(i) for i in range(in_flight)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    latencies.sort()
    p99 = latencies[round(0.99 * (len(latencies) - 1))]
    return len(latencies) / wall, p99, cpu / len(latencies)


async def on_sqlite(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = await Store.open(os.path.join(folder, "assay.db"))
        await measure(args, store, unchecked(store))


async def on_postgres(args: argparse.Namespace, url: str) -> None:
    store = await PostgresStore.open(url)
    await measure(args, store, pg_unchecked(store))


async def measure(args: argparse.Namespace, store: Store | PostgresStore, plain: Read) -> None:
    """Seed ``store``, then its checked reads against ``plain`` ones, interleaved."""
    try:
        ids = await seed(store, args.cases)
        reads = {"checked (GetCaseState)": store.case_state, "unchecked": plain}
        for read in reads.values():  # warm-up
            await phase(read, ids, args.in_flight, 0.3)
        found: dict[str, list[tuple[float, ...]]] = {name: [] for name in reads}
        for round_ in range(args.rounds):
            order = list(reads.items())
            for name, read in order if round_ % 2 == 0 else reversed(order):
                found[name].append(await phase(read, ids, args.in_flight, args.seconds))
    finally:
        await store.close()
    print(
        f"{args.in_flight} concurrent reads, {args.rounds} interleaved rounds of {args.seconds:g} s"
    )
    for name, runs in found.items():
        cells = [f"{r:>6,.0f}/s p99 {p * 1000:5.1f} ms CPU {c * 1e6:4.0f} us" for r, p, c in runs]
        print(f"  {name:<24} " + "  ".join(cells))
    checked, unchecked_runs = found.values()
    for label, index in (("reads/s", 0), ("p99", 1), ("CPU per read", 2)):
        ratios = [a[index] / b[index] for a, b in zip(checked, unchecked_runs, strict=True)]
        print(f"  checked / unchecked {label:<13} {min(ratios):.2f}-{max(ratios):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--in-flight", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--db", default=None, help="postgres-temp or a postgresql:// URL (default: SQLite)"
    )
    args = parser.parse_args()
    if args.db is None:
        asyncio.run(on_sqlite(args))
        return
    with server_url(args.db) as base, fresh_database(base) as url:
        asyncio.run(on_postgres(args, url))


if __name__ == "__main__":
    main()
