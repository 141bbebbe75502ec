"""The three services as ``assay serve`` processes on 127.0.0.1, from a chosen source tree.

A ``Fleet`` is one resolver, one planner calling that resolver, and one adjudication server
on a SQLite file in a temporary folder, all run by this interpreter; ``source`` names a
``src`` folder to import ``assay`` from instead of the installed one (``PYTHONPATH``), so
two revisions can be measured side by side with the same dependencies. Each process's CPU
time and resident memory are read from /proc (Linux).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVICES = ("resolver", "planner", "adjudication")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Fleet:
    """One source tree's three servers: targets and processes by service name."""

    label: str
    source: str
    folder: tempfile.TemporaryDirectory[str]
    targets: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def cpu_seconds(self, *services: str) -> float:
        """User + system CPU time so far of the named servers (every one without names)."""
        return sum(cpu_of(self.processes[s].pid) for s in services or SERVICES)


def cpu_of(pid: int | str) -> float:
    """User + system CPU seconds of a process so far, all its threads (``"self"``: this one)."""
    with open(f"/proc/{pid}/stat") as stat:
        text = stat.read()
    fields = text[text.rindex(")") + 2 :].split()  # from field 3 (state) on
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def busy_seconds() -> float:
    """CPU seconds every core spent on anything but idle and I/O wait since boot."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / _CLOCK_TICKS


def rss_mib(process: subprocess.Popen[bytes]) -> float:
    with open(f"/proc/{process.pid}/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE / (1 << 20)


def which_assay(source: str | None) -> str:
    """The file ``import assay`` finds with ``source`` first on the path (a sanity check)."""
    command = [sys.executable, "-c", "import assay; print(assay.__file__)"]
    found = subprocess.run(command, env=_env(source), capture_output=True, text=True, check=True)
    return found.stdout.strip()


def _env(source: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    if source is not None:
        env["PYTHONPATH"] = source
    else:
        env.pop("PYTHONPATH", None)
    return env


def _wait_serving(target: str, process: subprocess.Popen[bytes], name: str) -> None:
    deadline = time.monotonic() + 60
    with grpc.insecure_channel(target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start serving on {target}")
            time.sleep(0.1)


def start_fleet(
    label: str,
    source: str | None,
    log_level: str,
    free_port: Callable[[], int],
    flags: Sequence[str] = (),
) -> Fleet:
    """Start resolver, planner and adjudication from ``source`` and wait until each serves;
    ``flags`` go to every ``assay serve``, a ``{port}`` in one replaced by a free port."""
    found = which_assay(source)
    print(f"{label}: assay imported from {found}")
    fleet = Fleet(label, os.path.dirname(os.path.dirname(found)), tempfile.TemporaryDirectory())
    env = _env(source)
    extra = {
        "planner": lambda: ["--resolver", fleet.targets["resolver"]],
        "adjudication": lambda: ["--db", os.path.join(fleet.folder.name, "assay.db")],
    }
    try:
        for name in SERVICES:
            port = free_port()
            command = [sys.executable, "-m", "assay.cli.main", "serve", name]
            command += ["--port", str(port), "--log-level", log_level]
            command += extra.get(name, list)()
            command += [flag.replace("{port}", str(free_port())) for flag in flags]
            fleet.targets[name] = f"127.0.0.1:{port}"
            fleet.processes[name] = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,  # the per-call log lines, written as deployed
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=fleet.folder.name,
            )
            _wait_serving(fleet.targets[name], fleet.processes[name], name)
    except BaseException:
        stop_fleet(fleet)
        raise
    time.sleep(1.0)  # settle (the planner's first dependency probe, lazy imports)
    return fleet


def stop_fleet(fleet: Fleet) -> None:
    for process in reversed(fleet.processes.values()):
        if process.poll() is None:
            process.terminate()
    for process in fleet.processes.values():
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    fleet.folder.cleanup()
