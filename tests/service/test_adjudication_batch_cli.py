"""``assay case enqueue`` and ``assay queue --adjudicator`` run in-process against a real server.

The command runs on a thread (it is a blocking gRPC client) while the server answers on the
test's event loop; its output is what ``capsys`` captured.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from assay.cli.main import main as cli
from assay.v1 import adjudication_service_pb2 as pb
from tests.service.adjudication_support import (
    TIMEOUT,
    Server,
    adjudication_server,
    case_message,
    register,
    review,
)


@pytest.fixture(autouse=True)
def quiet_server(log_stream: io.StringIO) -> io.StringIO:
    """The server's log lines go to a buffer: stdout holds only the command's output."""
    return log_stream


def write_cases(
    path: Path, size: int, bad: tuple[int, ...] = (), tenants: tuple[str, ...] = ()
) -> Path:
    """``size`` cases; case i of tenant ``tenants[i]`` when given."""
    found: list[dict[str, Any]] = []
    for i in range(size):
        message = case_message(tenant=tenants[i]) if tenants else case_message()
        message.subject = f"api:item-{i}"
        if i in bad:
            message.subject = ""
        found.append(json_format.MessageToDict(message))
    path.write_text(json.dumps(found), encoding="utf-8")
    return path


async def run(server: Server, *args: str) -> int:
    code: int = await asyncio.to_thread(cli, [*args, "--target", server.target])
    return code


async def case_events(server: Server) -> list[str]:
    found: list[str] = []
    token = ""
    while True:
        page = await server.stub.ListAuditEvents(
            pb.ListAuditEventsRequest(page_size=1000, page_token=token), timeout=TIMEOUT
        )
        found.extend(e.payload["case_id"] for e in page.events)
        token = page.next_page_token
        if not token:
            return found


class TestEnqueueFile:
    async def test_a_bad_case_stores_nothing_and_a_rerun_stores_nothing_twice(
        self, adjudication_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Case 4 of 10 bad: exit 1 naming it, nothing stored. Fixed: one JSON array of the
        ten stored cases; the same command again prints the same ids and stores nothing."""
        async with adjudication_server(adjudication_db) as server:
            bad = write_cases(tmp_path / "bad.json", 10, bad=(4, 7))
            assert await run(server, "case", "enqueue", str(bad), "--json") == 1
            captured = capsys.readouterr()
            assert "cases[4].subject" in captured.err
            assert "cases[7].subject" in captured.err
            assert captured.out == ""
            assert await case_events(server) == []

            good = write_cases(tmp_path / "good.json", 10)
            assert await run(server, "case", "enqueue", str(good), "--json") == 0
            first = json.loads(capsys.readouterr().out)
            assert [c["subject"] for c in first] == [f"api:item-{i}" for i in range(10)]
            assert await run(server, "case", "enqueue", str(good), "--json") == 0
            again = json.loads(capsys.readouterr().out)
            assert [c["caseId"] for c in again] == [c["caseId"] for c in first]
            assert await case_events(server) == [c["caseId"] for c in first]

    async def test_a_long_file_goes_in_chunks_and_prints_json_lines(
        self, adjudication_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """2,100 cases: three EnqueueCases calls, one JSON line per stored case in file
        order, and no progress output on a stderr that is not a terminal."""
        async with adjudication_server(adjudication_db) as server:
            cases = write_cases(tmp_path / "many.json", 2100)
            assert await run(server, "case", "enqueue", str(cases), "--jsonl") == 0
            captured = capsys.readouterr()
            lines = [json.loads(line) for line in captured.out.splitlines()]
            assert [c["subject"] for c in lines] == [f"api:item-{i}" for i in range(2100)]
            assert captured.err == ""
            assert await case_events(server) == [c["caseId"] for c in lines]

    async def test_a_file_of_several_tenants_goes_in_runs_of_one_tenant(
        self, adjudication_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A batch has one tenant, so a file alternating tenants in runs is sent run by run:
        every case stored, in file order, each with its own tenant."""
        tenants = ("tenant-a",) * 3 + ("tenant-b",) * 2 + ("tenant-a",)
        async with adjudication_server(adjudication_db) as server:
            cases = write_cases(tmp_path / "tenants.json", 6, tenants=tenants)
            assert await run(server, "case", "enqueue", str(cases), "--json") == 0
            stored = json.loads(capsys.readouterr().out)
            assert [c["subject"] for c in stored] == [f"api:item-{i}" for i in range(6)]
            assert tuple(c["tenant"] for c in stored) == tenants
            assert await case_events(server) == [c["caseId"] for c in stored]

    async def test_a_refused_chunk_keeps_the_earlier_chunks_and_prints_them(
        self, adjudication_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Case 1,200 of 1,500 bad: the first chunk (1,000) is stored and printed, the second
        is refused whole, and the error names the chunk and the bad case."""
        async with adjudication_server(adjudication_db) as server:
            cases = write_cases(tmp_path / "mixed.json", 1500, bad=(1200,))
            assert await run(server, "case", "enqueue", str(cases), "--json") == 1
            captured = capsys.readouterr()
            stored = json.loads(captured.out)
            assert len(stored) == 1000
            assert "cases 1000-1499" in captured.err
            assert "cases[200].subject" in captured.err
            assert "1,000 case(s) of earlier chunks were stored" in captured.err
            assert await case_events(server) == [c["caseId"] for c in stored]


class TestWorklistCommand:
    async def test_queue_adjudicator_lists_the_disagreements(
        self, adjudication_db: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`assay queue --adjudicator cy`: the disagreed case with both reviews, as JSON and as
        a table that shows the whole id."""
        async with adjudication_server(adjudication_db) as server:
            for name in ("ann", "bob", "cy"):
                await register(server.stub, name)
            reply = await server.stub.EnqueueCase(
                pb.EnqueueCaseRequest(request_id="r1", case=case_message()), timeout=TIMEOUT
            )
            case_id = reply.case.case_id
            await review(server.stub, case_id, "ann", "key")
            await review(server.stub, case_id, "bob", "none")
            assert await run(server, "queue", "--adjudicator", "cy", "--json") == 0
            listed = json.loads(capsys.readouterr().out)
            assert [i["case"]["caseId"] for i in listed["items"]] == [case_id]
            assert [r["reviewerId"] for r in listed["items"][0]["reviews"]] == ["ann", "bob"]
            assert "localVerdict" not in json.dumps(listed)
            assert await run(server, "queue", "--adjudicator", "ann") == 0
            assert "nothing to adjudicate for ann" in capsys.readouterr().out
