"""``assay approval list|show|approve|deny|revoke|watch`` against the real secure stack (TLS,
ES256 tokens, the three services in this process), each command with the credential flags a
user gives (``--ca``, ``--token-file``) and the adjudication service's address.

Commands run in-process on a thread (their output is what ``capsys`` captured), except
``watch``, which runs as a real ``assay`` process so the test reads each change as it is
printed. Principals: ``operator`` requests; ``dave`` and ``erin`` approve for acme; ``both``
holds operator and approver for acme, so only the requester rule stops it approving its own.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from assay.candidate_digest import candidate_digest
from assay.cli.main import main as cli
from assay.client import AsyncApprovalClient, Credentials
from assay.runtime.auth.dev_credentials import EXAMPLE_PRINCIPALS, Grantee
from assay.safe_text import is_unsafe
from assay.v1 import plan_pb2
from tests.service.adjudication_support import adjudication_server
from tests.support.processes import assay_command
from tests.support.secure import SecureStack, secure_stack

PRINCIPALS = (
    *EXAMPLE_PRINCIPALS,
    Grantee("both", ("operator", "approver"), ("acme",)),
    Grantee("erin", ("approver",), ("acme",)),
)
SUBJECT, PREDICATE = "payments-api", "idempotency.mode"
TIMEOUT = 20.0
# A reason is untrusted text: an escape sequence that would clear the screen, and markup.
HOSTILE_REASON = "CI \x1b[2J status [red]now[/red]"


def candidate() -> plan_pb2.AcquisitionCandidate:
    """A QUERY_CI_STATUS candidate as the planner writes it (network not granted)."""
    message = plan_pb2.AcquisitionCandidate(
        candidate_id="query_ci_status/process_result",
        probe=plan_pb2.PROBE_KIND_QUERY_CI_STATUS,
        target_signal_class=plan_pb2.SIGNAL_CLASS_PROCESS_RESULT,
        availability=plan_pb2.AVAILABILITY_REQUIRES_APPROVAL,
        required_side_effects=[plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL],
        missing_grants=[plan_pb2.SIDE_EFFECT_CLASS_NETWORK_CALL],
        blocking_reasons=[plan_pb2.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED],
    )
    message.candidate_digest = candidate_digest(SUBJECT, PREDICATE, message)
    return message


@pytest.fixture(autouse=True)
def quiet_server(log_stream: io.StringIO) -> io.StringIO:
    """The server's log lines go to a buffer: stdout holds only the command's output."""
    return log_stream


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[SecureStack]:
    async with secure_stack(tmp_path, True, PRINCIPALS) as running:
        yield running


def flags(stack: SecureStack, who: str) -> list[str]:
    """The target and credential flags of principal ``who``."""
    root = stack.creds.root
    return [
        "--target",
        stack.target("adjudication"),
        "--ca",
        str(root / "ca.pem"),
        "--token-file",
        str(root / "tokens" / f"{who}.jwt"),
    ]


async def run(stack: SecureStack, who: str, *args: str) -> int:
    code: int = await asyncio.to_thread(cli, ["approval", *args, *flags(stack, who)])
    return code


async def ask(stack: SecureStack, who: str = "operator", reason: str = "CI settles it") -> str:
    """A pending approval requested by ``who``; its id."""
    creds = Credentials.from_folder(stack.creds.root, who)
    async with AsyncApprovalClient(stack.target("adjudication"), credentials=creds) as client:
        approval = await client.ask("acme", SUBJECT, PREDICATE, candidate(), reason)
    return approval.approval_id


class TestListAndShow:
    async def test_list_filters_by_state_and_tenant_in_every_format(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A denied and a pending approval: `--state pending` lists the pending one (table,
        jsonl, json); `--tenant globex` lists none."""
        denied, pending = await ask(stack), await ask(stack)
        assert await run(stack, "dave", "deny", denied, "--reason", "freeze") == 0
        capsys.readouterr()
        assert await run(stack, "dave", "list") == 0
        table = capsys.readouterr().out
        assert denied in table
        assert pending in table
        assert "DENIED" in table
        assert await run(stack, "dave", "list", "--state", "pending") == 0
        table = capsys.readouterr().out
        assert pending in table
        assert denied not in table
        assert "PENDING" in table
        assert "QUERY_CI_STATUS" in table
        assert "0/1" in table
        assert await run(stack, "operator", "list", "--state", "pending", "-o", "jsonl") == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(a["approvalId"], a["state"]) for a in lines] == [
            (pending, "APPROVAL_STATE_PENDING")
        ]
        assert await run(stack, "operator", "list", "--state", "denied", "-o", "json") == 0
        document = json.loads(capsys.readouterr().out)
        assert [a["approvalId"] for a in document["approvals"]] == [denied]
        assert await run(stack, "operator", "list", "--tenant", "globex") == 0
        assert "no approvals" in capsys.readouterr().out

    async def test_show_prints_the_candidate_the_reason_as_data_and_every_step(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The requester, the probe, the side effects and the steps; a hostile reason is
        printed inert (``\\x1b[2J`` and the markup as written); `-o json` is the response."""
        approval_id = await ask(stack, reason=HOSTILE_REASON)
        assert await run(stack, "dave", "approve", approval_id, "--reason", "read-only") == 0
        capsys.readouterr()
        assert await run(stack, "dave", "show", approval_id, "-o", "wide") == 0
        out = capsys.readouterr().out
        assert [c for c in out if c != "\n" and is_unsafe(c)] == []
        for expected in (
            approval_id,
            "GRANTED",
            "QUERY_CI_STATUS",
            "NETWORK_CALL",
            "operator",
            "\\x1b[2J",
            "[red]now[/red]",
            "APPROVED",
            "dave",
            "read-only",
            "usable once until",
        ):
            assert expected in out, (expected, out)
        assert await run(stack, "dave", "show", approval_id, "-o", "json") == 0
        document = json.loads(capsys.readouterr().out)
        assert document["approval"]["reason"] == HOSTILE_REASON
        assert [s["actor"]["subject"] for s in document["approval"]["steps"]] == ["dave"]

    async def test_an_unknown_approval_is_not_found(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A missing id: exit 1, one line with NOT_FOUND and the reason."""
        assert await run(stack, "dave", "show", "approval_0000000000000000") == 1
        err = capsys.readouterr().err
        assert "NOT_FOUND, ERROR_REASON_APPROVAL_NOT_FOUND" in err
        assert len(err.strip().splitlines()) == 1


class TestDecide:
    async def test_the_requester_is_refused_with_the_servers_message(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`both` requested and holds the approver role: `approve` exits 1 with the server's
        words; dave's approval then grants it (`-o json`)."""
        approval_id = await ask(stack, "both")
        assert await run(stack, "both", "approve", approval_id, "--reason", "mine") == 1
        err = capsys.readouterr().err
        assert "the requester of an approval may not decide on it" in err
        assert "PERMISSION_DENIED, ERROR_REASON_APPROVER_IS_REQUESTER" in err
        assert await run(stack, "dave", "approve", approval_id, "--reason", "ok", "--json") == 0
        document = json.loads(capsys.readouterr().out)
        assert document["approval"]["state"] == "APPROVAL_STATE_GRANTED"
        assert document["approval"]["steps"][0]["reason"] == "ok"

    async def test_deny_ends_it_and_a_late_decision_names_the_state(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`deny` prints DENIED; dave deciding again is APPROVER_ALREADY_DECIDED, erin
        approving afterwards APPROVAL_NOT_PENDING: each exit 1 with the server's line."""
        approval_id = await ask(stack)
        assert await run(stack, "dave", "deny", approval_id, "--reason", "not now") == 0
        out = capsys.readouterr().out
        assert "DENIED" in out
        assert "not now" in out
        assert await run(stack, "dave", "approve", approval_id, "--reason", "changed mind") == 1
        err = capsys.readouterr().err
        assert "has decided on this approval already" in err
        assert "ALREADY_EXISTS, ERROR_REASON_APPROVER_ALREADY_DECIDED" in err
        assert await run(stack, "erin", "approve", approval_id, "--reason", "late") == 1
        assert "ERROR_REASON_APPROVAL_NOT_PENDING" in capsys.readouterr().err

    @pytest.mark.parametrize("command", ["approve", "deny", "revoke"])
    def test_reason_is_required(self, command: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --reason the command line is wrong: exit 2 before any call."""
        with pytest.raises(SystemExit) as exited:
            cli(["approval", command, "approval_0000000000000000", "--target", "127.0.0.1:1"])
        assert exited.value.code == 2
        assert "--reason" in capsys.readouterr().err

    async def test_revoke_by_the_requester(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`revoke` withdraws a pending approval (REVOKED, with the reason as its step)."""
        approval_id = await ask(stack)
        assert await run(stack, "operator", "revoke", approval_id, "--reason", "plan changed") == 0
        out = capsys.readouterr().out
        assert "REVOKED" in out
        assert "plan changed" in out
        again = ("revoke", approval_id, "--reason", "twice", "-o", "json")
        assert await run(stack, "operator", *again) == 1
        assert "APPROVAL_NOT_PENDING" in capsys.readouterr().err

    async def test_a_server_without_authentication_refuses(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Dev mode: FAILED_PRECONDITION, AUTHENTICATION_REQUIRED, with the server's words."""
        async with adjudication_server(str(tmp_path / "dev.db")) as server:
            code = await asyncio.to_thread(cli, ["approval", "list", "--target", server.target])
        assert code == 1
        err = capsys.readouterr().err
        assert "FAILED_PRECONDITION, ERROR_REASON_AUTHENTICATION_REQUIRED" in err
        assert "authenticated" in err


class TestWatch:
    async def test_watch_prints_each_change_until_consumed(self, stack: SecureStack) -> None:
        """A real `assay approval watch -o jsonl` process: PENDING at once, then GRANTED after
        dave approves, then CONSUMED after the requester consumes, then it exits 0."""
        approval_id = await ask(stack)
        process = await asyncio.create_subprocess_exec(
            *assay_command("approval", "watch", approval_id, "-o", "jsonl", *flags(stack, "dave")),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None

        async def next_state() -> str:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)
            assert line, "the watch ended early"
            state: str = json.loads(line)["state"]
            return state

        try:
            assert await next_state() == "APPROVAL_STATE_PENDING"
            creds = Credentials.from_folder(stack.creds.root, "dave")
            target = stack.target("adjudication")
            async with AsyncApprovalClient(target, credentials=creds) as approver:
                await approver.decide(approval_id, True, "read-only")
            assert await next_state() == "APPROVAL_STATE_GRANTED"
            creds = Credentials.from_folder(stack.creds.root, "operator")
            async with AsyncApprovalClient(target, credentials=creds) as requester:
                await requester.consume(approval_id, candidate().candidate_digest)
            assert await next_state() == "APPROVAL_STATE_CONSUMED"
            code = await asyncio.wait_for(process.wait(), TIMEOUT)
            assert process.stderr is not None
            assert code == 0, (await process.stderr.read()).decode()
            assert await process.stdout.read() == b""
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    async def test_watch_table_lines_and_a_final_state_at_once(
        self, stack: SecureStack, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Watching an approval already final prints it once, as a line (or, with `-o json`,
        one WatchApprovalResponse document), and returns 0."""
        approval_id = await ask(stack)
        assert await run(stack, "dave", "deny", approval_id, "--reason", "no") == 0
        capsys.readouterr()
        assert await run(stack, "dave", "watch", approval_id) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1
        assert approval_id in lines[0]
        assert "DENIED" in lines[0]
        assert "by dave: no" in lines[0]
        assert await run(stack, "dave", "watch", approval_id, "-o", "json") == 0
        document = json.loads(capsys.readouterr().out)
        assert document["approval"]["state"] == "APPROVAL_STATE_DENIED"
