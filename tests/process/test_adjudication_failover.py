"""The PostgreSQL primary lost under writes through two adjudication replicas, the standby promoted.

A primary with a synchronous streaming standby (``tests.support.postgres_standby``), and
two ``assay serve adjudication`` replicas given the multi-host URL (both servers,
``target_session_attrs=read-write``). The load, the probe and the checks are the restart
test's (``test_adjudication_db_restart``); the disruption is a failover: the primary's
processes are all SIGKILLed, then the standby is promoted with ``pg_ctl promote``.

Then: no call got INTERNAL; every refused call got UNAVAILABLE with reason
STORAGE_UNAVAILABLE and a RetryInfo delay; every library call succeeded; every acknowledged
write (COMMIT returned only once the standby had it) reads back on both replicas from the
promoted server; the chain verifies on both and extends the checkpoint taken before; the
same two processes served writes again, without a restart; neither logged a traceback.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

import asyncpg
import pytest

from tests.process.test_adjudication_db_restart import (
    STORAGE_UNAVAILABLE,
    log_problems,
    read_back,
    start_replicas,
    storage_refusals_logged,
    workload,
)
from tests.support.eventually import eventually
from tests.support.postgres_standby import StandbyPair, running_pair
from tests.support.processes import AssayProcess

pytestmark = [pytest.mark.process, pytest.mark.timeout(90)]


def fail_over(pair: StandbyPair, replicas: list[AssayProcess], took: dict[str, float]) -> None:
    """Kill the primary; once each replica has refused a call for it (as a monitor would
    notice the primary gone before promoting), promote the standby; ``took`` gets the
    promotion's seconds."""
    before = [storage_refusals_logged(replica) for replica in replicas]
    pair.kill_primary()
    eventually(
        lambda: all(
            storage_refusals_logged(replica) > count
            for replica, count in zip(replicas, before, strict=True)
        ),
        message="each replica refused a call after the primary was killed",
        interval=0.02,
    )
    started = time.monotonic()
    pair.promote()
    took["promote"] = time.monotonic() - started


def refusal_span(replicas: list[AssayProcess]) -> float:
    """Seconds from the first to the last call the replicas logged as refused for storage."""
    stamps = sorted(
        datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))
        for replica in replicas
        for line in replica.log_lines()
        if line.get("code") == "UNAVAILABLE" and line.get("reason") == STORAGE_UNAVAILABLE
    )
    return (stamps[-1] - stamps[0]).total_seconds() if stamps else 0.0


async def in_recovery(dsn: str) -> bool:
    connection = await asyncpg.connect(dsn)
    try:
        return bool(await connection.fetchval("SELECT pg_is_in_recovery()"))
    finally:
        await connection.close()


class TestPrimaryFailover:
    def test_a_failover_is_unavailable_with_retry_info_and_loses_no_acknowledged_write(
        self, tmp_path: Path
    ) -> None:
        """Primary SIGKILLed mid-load, standby promoted: refusals are UNAVAILABLE with
        RetryInfo, never INTERNAL; every acknowledged write is on the promoted server, read
        through both replicas, whose tree extends the checkpoint before; no restart."""
        with running_pair() as pair, ExitStack() as processes:
            database = asyncio.run(pair.primary.create_database())
            asyncio.run(pair.make_synchronous())
            target, replicas = start_replicas(processes, tmp_path, pair.dsn(database))
            pids = [replica.process.pid for replica in replicas]
            promotion: dict[str, float] = {}
            run, took = asyncio.run(workload(target, lambda: fail_over(pair, replicas, promotion)))

            refused = sorted(run.refused_seconds) or [0.0]
            print(
                f"\nfailover: kill to promoted {took:.2f}s (promote {promotion['promote']:.2f}s);"
                f" probe codes {dict(run.probe_codes)}; refused probe writes waited"
                f" {refused[0]:.2f}-{refused[-1]:.2f}s; replicas refused calls for"
                f" {refusal_span(replicas):.2f}s"
            )
            assert run.library_failures == []
            assert run.done, "the probe was not acknowledged after the failover in time"
            assert set(run.probe_codes) <= {"OK", "UNAVAILABLE"}, run.probe_codes
            assert "INTERNAL" not in run.probe_codes
            assert run.refusals, f"no call was refused during a {took:.2f}s failover"
            assert {reason for reason, _ in run.refusals} == {STORAGE_UNAVAILABLE}
            assert all(delay is not None and delay > 0 for _, delay in run.refusals)
            assert sum(storage_refusals_logged(replica) for replica in replicas) > 0

            # The writes after it went to the promoted standby, now a primary.
            assert not asyncio.run(in_recovery(pair.standby.dsn(database)))
            for replica in replicas:
                assert asyncio.run(read_back(replica.target, run)) == []
                assert log_problems(replica) == []
            assert [r.process.pid for r in replicas if r.process.poll() is None] == pids
