"""The CLI conventions through a real adjudication server, in-process: cases enqueued from
standard input, a queue at 80 columns with every case id whole, and JSON Lines whose ids
feed the next command."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from google.protobuf import json_format

from assay.cli.main import main as cli
from tests.service.adjudication_support import Server, adjudication_server, case_message, register


@pytest.fixture(autouse=True)
def quiet_server(log_stream: io.StringIO) -> io.StringIO:
    """The server's log lines go to a buffer: stdout holds only the command's output."""
    return log_stream


async def run(server: Server, *args: str) -> int:
    code: int = await asyncio.to_thread(cli, [*args, "--target", server.target])
    return code


class TestConventionsAgainstAServer:
    async def test_stdin_cases_a_narrow_queue_and_json_lines(
        self,
        adjudication_db: str,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """`case enqueue -` stores the cases piped in; `queue` at 80 columns shows each
        stored id whole; `queue -o jsonl` prints one case per line with the same ids."""
        monkeypatch.setenv("COLUMNS", "80")
        cases = []
        for i in range(3):
            message = case_message()
            message.subject = f"api:item-{i}"
            message.context = "two sources disagree about the idempotency mode of this call"
            cases.append(json_format.MessageToDict(message))
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(cases)))
        async with adjudication_server(adjudication_db) as server:
            await register(server.stub, "fixture-ann")
            assert await run(server, "case", "enqueue", "-", "--jsonl") == 0
            stored = [json.loads(line)["caseId"] for line in capsys.readouterr().out.splitlines()]
            assert len(stored) == 3

            assert await run(server, "queue", "--reviewer", "fixture-ann") == 0
            table = capsys.readouterr().out
            assert max(len(line) for line in table.splitlines()) <= 80
            for case_id in stored:
                assert case_id in table

            assert await run(server, "queue", "--reviewer", "fixture-ann", "-o", "jsonl") == 0
            lines = capsys.readouterr().out.splitlines()
            assert sorted(json.loads(line)["caseId"] for line in lines) == sorted(stored)

            assert await run(server, "case", "state", stored[0], "-o", "json") == 0
            state = json.loads(capsys.readouterr().out)
            assert state["state"].startswith("CASE_STATE_")

    async def test_a_refused_call_exits_1_with_one_line(
        self, adjudication_db: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A case that does not exist: the library's NotFoundError, one line, exit 1."""
        async with adjudication_server(adjudication_db) as server:
            assert await run(server, "case", "show", "case_0000000000000000") == 1
            err = capsys.readouterr().err
            assert err.count("\n") == 1
            assert "NOT_FOUND" in err
