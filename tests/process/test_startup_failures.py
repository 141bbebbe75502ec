"""A start that fails ends cleanly: one line naming the port, a non-zero exit, nothing left
running, within seconds (it used to hang, ignoring SIGTERM, once adjudication's database
was open); and whatever a failed start opened is closed again.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from assay.runtime.config import ServerConfig
from assay.runtime.server import ServiceSpec, start
from assay.tlog.checkpoint import load_or_create_signing_key
from assay.v1 import resolver_service_pb2 as rs
from tests.support.processes import assay_command, assay_process, free_port

# Generous for a loaded CI machine; a hang is what this bounds.
EXIT_WITHIN_SECONDS = 20.0
SERVICE = rs.DESCRIPTOR.services_by_name["ResolverService"]


@contextmanager
def listening() -> Iterator[int]:
    """A port something else listens on for the block."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def run_assay(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[str], float]:
    """Run ``assay ARGS`` to its end: exit code, stderr lines, seconds taken."""
    started = time.monotonic()
    done = subprocess.run(
        assay_command(*args),
        capture_output=True,
        text=True,
        timeout=EXIT_WITHIN_SECONDS,
        env={**os.environ, **(env or {})},
        check=False,
    )
    return done.returncode, done.stderr.strip().splitlines(), time.monotonic() - started


def refused(port: int) -> bool:
    """Whether nothing listens on ``port`` (a connection is refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


class TestBusyPort:
    def test_serve_adjudication_on_a_taken_port_is_one_line(self, tmp_path: Path) -> None:
        """`assay serve adjudication` on a taken port: exit 1 with one line naming the port."""
        with listening() as port:
            code, lines, _ = run_assay(
                "serve", "adjudication", "--port", str(port), "--db", str(tmp_path / "a.db")
            )
        assert code == 1
        assert lines == [
            f"assay: could not bind 127.0.0.1:{port} for adjudication: the port is in use"
        ]
        assert not (tmp_path / "a.db").exists()  # checked before anything was opened

    def test_up_with_one_taken_port_starts_nothing(self, tmp_path: Path) -> None:
        """`assay up` with adjudication's port taken: one line, and no other service listening."""
        resolver, planner = free_port(), free_port()
        with listening() as port:
            env = {
                "ASSAY_RESOLVER_PORT": str(resolver),
                "ASSAY_PLANNER_PORT": str(planner),
                "ASSAY_ADJUDICATION_PORT": str(port),
            }
            code, lines, _ = run_assay("up", "--db", str(tmp_path / "a.db"), env=env)
        assert code == 1
        assert lines == [
            f"assay: could not bind 127.0.0.1:{port} for adjudication: the port is in use"
        ]
        assert refused(resolver)
        assert refused(planner)

    def test_the_readme_case_a_running_server_on_the_port(self, tmp_path: Path) -> None:
        """A real `assay` server holds the port (as `assay up` would): the second start fails
        in one line, and the first one keeps serving."""
        port = free_port()
        with assay_process(["serve", "resolver", "--port", str(port)], tmp_path / "log", port):
            code, lines, elapsed = run_assay(
                "serve", "adjudication", "--port", str(port), "--db", str(tmp_path / "a.db")
            )
            assert not refused(port)
        assert code == 1
        assert len(lines) == 1, lines
        assert f"127.0.0.1:{port}" in lines[0]
        assert elapsed < EXIT_WITHIN_SECONDS


class TestLedgerKeyOthersMayRead:
    @pytest.mark.parametrize("flag", [True, False], ids=["--ledger-signing-key", "beside-the-db"])
    def test_serve_refuses_a_0644_ledger_key_in_one_line(self, tmp_path: Path, flag: bool) -> None:
        """A ledger signing key group or others may read stops the start before the database
        is opened: exit 1, one line naming the file, its mode and `chmod 600`."""
        db = tmp_path / "a.db"
        key = tmp_path / "ledger-key.pem" if flag else tmp_path / "a.db.ledger-key.pem"
        load_or_create_signing_key(key)
        key.chmod(0o644)
        args = ["serve", "adjudication", "--port", str(free_port()), "--db", str(db)]
        code, lines, _ = run_assay(*args, *(["--ledger-signing-key", str(key)] if flag else []))
        assert code == 1
        assert lines[-1] == (
            f"assay: cannot start adjudication: ledger signing key {key}: permissions 0644 are "
            "too open: a private key must not be readable or writable by group or others; "
            f"run chmod 600 {key}"
        )
        assert not [line for line in lines[:-1] if "ledger" in line or "Traceback" in line]
        assert not db.exists()
        assert oct(key.stat().st_mode & 0o777) == oct(0o644)  # reported, never changed


class TestFailedStartClosesWhatItOpened:
    async def test_a_bind_failure_closes_every_spec(self) -> None:
        """The second of three services cannot bind: the first is stopped and closed, and the
        two never started are closed too (an open database would keep the process alive)."""
        closed: list[str] = []

        def spec(name: str, port: int) -> ServiceSpec:
            async def close() -> None:
                closed.append(name)

            return ServiceSpec(name, SERVICE, _Servicer(), port=port, close=close)

        with listening() as taken:
            specs = [spec("first", 0), spec("second", taken), spec("third", 0)]
            with pytest.raises(OSError, match=f"could not bind 127.0.0.1:{taken} for second"):
                await start(specs, ServerConfig(grace_seconds=0))
        assert sorted(closed) == ["first", "second", "third"]


class _Servicer:
    """Never called: the servers in these tests do not get that far."""

    def __getattr__(self, name: str) -> Any:
        async def method(request: Any, context: Any) -> Any:
            raise AssertionError(name)

        return method
