"""A PostgreSQL primary with a synchronous streaming standby, for failover tests.

Built as a production pair is, from the server's own tools on loopback ports: the
primary by ``initdb`` and ``pg_ctl`` (``tests.support.postgres``), the standby by
``pg_basebackup -R`` (a copy of the primary that streams its WAL), and then the primary
made to wait for it: ``synchronous_standby_names = '*'`` with ``synchronous_commit =
on``, so a COMMIT returns only once the standby has the transaction's WAL. Set on the
primary alone (``ALTER SYSTEM`` after the copy), so a promoted standby does not wait for
a standby of its own.

``kill_primary`` is a lost machine: SIGKILL to the primary's postmaster and every one of
its processes, no shutdown. ``promote`` is ``pg_ctl promote``. ``dsn`` is the multi-host
URL the service is given: both servers, ``target_session_attrs=read-write``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from tests.support.eventually import eventually_async
from tests.support.postgres import (
    START_TIMEOUT_SECONDS,
    SUPERUSER,
    PostgresServer,
    _run_as,
    binaries,
    unavailable,
)
from tests.support.processes import free_port

SYNC_TIMEOUT_SECONDS = 30.0


@dataclass
class StandbyPair:
    """A running primary and its synchronous standby (module docstring)."""

    primary: PostgresServer
    standby: PostgresServer

    def dsn(self, database: str) -> str:
        """The multi-host URL: the primary first, then the standby; the read-write one wins."""
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return (
            f"postgresql://{SUPERUSER}:{self.primary.password}@{hosts}/{database}"
            "?target_session_attrs=read-write"
        )

    def start_standby(self) -> None:
        """Copy the primary (``pg_basebackup -R``: it writes the standby's connection to the
        primary) and start the copy as a standby."""
        source = (
            f"host=127.0.0.1 port={self.primary.port} user={SUPERUSER} "
            f"password={self.primary.password}"
        )
        data = str(self.standby.data_dir)
        self.primary._run("pg_basebackup", "-D", data, "-d", source, "-R", "-X", "stream")
        options = (
            f"-p {self.standby.port} -c listen_addresses=127.0.0.1 "
            "-c unix_socket_directories='' -c max_connections=200 "
            "-c fsync=off -c full_page_writes=off"
            # Retry the lost primary's WAL often, so a promotion is not held by the wait.
            " -c wal_retrieve_retry_interval=100ms"
        )
        self.standby.pg_ctl_start(options)

    async def make_synchronous(self) -> None:
        """Make the primary's commits wait for the standby, and wait until it is the primary's
        synchronous standby."""
        admin = await asyncpg.connect(self.primary.dsn())
        try:
            await admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            await admin.execute("ALTER SYSTEM SET synchronous_commit = 'on'")
            await admin.execute("SELECT pg_reload_conf()")

            async def streaming_in_sync() -> bool:
                states = await admin.fetch("SELECT sync_state, state FROM pg_stat_replication")
                return [(r["sync_state"], r["state"]) for r in states] == [("sync", "streaming")]

            await eventually_async(
                streaming_in_sync,
                message="the standby streams as the primary's synchronous standby",
                timeout=SYNC_TIMEOUT_SECONDS,
            )
        finally:
            await admin.close()

    def kill_primary(self) -> None:
        """SIGKILL the primary's postmaster and all its processes at once."""
        pid_file = self.primary.data_dir / "postmaster.pid"
        postmaster = int(pid_file.read_text().split()[0])
        doomed = [postmaster, *_children(postmaster)]
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def promote(self) -> None:
        """``pg_ctl promote -w``: returns once the standby accepts writes."""
        self.standby._run(
            "pg_ctl",
            "-D",
            str(self.standby.data_dir),
            "-w",
            "-t",
            str(START_TIMEOUT_SECONDS),
            "promote",
        )


def _children(parent: int) -> list[int]:
    """The pids whose parent is ``parent`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after its ')'.
        if int(stat.rpartition(")")[2].split()[1]) == parent:
            found.append(int(entry.name))
    return found


def _stop(server: PostgresServer) -> None:
    """Stop ``server`` if it still runs (a killed primary does not)."""
    if (server.data_dir / "postmaster.pid").exists():
        with contextlib.suppress(RuntimeError):
            server.stop()


@contextmanager
def running_pair() -> Iterator[StandbyPair]:
    """A primary and its synchronous standby, both stopped and deleted on exit (skips, or
    fails in CI, when there is no server: ``tests.support.postgres``)."""
    bin_dir = binaries()
    if bin_dir is None:
        unavailable("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
        raise AssertionError("unreachable")
    run_as = _run_as()
    home = Path(tempfile.mkdtemp(prefix="assay-pg-pair-"))
    password = secrets.token_urlsafe(24)
    pair = StandbyPair(
        PostgresServer(bin_dir, home / "primary", free_port(), password, run_as),
        PostgresServer(bin_dir, home / "standby", free_port(), password, run_as),
    )
    try:
        pair.primary._own(home)
        pair.primary.start()
        try:
            pair.start_standby()
            yield pair
        finally:
            _stop(pair.standby)
            _stop(pair.primary)
    finally:
        shutil.rmtree(home, ignore_errors=True)
