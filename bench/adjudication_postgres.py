"""The PostgreSQL section of ``bench/adjudication.py``: SubmitReview through one replica and
through two, against raw ``asyncpg`` commits on the same server in the same run.

The raw rate is what PostgreSQL gives a client that does nothing but commit review-sized
rows, one row per transaction (an autocommit ``INSERT``: one round trip, one WAL flush):
from one connection in sequence, and from as many connections as the benchmark has review
clients (concurrent commits share WAL flushes, so this rate is the higher one). Each runs
on asyncio's loop and on uvloop and the faster counts, so the server's loop cannot flatter
the ratio. The replicas are real ``assay serve adjudication`` processes on one database
with one ledger signing key, reached over loopback gRPC; with two, client ``i`` calls
replica ``i % 2``. Every attempt gets fresh databases (``CREATE DATABASE``, dropped after),
so the role in the URL needs CREATEDB. ``postgres-temp`` starts a throwaway server instead
(initdb + pg_ctl, fsync on, as ``tests/support/postgres.py`` does for the test tier).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import asyncpg
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
from assay.runtime.database_url import masked
from assay.services.adjudication.storage.postgres.store import PostgresStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, for postgres-temp

TEMP = "postgres-temp"
RAW_TABLE = (
    "CREATE TABLE bench_raw_reviews (review_id TEXT PRIMARY KEY, case_id TEXT,"
    " reviewer_id TEXT, round INTEGER, outcome TEXT, label_key TEXT, reason TEXT,"
    " submit_time BIGINT)"
)
RAW_INSERT = "INSERT INTO bench_raw_reviews VALUES ($1, $2, $3, 1, 'LABEL', '\"safe\"', '', $4)"


@contextlib.contextmanager
def server_url(db: str) -> Iterator[str]:
    """``db`` itself, or for ``postgres-temp`` the URL of a durable throwaway server."""
    if db != TEMP:
        yield db
        return
    import pytest

    from tests.support.postgres import running_server

    try:
        with running_server(durable=True) as server:
            yield server.dsn()
    except pytest.skip.Exception as missing:
        raise SystemExit(f"--db {TEMP}: {missing.msg}") from None


def with_database(url: str, name: str) -> str:
    return urllib.parse.urlsplit(url)._replace(path=f"/{name}").geturl()


@contextlib.contextmanager
def fresh_database(url: str) -> Iterator[str]:
    """The URL of a new empty database on ``url``'s server, dropped on exit."""
    name = f"assay_bench_{secrets.token_hex(6)}"

    async def admin(statement: str) -> None:
        db = await asyncpg.connect(url)
        try:
            await db.execute(statement)
        finally:
            await db.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield with_database(url, name)
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def durability(url: str) -> str:
    """The server settings that decide what a commit costs, as ``name=value`` pairs."""
    db = await asyncpg.connect(url)
    try:
        names = ("fsync", "synchronous_commit", "wal_sync_method", "commit_delay")
        return ", ".join([f"{n}={await db.fetchval(f'SHOW {n}')}" for n in names])
    finally:
        await db.close()


def raw_row(i: int) -> tuple[str, str, str, int]:
    return uuid.uuid4().hex, f"case-{i % 100}", f"r{i % 64}", time.time_ns() // 1000


