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
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

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


def wait_serving(
    target: str,
    timeout: float = STARTUP_TIMEOUT_SECONDS,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Block until the server at ``target`` reports SERVING, or fail after ``timeout``
    (or as soon as ``process`` exits)."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"server for {target} exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target} did not become SERVING within {timeout}s")
            time.sleep(0.1)


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
    args: Sequence[str], log_path: Path, port: int, env: dict[str, str] | None = None
) -> Iterator[AssayProcess]:
    """Run ``assay ARGS`` (which must listen on ``port``) until the block ends."""
    full_env = {**os.environ, **(env or {})}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            assay_command(*args), stdout=subprocess.DEVNULL, stderr=log, env=full_env
        )
    running = AssayProcess(process, f"127.0.0.1:{port}", log_path)
    try:
        wait_serving(running.target, process=process)
        yield running
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
