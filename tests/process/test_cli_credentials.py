"""The ``assay`` client commands carry credentials: ``--ca``, ``--token``/``--token-file`` and
their ``ASSAY_…`` twins, against services serving TLS with bearer tokens.

The three services run in this test process (``secure_stack``, on its own event
loop in a background thread, so the blocking subprocess calls below never stall
them); every command is a real ``assay`` process. Every run is checked for
the one thing a credential flag must never do: print a token.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, write_dev_credentials
from tests.support.processes import assay_command, one_line_error
from tests.support.secure import SecureStack, secure_stack

pytestmark = pytest.mark.process
ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "adjudication" / "case-idempotency.json"
EVIDENCE = ROOT / "examples" / "executor" / "idempotency-conflict.json"
START_SECONDS = 30.0
CREDENTIAL_ENV = ("ASSAY_TOKEN", "ASSAY_TOKEN_FILE", "ASSAY_CA", "ASSAY_CLIENT_CERT", "ASSAY_TLS")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureStack]:
    """A secure stack serving from a background thread's event loop for the module."""
    directory = tmp_path_factory.mktemp("secure")
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop
        try:
            async with secure_stack(directory) as running:
                state["stack"] = running
                ready.set()
                await stop.wait()
        finally:
            ready.set()  # also when start-up failed, so the fixture does not wait in vain

    thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
    thread.start()
    assert ready.wait(START_SECONDS), "the secure stack did not start"
    assert "stack" in state, "the secure stack failed to start"
    yield state["stack"]
    state["loop"].call_soon_threadsafe(state["stop"].set)
    thread.join(START_SECONDS)