async def raw_commits(url: str, count: int, connections: int) -> float:
    """Rows/s of autocommit INSERTs (one row per transaction) from ``connections``
    connections at once, each sending its share in sequence; 1 is the sequential rate."""
    opened = [await asyncpg.connect(url) for _ in range(connections)]
    try:
        await opened[0].execute("DROP TABLE IF EXISTS bench_raw_reviews")
        await opened[0].execute(RAW_TABLE)
        for db in opened:  # prepared before the clock starts, as the service's statements are
            await db.execute(RAW_INSERT, *raw_row(-1 - opened.index(db)))

        async def client(db: asyncpg.Connection, rows: range) -> None:
            for i in rows:
                await db.execute(RAW_INSERT, *raw_row(i))

        share = -(-count // connections)
        started = time.perf_counter()
        await asyncio.gather(
            *(
                client(db, range(k * share, min(count, (k + 1) * share)))
                for k, db in enumerate(opened)
            )
        )
        return count / (time.perf_counter() - started)
    finally:
        for db in opened:
            await db.close()


def replicas_rate(
    url: str, replicas: int, reviewers: int, case_count: int, event_loop: str
) -> tuple[float, float]:
    """SubmitReview/s through ``replicas`` real servers on one fresh database, sharing one
    ledger signing key (reviewers and cases seeded through the first), and then a no-op RPC's
    calls/s (health ``Check``) under the same load: the ceiling gRPC alone allows here."""
    with fresh_database(url) as db, tempfile.TemporaryDirectory(prefix="assay-bench-key-") as tmp:
        flags = ("--ledger-signing-key", str(Path(tmp) / "ledger-key.pem"))
        servers: list[Server] = []
        try:
            # One at a time: the first creates the key, the others load it.
            for _ in range(replicas):
                servers.append(Server(db, event_loop, flags))
                servers[-1].wait_ready()
            ids = asyncio.run(seed_reviews(servers[0].target, reviewers, case_count))
            plan = review_plan(reviewers, ids)
            targets = [s.target for s in servers]
            rate = asyncio.run(drive(targets, SUBMIT, plan))
            noop = [[HEALTH_CHECK] * len(mine) for mine in plan]
            return rate, asyncio.run(drive(targets, HEALTH, noop))
        finally:
            for server in servers:
                server.stop()


def postgres_section(
    db: str, reviewers: int, cases: int, raw_rows: int, repeats: int, event_loop: str
) -> None:
    """Print the raw rates, one replica and two, each the best of ``repeats`` interleaved
    attempts, and the ratios."""
    case_count = reviewers * cases // 2
    loops = ("asyncio", "uvloop") if loop.uvloop_available() else ("asyncio",)
    sequential = dict.fromkeys(loops, 0.0)
    concurrent = dict.fromkeys(loops, 0.0)
    one = two = one_noop = two_noop = inproc = 0.0
    with server_url(db) as url:
        settings = asyncio.run(durability(url))
        for _ in range(repeats):
            with fresh_database(url) as raw_db:
                for name in loops:
                    rate = loop.run(raw_commits(raw_db, raw_rows, 1), name)
                    sequential[name] = max(sequential[name], rate)
                    rate = loop.run(raw_commits(raw_db, raw_rows, reviewers), name)
                    concurrent[name] = max(concurrent[name], rate)
            with fresh_database(url) as inproc_db:
                opener = partial(PostgresStore.open, inproc_db)
                rate = loop.run(in_process_reviews(opener, reviewers, case_count), event_loop)
                inproc = max(inproc, rate)
            rate, noop = replicas_rate(url, 1, reviewers, case_count, event_loop)
            one, one_noop = max(one, rate), max(one_noop, noop)
            rate, noop = replicas_rate(url, 2, reviewers, case_count, event_loop)
            two, two_noop = max(two, rate), max(two_noop, noop)
    where = "a throwaway server (initdb here)" if db == TEMP else masked(db)
    raw_seq, raw_conc = max(sequential.values()), max(concurrent.values())
    print(f"durable writes on PostgreSQL ({where}; same server, same run, best of {repeats})")
    print(f"  server: {settings}")
    for name in loops:
        print(f"  raw asyncpg INSERT, one row per transaction, sequential, {name:7} loop  : "
              f"{sequential[name]:8,.0f} rows/s")  # fmt: skip
    for name in loops:
        print(f"  raw asyncpg INSERT, one row per transaction, {reviewers} connections, {name:7}: "
              f"{concurrent[name]:8,.0f} rows/s")  # fmt: skip
    print(f"  server event loop: {loop.resolve_loop(event_loop)}; {reviewers} concurrent clients,"
          f" {case_count * 2:,} reviews per run")  # fmt: skip
    print(f"  SubmitReview use case in-process (no gRPC), {reviewers} tasks: {inproc:8,.0f}"
          f" reviews/s = {inproc / raw_seq:.2f}x sequential raw")  # fmt: skip
    for label, rate in (("one replica", one), ("two replicas, combined", two)):
        print(f"  SubmitReview via {label:23}: {rate:8,.0f} reviews/s = "
              f"{rate / raw_seq:.2f}x sequential raw,"
              f" {rate / raw_conc:.2f}x concurrent raw")  # fmt: skip
    print(f"  no-op RPC (health Check), same load: one replica {one_noop:,.0f} calls/s,"
          f" two {two_noop:,.0f}; SubmitReview reaches {one / one_noop:.2f}x and"
          f" {two / two_noop:.2f}x of it")  # fmt: skip
    verdict = "met" if one >= 0.8 * raw_seq else "NOT met"
    print(f"  target: one replica >= 0.8x the sequential raw rate -- {verdict}"
          f" ({one / raw_seq:.2f}x); two replicas reach {two / one:.2f}x one replica")  # fmt: skip
