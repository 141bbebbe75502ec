"""A real PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` on a private directory.

One server per test session, on a free loopback port, with a random password
(scram) and no Unix socket; every test that asks gets a fresh database of its
own (``CREATE DATABASE``, dropped after the test). The data directory is
owner-only and removed when the server stops.

PostgreSQL refuses to run as root, so under uid 0 the server is run as the
``postgres`` system user (Debian's package creates it) and its directory is
given to that user. The binaries are looked up on ``PATH``, then in Debian's
``/usr/lib/postgresql/<version>/bin``. Where there are none the tier is
skipped with a reason naming what is missing — except in CI (``CI=true``),
where a missing server fails the tests instead, so the PostgreSQL tier is
never silently left out.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from tests.support.processes import free_port

SUPERUSER = "assay"
START_TIMEOUT_SECONDS = 30
ROOT_RUNS_AS = "postgres"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    on_path = shutil.which("pg_ctl")
    if on_path is not None and shutil.which("initdb") is not None:
        return Path(on_path).resolve().parent
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return debian[-1].parent if debian else None


def unavailable(reason: str) -> None:
    """Skip (outside CI) or fail (in CI) the test that needs the server."""
    message = f"PostgreSQL tier NOT RUN: {reason}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: a missing server fails; .ci/run installs it)")
    pytest.skip(message)


@dataclass
class PostgresServer:
    """A running server: connect as ``SUPERUSER`` with ``password`` on 127.0.0.1:``port``."""

    bin_dir: Path
    data_dir: Path
    port: int
    password: str
    run_as: str | None
    # False for the tests (faster); the benchmarks want a commit's real cost.
    durable: bool = False

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def _command(self, tool: str, *args: str) -> list[str]:
        command = [str(self.bin_dir / tool), *args]
        if self.run_as is None:
            return command
        return ["runuser", "-u", self.run_as, "--", *command]

    def _run(self, tool: str, *args: str) -> None:
        found = subprocess.run(
            self._command(tool, *args),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_SECONDS + 10,
            check=False,
            cwd=self.data_dir.parent,
        )
        if found.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({found.returncode}): {found.stderr or found.stdout}"
            )

    def start(self) -> None:
        pwfile = self.data_dir.parent / "pw"
        pwfile.write_text(self.password)
        pwfile.chmod(0o600)
        self._own(pwfile)
        self._run(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()
        settings = [
            f"-p {self.port}",
            "-c listen_addresses=127.0.0.1",
            "-c unix_socket_directories=''",
            "-c max_connections=200",
        ]
        if not self.durable:
            # No test needs a commit to survive a power cut: only its ordering and visibility.
            settings += ["-c fsync=off", "-c full_page_writes=off"]
        self.pg_ctl_start(" ".join(settings))

    def pg_ctl_start(self, options: str) -> None:
        """``pg_ctl start`` on this data directory with ``options``, logging beside it and
        waiting (bounded) until the server accepts connections."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.data_dir / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            str(START_TIMEOUT_SECONDS),
            "start",
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def restart(self, mode: str) -> None:
        """``pg_ctl restart -m MODE`` (fast: sessions terminated, a checkpoint; immediate: no
        checkpoint, crash recovery at start), with the options it started with (pg_ctl keeps
        them) and the same log file; returns once the server accepts connections again."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.data_dir / "server.log"),
            "-m",
            mode,
            "-w",
            "-t",
            str(START_TIMEOUT_SECONDS),
            "restart",
        )

    def _own(self, path: Path) -> None:
        if self.run_as is not None:
            user = pwd.getpwnam(self.run_as)
            os.chown(path, user.pw_uid, user.pw_gid)

    async def create_database(self, template: str = "template0") -> str:
        name = f"test_{secrets.token_hex(6)}"
        admin = await asyncpg.connect(self.dsn())
        try:
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE {template}')
        finally:
            await admin.close()
        return name

    async def drop_database(self, name: str) -> None:
        admin = await asyncpg.connect(self.dsn())
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def _run_as() -> str | None:
    """None, or the user to run the server as when this process is root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(ROOT_RUNS_AS)
    except KeyError:
        unavailable(
            f"running as root and there is no '{ROOT_RUNS_AS}' user to run the server as "
            "(PostgreSQL refuses root)"
        )
    if shutil.which("runuser") is None:
        unavailable("running as root and `runuser` is missing (PostgreSQL refuses root)")
    return ROOT_RUNS_AS


@contextmanager
def running_server(durable: bool = False) -> Iterator[PostgresServer]:
    """A started server, stopped and deleted on exit (skips or fails when there is none).
    ``durable``: commits are fsynced, as in production (for benchmarks)."""
    bin_dir = binaries()
    if bin_dir is None:
        unavailable("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
        raise AssertionError("unreachable")
    run_as = _run_as()
    # Not under pytest's tmp_path: its parents are root-only, and the server's user must
    # reach its directory. mkdtemp makes it 0700.
    home = Path(tempfile.mkdtemp(prefix="assay-pg-"))
    server = PostgresServer(
        bin_dir, home / "data", free_port(), secrets.token_urlsafe(24), run_as, durable
    )
    try:
        server._own(home)
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole session."""
    with running_server() as server:
        yield server


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the session's server, dropped after the test."""
    name = asyncio.run(postgres_server.create_database())
    try:
        yield postgres_server.dsn(name)
    finally:
        asyncio.run(postgres_server.drop_database(name))
