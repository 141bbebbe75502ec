"""The README's secure path, run as written: its commands are read out of README.md, so the
test fails as soon as the README and the product disagree.

From a fresh folder holding only the repository's ``examples/`` and the virtualenv as
``.venv``: ``assay dev-credentials ./creds`` runs literally, ``assay up --credentials ./creds``
runs literally on free loopback ports (``ASSAY_<NAME>_PORT``; the README's port numbers in
grpcurl commands are mapped to them), then every client command of the section runs in one
bash session with ``.venv/bin`` on ``PATH`` and ``ASSAY_<NAME>_TARGET`` set. A command whose
comment says ``# refused: A, B`` must fail with exit code 1 naming A and B; every other command
must succeed. The gold label frozen by the walk-through is then read back through the Python
client.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from assay.client import AdjudicationClient, Credentials
from assay.v1 import gold_pb2
from tests.support.doc_commands import logical_commands, map_ports, section_blocks
from tests.support.processes import free_port, wait_serving

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### The secure path: TLS, tokens, roles and tenants"
DEFAULT_PORTS = {"resolver": 50051, "planner": 50052, "adjudication": 50053}
COMMAND_TIMEOUT_SECONDS = 300
pytestmark = pytest.mark.process


def refusal_words(command: str) -> list[str]:
    """What a ``# refused: A, B (why)`` comment says the failure names; [] for no refusal."""
    found = re.search(r"#\s*refused:\s*([^(\n]*)", command)
    if found is None:
        return []
    return [word.strip() for word in found.group(1).split(",") if word.strip()]


@dataclass(frozen=True)
class Outcome:
    """One README command as it ran: its text, exit code and output."""

    command: str
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"`{self.command}` exited {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}"
            f"\n--- stderr ---\n{self.stderr[-3000:]}"
        )


@dataclass(frozen=True)
class Walkthrough:
    """The folder the README ran in, the adjudication target, and each client command's
    outcome in order."""

    folder: Path
    adjudication: str
    outcomes: list[Outcome]


def session_script(commands: list[str], runs: Path, ports: dict[str, int]) -> str:
    """One bash script running each command in turn (variables carry over), each command's
    exit code and output captured in ``runs/N.*``."""
    lines = []
    mapped = {DEFAULT_PORTS[name]: port for name, port in ports.items()}
    for number, command in enumerate(commands):
        out = runs / str(number)
        lines.append(
            f"{{ {map_ports(command, mapped)}\n}} >'{out}.out' 2>'{out}.err' </dev/null; "
            f"echo $? >'{out}.rc'"
        )
    return "\n".join(lines) + "\n"


def shell(command: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )


