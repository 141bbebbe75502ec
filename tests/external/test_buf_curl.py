"""``buf curl`` (the ``buf`` the test extras install) against the three services as real
processes, through server reflection only: the commands docs/using-node-and-grpcurl.md shows
run as printed, in dev mode and against a secured stack; without ``--protocol grpc`` it fails
the way the doc says; and each reflection protocol alone (``grpc-v1``, ``grpc-v1alpha``)
finds every service, so a client that speaks only one of them works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.runtime.auth.dev_credentials import DevCredentials, write_dev_credentials
from tests.support.doc_commands import logical_commands, map_ports, section_blocks
from tests.support.stack import Stack, assay_stack

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "using-node-and-grpcurl.md"
SECTION = "## From the shell with buf curl"
DEFAULT_PORTS = {"resolver": 50051, "planner": 50052, "adjudication": 50053}
SERVICES = {
    "resolver": "assay.v1.ResolverService",
    "planner": "assay.v1.PlannerService",
    "adjudication": "assay.v1.AdjudicationService",
}
BUF_TIMEOUT_SECONDS = 60

pytestmark = pytest.mark.external


def buf_path() -> Path:
    """The buf beside this interpreter (the venv's, as the doc says)."""
    found = Path(sys.executable).parent / "buf"
    assert found.exists(), "buf is not installed beside python (the test extras install it)"
    return found


def shell(command: str) -> subprocess.CompletedProcess[str]:
    """Run a documented command from the repository root with the venv's bin first on PATH."""
    env = {**os.environ, "PATH": f"{buf_path().parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUF_TIMEOUT_SECONDS,
        check=False,
    )


def port_map(stack: Stack) -> dict[int, int]:
    return {
        DEFAULT_PORTS[name]: int(target.rsplit(":", 1)[1])
        for name, target in stack.targets().items()
    }


def documented() -> tuple[list[str], list[str]]:
    """The doc's dev-mode commands and its secured ones."""
    blocks = section_blocks(DOC, SECTION)
    assert len(blocks) == 2, f"{DOC}: {SECTION} has a dev-mode and a secured block"
    dev, secured = (logical_commands(block) for block in blocks)
    calls = [command for command in dev + secured if command.startswith("buf curl")]
    assert calls
    assert all("--protocol grpc" in command for command in calls)
    return dev, secured


@pytest.fixture(scope="module")
def dev_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with assay_stack(tmp_path_factory.mktemp("buf-curl-dev")) as running:
        yield running


@pytest.fixture(scope="module")
def secure_stack(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Stack, DevCredentials]]:
    directory = tmp_path_factory.mktemp("buf-curl-secure")
    creds = write_dev_credentials(directory / "creds")
    with assay_stack(directory, creds) as running:
        yield running, creds


def run_documented(commands: list[str], ports: dict[int, int], prefix: str = "") -> list[str]:
    """Each command's stdout, after checking that it exited 0."""
    outputs = []
    for command in commands:
        done = shell(prefix + map_ports(command, ports))
        assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stderr}"
        outputs.append(done.stdout)
    return outputs


class TestBufCurlAsDocumented:
    def test_dev_mode_commands_run_and_print_camel_case(self, dev_stack: Stack) -> None:
        """The dev-mode block lists the resolver's methods, reads its policy in lowerCamelCase
        and plans from an example file."""
        commands, _ = documented()
        listed, policy, plan = run_documented(commands, port_map(dev_stack))
        assert "assay.v1.ResolverService/ResolveSemantic" in listed.split()
        assert json.loads(policy)["conflictMargin"] == 0.2
        assert "reliability_table" not in policy
        assert json.loads(plan)["plan"]["outcome"] == "PLAN_OUTCOME_ACQUISITION_RECOMMENDED"

    def test_secured_command_runs_with_ca_and_token(
        self, secure_stack: tuple[Stack, DevCredentials]
    ) -> None:
        """The secured block (``DIR`` pointed at the test's folder) reads the policy as alice."""
        stack, creds = secure_stack
        _, commands = documented()
        body = [c for c in commands if not c.startswith("DIR=")]
        (policy,) = run_documented(body, port_map(stack), prefix=f"DIR={creds.root}\n")
        assert json.loads(policy)["conflictMargin"] == 0.2

    def test_without_protocol_grpc_it_fails_as_the_doc_says(self, dev_stack: Stack) -> None:
        """buf curl's default (Connect) protocol cannot find the service, in the words the doc
        quotes."""
        port = port_map(dev_stack)[DEFAULT_PORTS["resolver"]]
        url = f"http://localhost:{port}/assay.v1.ResolverService/GetResolverPolicy"
        done = shell(f"buf curl --http2-prior-knowledge {url}")
        assert done.returncode != 0
        quoted = 'failed to find service named "assay.v1.ResolverService" in schema'
        assert quoted in done.stderr
        assert quoted in DOC.read_text(encoding="utf-8")


class TestReflectionProtocols:
    @pytest.mark.parametrize("protocol", ["grpc-v1", "grpc-v1alpha"])
    @pytest.mark.parametrize("name", sorted(SERVICES))
    def test_one_protocol_alone_finds_every_method(
        self, dev_stack: Stack, name: str, protocol: str
    ) -> None:
        """With reflection limited to one protocol, buf curl lists the service's methods."""
        url = f"http://{dev_stack.targets()[name]}"
        done = shell(
            f"buf curl --protocol grpc --http2-prior-knowledge --reflect-protocol {protocol} "
            f"--list-methods {url}"
        )
        assert done.returncode == 0, done.stderr
        methods = done.stdout.split()
        assert any(m.startswith(f"{SERVICES[name]}/") for m in methods), methods
        assert "grpc.reflection.v1.ServerReflection/ServerReflectionInfo" in methods

    def test_v1_only_over_tls(self, secure_stack: tuple[Stack, DevCredentials]) -> None:
        """A v1-only reflection client calls a secured server with the CA and a token."""
        stack, creds = secure_stack
        port = port_map(stack)[DEFAULT_PORTS["resolver"]]
        done = shell(
            f"buf curl --protocol grpc --reflect-protocol grpc-v1 --cacert {creds.ca} "
            f'-H "authorization: Bearer $(cat {creds.token_path("alice")})" '
            f"https://localhost:{port}/assay.v1.ResolverService/GetResolverPolicy"
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["conflictMargin"] == 0.2
