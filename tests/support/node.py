"""Node for the polyglot tests: find ``node``/``npm``, install clients/node's
packages from its lockfile, regenerate its code, and run its scripts.

Node is a hard requirement of the suite (CI has Node 20), so a missing ``node``
or ``npm`` fails with an explicit message instead of skipping: a skipped
polyglot test would let a broken contract pass unnoticed.

``npm ci`` is slow and needs the registry, so it runs only when
package-lock.json changed since the last install (a hash stamp inside
node_modules), under a file lock so two test sessions never install at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "clients" / "node"
LOCKFILE = NODE_DIR / "package-lock.json"
INSTALL_STAMP = NODE_DIR / "node_modules" / ".assay-lockfile-sha256"
GENERATE_STAMP = NODE_DIR / "src" / "gen" / ".assay-inputs-sha256"
MINIMUM_NODE_MAJOR = 20
INSTALL_TIMEOUT_SECONDS = 600
GENERATE_TIMEOUT_SECONDS = 180


def tool(name: str) -> str:
    """The path of ``name`` on PATH, or a test failure that says what to install."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"`{name}` is not on PATH: the polyglot tests need Node {MINIMUM_NODE_MAJOR}+ "
            "with npm (e.g. `apt-get install nodejs npm`)",
            pytrace=False,
        )
    return found


def run(
    args: list[str],
    timeout: float,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command in clients/node, capturing its output; never raises on exit codes."""
    return subprocess.run(
        args,
        cwd=NODE_DIR,
        env={**os.environ, **(env or {})},
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def describe(result: subprocess.CompletedProcess[str]) -> str:
    """A command's exit code and output, for an assertion message."""
    command = " ".join(str(arg) for arg in result.args)
    return (
        f"`{command}` exited {result.returncode}\n"
        f"--- stdout ---\n{result.stdout[-20000:]}\n--- stderr ---\n{result.stderr[-8000:]}"
    )


def check_node_version() -> None:
    """Fail unless ``node`` is recent enough for the client (built-in test runner, fetch)."""
    result = run([tool("node"), "--version"], timeout=30)
    assert result.returncode == 0, describe(result)
    major = int(result.stdout.strip().lstrip("v").split(".")[0])
    assert major >= MINIMUM_NODE_MAJOR, f"node {result.stdout.strip()} is older than v20"


def _digest(paths: list[Path]) -> str:
    hasher = hashlib.sha256()
    for path in paths:
        hasher.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()


@contextmanager
def _exclusive() -> Iterator[None]:
    """Serialise installs and generation across concurrent test sessions on one checkout."""
    name = "assay-node-" + hashlib.sha256(str(NODE_DIR).encode()).hexdigest()[:16] + ".lock"
    with (Path(tempfile.gettempdir()) / name).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install_locked() -> None:
    digest = _digest([LOCKFILE])
    if INSTALL_STAMP.exists() and INSTALL_STAMP.read_text().strip() == digest:
        return
    result = run(
        [tool("npm"), "ci", "--no-audit", "--no-fund"],
        timeout=INSTALL_TIMEOUT_SECONDS,
        env={"npm_config_update_notifier": "false"},
    )
    assert result.returncode == 0, describe(result)
    INSTALL_STAMP.write_text(digest + "\n")


def ensure_installed() -> None:
    """``npm ci`` into clients/node/node_modules unless the stamp says it is current."""
    check_node_version()
    with _exclusive():
        _install_locked()


def ensure_generated() -> None:
    """Install if needed, then (re)generate src/gen from proto/ unless it is current.

    The stamp covers every .proto file, the buf files and the lockfile (the
    plugin's version), so a contract change always regenerates."""
    check_node_version()
    with _exclusive():
        _install_locked()
        inputs = [
            *sorted((ROOT / "proto").rglob("*.proto")),
            ROOT / "buf.yaml",
            NODE_DIR / "buf.gen.yaml",
            LOCKFILE,
        ]
        digest = _digest(inputs)
        if GENERATE_STAMP.exists() and GENERATE_STAMP.read_text().strip() == digest:
            return
        result = run([tool("npm"), "run", "--silent", "generate"], timeout=GENERATE_TIMEOUT_SECONDS)
        assert result.returncode == 0, describe(result)
        GENERATE_STAMP.write_text(digest + "\n")
