"""Start the three Assay services as real processes, wired together, for the
external-tool tier (grpcurl, Node): the same topology ``assay up`` gives a user
(in dev mode, or secured with a credentials folder), but on free loopback ports
with a throwaway database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from assay.runtime.auth.dev_credentials import DevCredentials
from tests.support.processes import AssayProcess, free_port, service_process


@dataclass(frozen=True)
class Stack:
    """The running services, by name."""

    resolver: AssayProcess
    planner: AssayProcess
    adjudication: AssayProcess

    def targets(self) -> dict[str, str]:
        """``host:port`` of each service, keyed by service name."""
        return {
            "resolver": self.resolver.target,
            "planner": self.planner.target,
            "adjudication": self.adjudication.target,
        }

    def logs(self) -> str:
        """Every service's log, for a failure message."""
        parts = []
        for name, proc in (
            ("resolver", self.resolver),
            ("planner", self.planner),
            ("adjudication", self.adjudication),
        ):
            text = proc.log_path.read_text(encoding="utf-8", errors="replace")
            parts.append(f"--- {name} log ---\n{text[-4000:]}")
        return "\n".join(parts)


@contextmanager
def assay_stack(directory: Path, creds: DevCredentials | None = None) -> Iterator[Stack]:
    """Resolver, a planner pointed at it, and adjudication on ``directory/assay.db``.

    With ``creds`` each is served ``--credentials`` the folder (TLS, bearer tokens, its auth
    policy; the planner calls the resolver over TLS as ``planner``) and adjudication allows
    fixture reviewers. Each process is stopped (SIGTERM, then SIGKILL) when the block ends,
    in reverse order of start."""
    security: list[str] = []
    fixture_reviewers: list[str] = []
    trust = None
    if creds is not None:
        security = ["--credentials", str(creds.root)]
        fixture_reviewers = ["--allow-fixture-reviewers"]
        trust = grpc.ssl_channel_credentials(creds.ca.read_bytes())

    with ExitStack() as stack:

        def start(name: str, *args: str) -> AssayProcess:
            port = free_port()
            command = ["serve", name, "--port", str(port), *args, *security]
            log_path = directory / f"{name}.log"
            return stack.enter_context(service_process(command, log_path, port, credentials=trust))

        resolver = start("resolver")
        planner = start("planner", "--resolver", resolver.target)
        adjudication = start(
            "adjudication", "--db", str(directory / "assay.db"), *fixture_reviewers
        )
        yield Stack(resolver, planner, adjudication)
