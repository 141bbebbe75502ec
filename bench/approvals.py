"""How soon a waiting executor hears a decision: DecideApproval to the WatchApproval reader.

Not a test: a script (``python bench/approvals.py``) that prints, per storage engine, the
time from sending an approver's ``DecideApproval`` to the requester's open
``WatchApproval`` stream delivering the GRANTED approval, over ``--rounds`` fresh
approvals, as p50 / p95 / max, next to the ``DecideApproval`` call alone (the wake cannot
come before the decision commits, so the call is its floor).

The servers are real ``assay serve adjudication --credentials DIR`` processes (TLS,
ES256 tokens: approvals need authentication) on loopback; the requester (``operator``) and
the approver (``dave``) are clients in this process, each with its own token. Each round:
ask, open the watch and read its first (PENDING) message, so the server side is waiting;
then decide and time until the watch yields GRANTED. Engines: a SQLite file; and with
``--db postgres-temp`` (a throwaway server, fsync on, as ``bench/adjudication.py`` starts
one) or ``--db postgresql://...`` (the role needs CREATEDB) also PostgreSQL, with one
replica and with two on one database, the watch on the replica the decision does not go
to (woken through the database's notifications). Figures, never a verdict; the target
named in docs/performance.md is a p95 under 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import grpc
from adjudication_postgres import TEMP, fresh_database, server_url
from harness import free_port

from assay.candidate_digest import candidate_digest
from assay.client.approvals import AsyncApprovalClient
from assay.client.credentials import Credentials
from assay.client.errors import AssayCallError
from assay.runtime.auth.dev_credentials import write_dev_credentials
from assay.v1 import approval_service_pb2 as pb
from assay.v1 import plan_pb2

SUBJECT, PREDICATE, TENANT = "payments-api", "idempotency.mode", "acme"
TARGET_P95_SECONDS = 1.0
START_SECONDS = 30.0


def candidate() -> plan_pb2.AcquisitionCandidate:
    """A REQUIRES_APPROVAL candidate as the planner writes it (quorum 1 by default)."""
    effects = (plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL,)
    message = plan_pb2.AcquisitionCandidate(
        candidate_id="query_ci_status/process_result",
        probe=plan_pb2.PROBE_KIND_QUERY_CI_STATUS,
        target_signal_class=plan_pb2.SIGNAL_CLASS_PROCESS_RESULT,
        availability=plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
        required_side_effects=effects,
        missing_grants=effects,
        blocking_reasons=(plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED,),
    )
    message.candidate_digest = candidate_digest(SUBJECT, PREDICATE, message)
    return message


class Server:
    """``assay serve adjudication`` with TLS and tokens, in its own process."""

    def __init__(self, creds: Path, db: str, extra: Sequence[str] = ()) -> None:
        self.target = f"127.0.0.1:{free_port()}"
        command = [sys.executable, "-m", "assay.cli.main", "serve", "adjudication"]
        command += ["--port", self.target.rsplit(":", 1)[1], "--log-level", "warning"]
        command += ["--credentials", str(creds), *extra]
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 -- closed in stop()
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=self.log, env={**os.environ, "ASSAY_DB": db}
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()


async def wait_ready(creds: Path, target: str) -> None:
    """Until the server at ``target`` answers an approval read (NOT_FOUND: a made-up id)."""
    deadline = time.monotonic() + START_SECONDS
    async with AsyncApprovalClient(
        target, timeout=5, credentials=Credentials.from_folder(creds, "operator")
    ) as client:
        while True:
            try:
                await client.get("approval_0000000000000000", timeout=1)
            except AssayCallError as error:
                if error.code is grpc.StatusCode.NOT_FOUND:
                    return
                if time.monotonic() > deadline:
                    raise SystemExit(f"the server at {target} did not start: {error}") from None
                await asyncio.sleep(0.1)  # a starting process: nothing to wait on but time


@contextmanager
def servers(creds: Path, db: str, replicas: int, key: Path | None) -> Iterator[list[Server]]:
    started: list[Server] = []
    extra = ("--ledger-signing-key", str(key)) if key is not None else ()
    try:
        for _ in range(replicas):
            started.append(Server(creds, db, extra))
        yield started
    finally:
        for server in started:
            server.stop()


async def one_round(
    asker: AsyncApprovalClient, watcher: AsyncApprovalClient, approver: AsyncApprovalClient
) -> tuple[float, float]:
    """(decide sent -> GRANTED read from the watch, the DecideApproval call alone), seconds."""
    asked = await asker.ask(TENANT, SUBJECT, PREDICATE, candidate(), "bench: wake latency")
    # An async generator (closed below, which cancels the call), typed as an iterator.
    stream = cast(AsyncGenerator[pb.Approval, None], watcher.watch(asked.approval_id, timeout=60))
    first = await anext(stream)
    assert first.state == pb.APPROVAL_STATE_PENDING, first.state
    woke = 0.0

    async def read() -> pb.Approval:
        nonlocal woke
        seen = await anext(stream)
        woke = time.perf_counter()
        return seen

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # the reader is awaiting the stream before the decision goes out
    sent = time.perf_counter()
    await approver.decide(asked.approval_id, True, "bench")
    replied = time.perf_counter()
    granted = await reader
    await stream.aclose()
    assert granted.state == pb.APPROVAL_STATE_GRANTED, granted.state
    return woke - sent, replied - sent


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure(creds: Path, targets: list[str], rounds: int, warmup: int) -> None:
    """Rounds against ``targets``: ask and decide on the first, watch on the last."""
    for target in dict.fromkeys(targets):
        await wait_ready(creds, target)

    def client(target: str, name: str) -> AsyncApprovalClient:
        return AsyncApprovalClient(
            target, timeout=30, credentials=Credentials.from_folder(creds, name)
        )

    async with (
        client(targets[0], "operator") as asker,
        client(targets[-1], "operator") as watcher,
        client(targets[0], "dave") as approver,
    ):
        for _ in range(warmup):
            await one_round(asker, watcher, approver)
        wakes, calls = [], []
        for _ in range(rounds):
            wake, call = await one_round(asker, watcher, approver)
            wakes.append(wake)
            calls.append(call)
    p50, p95 = statistics.median(wakes), percentile(wakes, 0.95)
    print(
        f"    decide -> watch wakes: p50 {p50 * 1e3:7.2f} ms  p95 {p95 * 1e3:7.2f} ms  "
        f"max {max(wakes) * 1e3:7.2f} ms  ({rounds} rounds)"
    )
    print(
        f"    DecideApproval alone:  p50 {statistics.median(calls) * 1e3:7.2f} ms  "
        f"p95 {percentile(calls, 0.95) * 1e3:7.2f} ms"
    )
    print(
        f"    p95 / {TARGET_P95_SECONDS:g} s target: {p95 / TARGET_P95_SECONDS:.4f}; "
        f"wake p50 / call p50: {p50 / statistics.median(calls):.2f}x"
    )


def sqlite_section(creds: Path, scratch: Path, rounds: int, warmup: int) -> None:
    print("SQLite file, one replica:")
    with servers(creds, str(scratch / "approvals.db"), 1, None) as started:
        asyncio.run(measure(creds, [started[0].target], rounds, warmup))


def postgres_section(db: str, creds: Path, scratch: Path, rounds: int, warmup: int) -> None:
    with server_url(db) as url:
        for replicas in (1, 2):
            where = "the watch on the other replica" if replicas == 2 else "one replica"
            print(f"PostgreSQL, {where}:")
            key = scratch / f"ledger-key-{replicas}.pem"
            # The first replica writes the signing key; start the second once it is up.
            with fresh_database(url) as fresh, servers(creds, fresh, 1, key) as first:
                asyncio.run(wait_ready(creds, first[0].target))
                with servers(creds, fresh, replicas - 1, key) as rest:
                    targets = [first[0].target] + [s.target for s in rest]
                    asyncio.run(measure(creds, targets, rounds, warmup))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="timed approvals per engine")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--db",
        metavar="URL",
        help=f"also PostgreSQL: a postgresql:// URL (the role needs CREATEDB) or '{TEMP}'",
    )
    args = parser.parse_args()
    if args.db and args.db != TEMP and not args.db.startswith(("postgresql://", "postgres://")):
        parser.error(f"--db takes a postgresql:// URL or '{TEMP}'")
    with tempfile.TemporaryDirectory(prefix="assay-bench-approvals-") as tmp:
        scratch = Path(tmp)
        creds = write_dev_credentials(scratch / "creds").root
        sqlite_section(creds, scratch, args.rounds, args.warmup)
        if args.db:
            postgres_section(args.db, creds, scratch, args.rounds, args.warmup)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