def fresh_folder(folder: Path) -> dict[str, str]:
    """A folder with the repository's examples and the virtualenv as ``.venv``, and the
    environment the README assumes there (``.venv/bin`` first on ``PATH``)."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "assay").exists():
        pytest.fail(f"no `assay` in {venv}/bin: install the project into its virtualenv")
    if shutil.which("jq") is None:
        pytest.fail("`jq` is not on PATH: the README's secure path uses it (apt-get install jq)")
    (folder / ".venv").symlink_to(venv, target_is_directory=True)
    (folder / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    keep = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    return {**keep, "PATH": f"{folder / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walkthrough]:
    blocks = section_blocks(ROOT / "README.md", SECTION)
    assert len(blocks) == 2, "the secure path is two blocks: start the servers, then call them"
    start, calls = (logical_commands(block) for block in blocks)
    assert len(start) == 2, start
    assert "dev-credentials" in start[0], start
    assert " up --credentials " in start[1], start
    folder = tmp_path_factory.mktemp("readme")
    env = fresh_folder(folder)

    made = shell(start[0], folder, env)
    assert made.returncode == 0, made.stderr
    ports = {name: free_port() for name in DEFAULT_PORTS}
    server_env = {**env, **{f"ASSAY_{n.upper()}_PORT": str(p) for n, p in ports.items()}}
    log = folder / "up.log"
    with log.open("wb") as sink:
        up = subprocess.Popen(
            ["bash", "-c", f"exec {start[1]}"], cwd=folder, env=server_env, stderr=sink
        )
    try:
        trust = grpc.ssl_channel_credentials((folder / "creds" / "ca.pem").read_bytes())
        for port in ports.values():
            wait_serving(f"localhost:{port}", process=up, credentials=trust)
        runs = folder / "runs"
        runs.mkdir()
        (folder / "readme.sh").write_text(session_script(calls, runs, ports))
        client_env = {
            **env,
            **{f"ASSAY_{n.upper()}_TARGET": f"127.0.0.1:{p}" for n, p in ports.items()},
        }
        done = shell("bash ./readme.sh", folder, client_env)
        assert done.returncode == 0, done.stderr
        outcomes = [
            Outcome(
                command,
                int((runs / f"{n}.rc").read_text()),
                (runs / f"{n}.out").read_text(encoding="utf-8", errors="replace"),
                (runs / f"{n}.err").read_text(encoding="utf-8", errors="replace"),
            )
            for n, command in enumerate(calls)
        ]
        yield Walkthrough(folder, f"localhost:{ports['adjudication']}", outcomes)
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=20)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait(timeout=5)


def client(walk: Walkthrough, name: str) -> AdjudicationClient:
    creds = walk.folder / "creds"
    return AdjudicationClient(
        walk.adjudication,
        credentials=Credentials(ca=creds / "ca.pem", token_file=creds / "tokens" / f"{name}.jwt"),
    )


class TestReadmeSecurePath:
    def test_each_command_succeeds_or_is_refused_as_its_comment_says(
        self, walkthrough: Walkthrough
    ) -> None:
        """Every command the README shows succeeds, and every one marked ``refused`` exits 1
        with one line naming what its comment names."""
        assert len(walkthrough.outcomes) >= 10
        for outcome in walkthrough.outcomes:
            words = refusal_words(outcome.command)
            if not words:
                assert outcome.returncode == 0, outcome.describe()
                continue
            assert outcome.returncode == 1, outcome.describe()
            assert len(outcome.stderr.strip().splitlines()) == 1, outcome.describe()
            for word in words:
                assert word in outcome.stderr, f"{word} not named\n{outcome.describe()}"

    def test_refusals_cover_role_identity_and_tenant(self, walkthrough: Walkthrough) -> None:
        """The README demonstrates each wall of the boundary: a missing role, acting as
        someone else, and another tenant's case."""
        named = {w for outcome in walkthrough.outcomes for w in refusal_words(outcome.command)}
        assert {"ROLE_REQUIRED", "IDENTITY_MISMATCH"} <= named
        assert any(word.startswith("NOT_FOUND") for word in named)

    def test_the_walkthrough_freezes_a_human_adjudicated_label(
        self, walkthrough: Walkthrough
    ) -> None:
        """The case the README enqueues ends frozen as HUMAN_ADJUDICATED, in tenant acme,
        from alice and bob's reviews and carol's decision."""
        with client(walkthrough, "operator") as operator:
            labels = list(operator.gold_labels())
        assert len(labels) == 1
        label = labels[0]
        assert label.provenance == gold_pb2.LABELING_PROVENANCE_HUMAN_ADJUDICATED
        assert label.tenant == "acme"
        assert sorted(label.contributing_reviewer_ids) == ["alice", "bob"]
        assert label.adjudicator_reviewer_id == "carol"

    def test_every_audit_event_names_its_actor(self, walkthrough: Walkthrough) -> None:
        """The ledger the README lists records who did each step: the operator registers,
        enqueues and freezes, alice and bob review, carol resolves."""
        with client(walkthrough, "operator") as operator:
            events = list(operator.audit_events())
        assert events
        assert all(event.actor.subject for event in events)
        assert {event.actor.subject for event in events} == {"operator", "alice", "bob", "carol"}
