"""Start real ``assay`` processes for the process and external-tool tiers.

Each process gets a free loopback port, its stderr (the JSON log) goes to a
file the test can read, and it is always stopped: SIGTERM, then SIGKILL if it
outlives its bound.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.eventually import eventually

STARTUP_TIMEOUT_SECONDS = 20.0


def free_port() -> int:
    """A loopback port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def assay_command(*args: str) -> list[str]:
    """The ``assay`` command line, run through this interpreter so the venv is used."""
    return [sys.executable, "-m", "assay.cli.main", *args]


class TargetCli:
    """``assay`` client commands against one ``--target``: each must exit 0 unless told
    otherwise (``ok=False``); ``json`` reads a command's ``--json`` output."""

    def __init__(self, target: str) -> None:
        self.target = target

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*assay_command(*args), "--target", self.target],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed ``assay`` client command prints (exit 1, ``assay: …``, no
    traceback); fails the test otherwise."""
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("assay: "), done.stderr
    return lines[0]


def wait_serving(
    target: str,
    timeout: float = STARTUP_TIMEOUT_SECONDS,
    process: subprocess.Popen[bytes] | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> None:
    """Block until the server at ``target`` reports SERVING, or fail after ``timeout``
    (or as soon as ``process`` exits). With ``credentials`` the check connects over TLS with
    them (health needs no token); without, in plaintext."""
    over = " over TLS" if credentials is not None else ""
    channel = (
        grpc.insecure_channel(target)
        if credentials is None
        else grpc.secure_channel(target, credentials)
    )
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)

        def serving() -> bool:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"server for {target} exited with {process.returncode}")
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

        eventually(
            serving,
            message=f"{target} to report SERVING{over}",
            timeout=timeout,
            interval=0.1,
            ignoring=(grpc.RpcError,),
        )


@dataclass
class AssayProcess:
    """A running ``assay`` subprocess and where to reach it."""

    process: subprocess.Popen[bytes]
    target: str
    log_path: Path

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON log lines written so far (non-JSON lines are skipped)."""
        lines = []
        for raw in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                continue
        return lines

    def log_line(self, **fields: object) -> dict[str, Any] | None:
        """The first JSON log line carrying every one of ``fields``, or None (yet): a
        condition for ``eventually``."""
        for line in self.log_lines():
            if all(line.get(name) == value for name, value in fields.items()):
                return line
        return None

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit code (SIGKILL if it will not stop)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
                raise
        return self.process.returncode


@contextmanager
def assay_process(
    args: Sequence[str],
    log_path: Path,
    port: int,
    env: Mapping[str, str] | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> Iterator[AssayProcess]:
    """Run ``assay ARGS`` (which must listen on ``port``) until the block ends; a TLS server
    is checked for readiness with ``credentials``."""
    full_env = {**os.environ, **(env or {})}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            assay_command(*args), stdout=subprocess.DEVNULL, stderr=log, env=full_env
        )
    running = AssayProcess(process, f"127.0.0.1:{port}", log_path)
    try:
        wait_serving(running.target, process=process, credentials=credentials)
        yield running
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@contextmanager
def service_process(
    args: Sequence[str],
    log_path: Path,
    port: int,
    env: Mapping[str, str] | None = None,
    credentials: grpc.ChannelCredentials | None = None,
) -> Iterator[AssayProcess]:
    """``assay_process`` for a server the test relies on: a start that fails names the
    command and shows its log, and the block's end stops it with SIGTERM first (the database
    closes cleanly, the log is complete); ``assay_process`` kills whatever outlives that."""
    with ExitStack() as stack:
        try:
            running = stack.enter_context(assay_process(args, log_path, port, env, credentials))
        except (RuntimeError, AssertionError) as error:
            text = log_path.read_text(encoding="utf-8", errors="replace")
            raise RuntimeError(
                f"`assay {' '.join(args)}` did not start: {error}\n{text[-4000:]}"
            ) from None
        try:
            yield running
        finally:
            with suppress(subprocess.TimeoutExpired):
                running.terminate()
