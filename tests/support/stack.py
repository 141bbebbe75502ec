"""Start the three Assay services as real processes, wired together, for the
external-tool tier (grpcurl, Node): the same topology ``assay up`` gives a user,
but on free loopback ports with a throwaway database."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import AssayProcess, assay_process, free_port


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


def _start(stack: ExitStack, args: list[str], log_path: Path, port: int) -> AssayProcess:
    """Start one service inside ``stack``; a failed start names the service and shows its log."""
    try:
        return stack.enter_context(assay_process(args, log_path, port))
    except (RuntimeError, TimeoutError) as error:
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
        raise RuntimeError(
            f"`assay {' '.join(args)}` did not start: {error}\n{log[-4000:]}"
        ) from None


@contextmanager
def assay_stack(directory: Path) -> Iterator[Stack]:
    """Resolver, a planner pointed at it, and adjudication on ``directory/assay.db``.

    Each process is stopped (SIGTERM, then SIGKILL) when the block ends, in
    reverse order of start."""
    with ExitStack() as stack:
        resolver_port = free_port()
        resolver = _start(
            stack,
            ["serve", "resolver", "--port", str(resolver_port)],
            directory / "resolver.log",
            resolver_port,
        )
        planner_port = free_port()
        planner = _start(
            stack,
            ["serve", "planner", "--port", str(planner_port), "--resolver", resolver.target],
            directory / "planner.log",
            planner_port,
        )
        adjudication_port = free_port()
        adjudication = _start(
            stack,
            [
                "serve",
                "adjudication",
                "--port",
                str(adjudication_port),
                "--db",
                str(directory / "assay.db"),
            ],
            directory / "adjudication.log",
            adjudication_port,
        )
        running = Stack(resolver, planner, adjudication)
        try:
            yield running
        finally:
            # A graceful stop first (the database closes cleanly); assay_process
            # kills whatever outlives it.
            for proc in (adjudication, planner, resolver):
                with suppress(subprocess.TimeoutExpired):
                    proc.terminate()