class Cli:
    """Runs ``assay``; asserts no token of the stack's credentials appears in its output."""

    def __init__(self, stack: SecureStack) -> None:
        self.stack = stack
        self.tokens = [stack.creds.token(p.name) for p in EXAMPLE_PRINCIPALS]

    def run(
        self, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if k not in CREDENTIAL_ENV}
        done = subprocess.run(
            assay_command(*args),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**clean, **(env or {})},
            cwd=ROOT,
        )
        for token in self.tokens:
            assert token not in done.stdout + done.stderr, "a token was printed"
        return done

    def as_(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``assay ARGS`` with ``--ca`` and ``--token-file`` of principal ``name``."""
        creds = self.stack.creds
        return self.run(*args, "--ca", str(creds.ca), "--token-file", str(creds.token_path(name)))

    def ok(self, name: str, *args: str) -> Any:
        done = self.as_(name, *args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def cli(stack: SecureStack) -> Cli:
    return Cli(stack)


class TestFlagsAndTheirTwins:
    def test_ca_and_token_file_flags(self, cli: Cli, stack: SecureStack) -> None:
        """``assay policy --ca --token-file`` reads the policy over TLS as the operator."""
        done = cli.as_("operator", "policy", "--target", stack.targets.resolver)
        assert done.returncode == 0, done.stderr
        assert "reliability table" in done.stdout

    def test_environment_twins_including_the_token_itself(
        self, cli: Cli, stack: SecureStack
    ) -> None:
        """ASSAY_CA, ASSAY_TOKEN (the token value) and the target from the environment alone."""
        env = {
            "ASSAY_CA": str(stack.creds.ca),
            "ASSAY_TOKEN": stack.creds.token("alice"),
            "ASSAY_PLANNER_TARGET": stack.targets.planner,
        }
        done = cli.run("probes", env=env)
        assert done.returncode == 0, done.stderr
        assert "probe catalogue" in done.stdout

    def test_the_token_flag_carries_the_value(self, cli: Cli, stack: SecureStack) -> None:
        """``--token VALUE`` authenticates like a token file (the plan command, as alice)."""
        done = cli.run(
            "plan",
            "examples/plan/safety-conflict-read-only.json",
            "--target",
            stack.targets.planner,
            "--ca",
            str(stack.creds.ca),
            "--token",
            stack.creds.token("alice"),
        )
        assert done.returncode == 0, done.stderr
        assert "candidates, best first" in done.stdout

    def test_a_flag_beats_its_environment_twin(self, cli: Cli, stack: SecureStack) -> None:
        """``--token-file`` (operator) wins over an exported ASSAY_TOKEN (alice): the
        operator-only reviewer list is allowed."""
        done = cli.run(
            "reviewer",
            "list",
            "--target",
            stack.targets.adjudication,
            "--ca",
            str(stack.creds.ca),
            "--token-file",
            str(stack.creds.token_path("operator")),
            env={"ASSAY_TOKEN": stack.creds.token("alice")},
        )
        assert done.returncode == 0, done.stderr

    def test_help_never_shows_an_exported_token(self, cli: Cli, stack: SecureStack) -> None:
        """``--help`` lists the flags and env names, not the values in the environment."""
        done = cli.run("policy", "--help", env={"ASSAY_TOKEN": stack.creds.token("operator")})
        assert done.returncode == 0
        for flag in ("--token", "--token-file", "--ca", "--client-cert", "--client-key"):
            assert flag in done.stdout


class TestOneLineRefusals:
    def test_no_token_is_unauthenticated_with_what_to_do(
        self, cli: Cli, stack: SecureStack
    ) -> None:
        """TLS but no token: UNAUTHENTICATED, CREDENTIALS_MISSING, and the flag to give."""
        done = cli.run("policy", "--target", stack.targets.resolver, "--ca", str(stack.creds.ca))
        line = one_line_error(done)
        assert "not authenticated by the resolver service" in line
        assert "UNAUTHENTICATED, ERROR_REASON_CREDENTIALS_MISSING" in line
        assert "--token-file" in line

    def test_a_role_the_caller_lacks_is_permission_denied(
        self, cli: Cli, stack: SecureStack
    ) -> None:
        """alice may not list reviewers: PERMISSION_DENIED, ROLE_REQUIRED, and the roles."""
        line = one_line_error(
            cli.as_("alice", "reviewer", "list", "--target", stack.targets.adjudication)
        )
        assert "permission denied by the adjudication service" in line
        assert "PERMISSION_DENIED, ERROR_REASON_ROLE_REQUIRED" in line
        assert "operator" in line

    def test_plaintext_to_a_tls_server_says_to_give_the_ca(
        self, cli: Cli, stack: SecureStack
    ) -> None:
        """No --ca: the TLS server hangs up, and the line says why and what to give."""
        line = one_line_error(cli.run("policy", "--target", stack.targets.resolver))
        assert "probably serves TLS" in line
        assert "--ca" in line

    def test_an_untrusted_server_certificate_is_named(
        self, cli: Cli, stack: SecureStack, tmp_path: Path
    ) -> None:
        """--ca of another CA: the handshake fails, and the line says it was TLS."""
        stranger = write_dev_credentials(tmp_path / "stranger")
        done = cli.run(
            "policy",
            "--target",
            stack.targets.resolver,
            "--ca",
            str(stranger.ca),
            "--token-file",
            str(stack.creds.token_path("operator")),
        )
        line = one_line_error(done)
        assert "no TLS connection to the resolver service" in line
        assert "CERTIFICATE_VERIFY_FAILED" in line

    def test_a_token_over_plaintext_off_loopback_is_refused_unsent(
        self, cli: Cli, stack: SecureStack
    ) -> None:
        """--token to a remote target without --ca: refused before connecting, not echoed."""
        line = one_line_error(
            cli.run(
                "policy",
                "--target",
                "assay.example.com:50051",
                "--token",
                stack.creds.token("operator"),
            )
        )
        assert "refusing to send a bearer token in plaintext" in line

    @pytest.mark.parametrize(
        ("extra", "env", "message"),
        [
            (["--token", "abc", "--token-file", "t.jwt"], {}, "not both"),
            ([], {"ASSAY_TOKEN": "abc", "ASSAY_TOKEN_FILE": "t.jwt"}, "both set"),
            (["--client-cert", "c.pem"], {}, "needs its key"),
            (["--token-file", "/nonexistent/t.jwt"], {}, "cannot read token file"),
        ],
    )
    def test_unusable_credential_settings_are_one_line(
        self, cli: Cli, stack: SecureStack, extra: list[str], env: dict[str, str], message: str
    ) -> None:
        """Contradictions and unreadable files stop the command before any call."""
        done = cli.run("policy", "--target", stack.targets.resolver, *extra, env=env)
        assert message in one_line_error(done)


class TestEveryRoleThroughTheCli:
    def test_operator_enqueues_alice_reviews_and_the_ledger_names_them(
        self, cli: Cli, stack: SecureStack, tmp_path: Path
    ) -> None:
        """The operator registers alice and enqueues an acme case; alice finds it in her
        queue and reviews it with her own token; reviewing as bob with alice's token is
        IDENTITY_MISMATCH; the audit ledger shows who did each."""
        target = ("--target", stack.targets.adjudication)
        case = json.loads(CASE.read_text(encoding="utf-8"))
        case["tenant"] = "acme"
        case_file = tmp_path / "case.json"
        case_file.write_text(json.dumps(case), encoding="utf-8")
        for name in ("alice", "bob"):
            cli.ok("operator", "reviewer", "add", name, "--kind", "fixture", *target)
        case_id = cli.ok("operator", "case", "enqueue", str(case_file), *target)["caseId"]
        queue = cli.ok("alice", "queue", "--reviewer", "alice", "--tenant", "acme", *target)
        assert [c["caseId"] for c in queue["cases"]] == [case_id]
        cli.ok("alice", "review", case_id, "--reviewer", "alice", "--label", "key", *target)
        line = one_line_error(
            cli.as_("alice", "review", case_id, "--reviewer", "bob", "--label", "none", *target)
        )
        assert "PERMISSION_DENIED, ERROR_REASON_IDENTITY_MISMATCH" in line
        events = cli.ok("operator", "audit", "events", *target)["events"]
        actors = [(e["eventType"], e["actor"]["subject"]) for e in events]
        assert ("AUDIT_EVENT_TYPE_REVIEW_SUBMITTED", "alice") in actors
        assert ("AUDIT_EVENT_TYPE_CASE_ENQUEUED", "operator") in actors
        table = cli.as_("operator", "audit", "events", *target)
        assert table.returncode == 0, table.stderr
        assert "actor" in table.stdout

    def test_the_executor_runs_with_the_operators_credentials(
        self, cli: Cli, stack: SecureStack
    ) -> None:
        """``executor run`` sends the credentials to all three services: it resolves, plans
        and enqueues a review case for tenant acme; without a token it stops in one line."""
        args = [
            "executor",
            "run",
            str(EVIDENCE),
            "--subject",
            "api:checkout.submit",
            "--predicate",
            "idempotency.mode",
            "--tenant",
            "acme",
            "--resolver",
            stack.targets.resolver,
            "--planner",
            stack.targets.planner,
            "--adjudication",
            stack.targets.adjudication,
        ]
        done = cli.as_("operator", *args)
        assert done.returncode == 0, done.stderr
        assert "CASE_ENQUEUED" in done.stdout
        refused = cli.run(*args, "--ca", str(stack.creds.ca))
        line = one_line_error(refused)
        assert "UNAUTHENTICATED, ERROR_REASON_CREDENTIALS_MISSING" in line
