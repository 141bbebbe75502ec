"""Stored text reaches the terminal as data: every command that prints what someone stored,
run against the three real services (loopback ports, a real SQLite file), with escape
sequences, OSC 8 links, bidi overrides, C1 controls, NUL, BEL, CR and rich markup stored
in every free-text field the services accept.

Each payload is stored once per field, tagged ``<name:…>`` so a test finds its own; the
command's output (default table at 80 columns, and ``-o wide``) must hold no raw control,
bidi or format character, and ``-o wide`` must show the escaped form (``\\x1b[2J``,
``\\u202e``) or the markup as written (``[red]x[/red]``)."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

from assay.cli.main import main as cli
from assay.client import AsyncAdjudicationClient
from assay.executor.stack import local_stack
from assay.runtime.logging import configure_logging
from assay.safe_text import is_unsafe, printable

PAYLOADS = {
    "csi-clear": "\x1b[2J",
    "osc8-link": "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\",
    "osc-title": "\x1b]0;owned\x07",
    "bidi-override": "\u202e",
    "c1-csi": "\x9b2J",
    "markup-style": "[red]x[/red]",
    "markup-link": "[link=http://evil]x[/link]",
    "nul": "\x00",
    "bel": "\x07",
    "cr": "\r",
}
FIXTURES = ("fx-ann", "fx-bob", "fx-cat", "fx-dan")


def tagged(field_name: str, payload: str) -> str:
    """The stored value of one field for one payload: ``subj<csi-clear:\\x1b[2J>``."""
    return f"{field_name}<{payload}:{PAYLOADS[payload]}>"


@dataclass
class World:
    """The three services and what was stored in them, per payload."""

    resolver: str
    planner: str
    adjudication: str
    agreed: dict[str, str] = field(default_factory=dict)
    declined: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, Path] = field(default_factory=dict)
    plans: dict[str, Path] = field(default_factory=dict)
    executor_evidence: dict[str, Path] = field(default_factory=dict)
    log: io.StringIO = field(default_factory=io.StringIO)


def claims(payload: str, predicate: str) -> list[dict[str, object]]:
    """Two claims that disagree, every free-text field carrying the payload."""
    return [
        {
            "id": tagged("claim", payload),
            "subject": tagged("subj", payload),
            "predicate": predicate,
            "value": tagged("val", payload),
            "source": "api_spec",
            "sourceRef": tagged("ref", payload),
            "method": "openapi-parse",
            "confidence": 0.9,
            "correlationGroup": tagged("group", payload),
        },
        {
            "id": "other",
            "subject": tagged("subj", payload),
            "predicate": predicate,
            "value": tagged("alt", payload),
            "source": "runtime_trace",
            "sourceRef": "traces/1",
            "method": "retry-replay",
            "confidence": 0.8,
            "correlationGroup": "traces",
        },
    ]


async def store(world: World, client: AsyncAdjudicationClient, payload: str) -> None:
    """A case two reviewers agree on (resolved and frozen), one they disagree on (on an
    adjudicator's worklist), one declined with a reason, and an attested human reviewer."""
    await client.add_reviewer(f"att-{payload}", "HUMAN", attested_by=tagged("att", payload))
    value = tagged("val", payload)

    async def enqueue() -> str:
        case = await client.enqueue(
            tenant="t",
            subject=tagged("subj", payload),
            predicate=tagged("pred", payload),
            candidate_values=["key", value],
            local_verdict="key",
            evidence_refs=[tagged("ev", payload)],
            context=tagged("ctx", payload),
        )
        return str(case.case_id)

    agreed, disagreed, declined = await enqueue(), await enqueue(), await enqueue()
    await client.review(agreed, "fx-ann", value)
    await client.review(agreed, "fx-bob", value)
    await client.resolve_unanimous(agreed)
    await client.freeze(agreed)
    await client.review(disagreed, "fx-ann", "key")
    await client.review(disagreed, "fx-bob", value)
    await client.decline(declined, "fx-ann", tagged("why", payload))
    world.agreed[payload], world.declined[payload] = agreed, declined


def write_files(world: World, directory: Path, payload: str) -> None:
    evidence = directory / f"{payload}-evidence.json"
    evidence.write_text(json.dumps({"claims": claims(payload, tagged("pred", payload))}))
    plan = directory / f"{payload}-plan.json"
    request = {
        "subject": tagged("subj", payload),
        "predicate": tagged("pred", payload),
        "evidence": {"claims": claims(payload, tagged("pred", payload))},
    }
    plan.write_text(json.dumps(request))
    executor = directory / f"{payload}-executor.json"
    executor.write_text(json.dumps({"claims": claims(payload, "idempotency.mode")}))
    world.evidence[payload], world.plans[payload] = evidence, plan
    world.executor_evidence[payload] = executor


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    directory = tmp_path_factory.mktemp("stored-text")
    log = io.StringIO()
    configure_logging("info", log)
    async with local_stack(directory / "a.db") as stack:
        found = World(stack.resolver, stack.planner, stack.adjudication, log=log)
        async with AsyncAdjudicationClient(stack.adjudication, timeout=10) as client:
            for reviewer in FIXTURES:
                await client.add_reviewer(reviewer, "MECHANISM_TEST_FIXTURE")
            for payload in PAYLOADS:
                await store(found, client, payload)
                write_files(found, directory, payload)
        yield found


def shown(field_name: str, payload: str) -> str:
    """How the CLI shows the field: escaped, markup as written."""
    return printable(tagged(field_name, payload))


@dataclass(frozen=True)
class Command:
    """One command that prints stored text, and what its ``-o wide`` output must show."""

    name: str
    argv: Callable[[World, str], list[str]]
    shows: Callable[[str], list[str]]
    exit_codes: tuple[int, ...] = (0,)
    # Tables fit 80 columns; the executor's steps are soft-wrapped lines (one per step).
    fits_80: bool = True


def adj(*args: str) -> Callable[[World, str], list[str]]:
    return lambda w, p: [*(a.format(agreed=w.agreed[p], declined=w.declined[p]) for a in args)]


COMMANDS = [
    Command(
        "case show",
        adj("case", "show", "{agreed}"),
        lambda p: [shown("subj", p), shown("pred", p), f"val<{p}:"],
    ),
    Command("case show (reason)", adj("case", "show", "{declined}"), lambda p: [shown("why", p)]),
    Command(
        "queue",
        adj("queue", "--reviewer", "fx-cat"),
        lambda p: [shown("subj", p), shown("pred", p), shown("ctx", p), shown("ev", p)],
    ),
    Command(
        "worklist",
        adj("queue", "--adjudicator", "fx-dan"),
        lambda p: [shown("subj", p), shown("pred", p), f"val<{p}:"],
    ),
    Command("case revisions", adj("case", "revisions"), lambda p: [f"val<{p}:"]),
    Command("reviewer list", adj("reviewer", "list"), lambda p: [shown("att", p)]),
    Command("audit events", adj("audit", "events"), lambda p: ["CASE_ENQUEUED"]),
    Command(
        "resolve",
        lambda w, p: ["resolve", str(w.evidence[p]), "--target", w.resolver],
        lambda p: [shown("subj", p), shown("pred", p), shown("claim", p), shown("group", p)],
        exit_codes=(5,),
    ),
    Command(
        "plan",
        lambda w, p: ["plan", str(w.plans[p]), "--target", w.planner],
        lambda p: [shown("subj", p), shown("pred", p)],
    ),
    Command(
        "executor run",
        lambda w, p: [
            "executor",
            "run",
            str(w.executor_evidence[p]),
            "--subject",
            tagged("subj", p),
            "--predicate",
            "idempotency.mode",
            "--tenant",
            "t",
            "--resolver",
            w.resolver,
            "--planner",
            w.planner,
            "--adjudication",
            w.adjudication,
        ],
        lambda p: [f"<{p}:"],
        fits_80=False,
    ),
]
ADJUDICATION_TARGETED = {"resolve", "plan", "executor run"}


def raw_unsafe(text: str) -> list[str]:
    """The unsafe characters in ``text`` other than the newlines that end its lines."""
    return sorted({f"U+{ord(c):04X}" for c in text if is_unsafe(c) and c != "\n"})


async def run(
    world: World, command: Command, payload: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    argv = command.argv(world, payload)
    if command.name not in ADJUDICATION_TARGETED:
        argv += ["--target", world.adjudication]
    code: int = await asyncio.to_thread(cli, [*argv, *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.asyncio(loop_scope="module")
class TestStoredTextIsData:
    @pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
    @pytest.mark.parametrize("payload", list(PAYLOADS))
    async def test_no_raw_control_and_the_escape_shown(
        self,
        world: World,
        command: Command,
        payload: str,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The default table at 80 columns and ``-o wide`` carry no raw control, bidi or
        format character; ``-o wide`` shows the stored text escaped, markup as written."""
        monkeypatch.setenv("COLUMNS", "80")
        code, out, err = await run(world, command, payload, capsys)
        assert code in command.exit_codes, err
        assert raw_unsafe(out + err) == []
        if command.fits_80:
            assert max(len(line) for line in out.splitlines()) <= 80
        code, out, err = await run(world, command, payload, capsys, "-o", "wide")
        assert code in command.exit_codes, err
        assert raw_unsafe(out + err) == []
        for expected in command.shows(payload):
            assert expected in out, (expected, out)

    @pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
    @pytest.mark.parametrize("output", ["json", "jsonl"])
    async def test_json_escapes_every_unsafe_character(
        self,
        world: World,
        command: Command,
        output: str,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """``-o json|jsonl`` is valid JSON whose text is ASCII: C0, C1 and bidi characters
        are ``\\u`` escapes, and decoding gives back what was stored."""
        code, out, err = await run(world, command, "bidi-override", capsys, "-o", output)
        assert code in command.exit_codes, err
        assert out.isascii()
        documents = (
            [json.loads(out)]
            if output == "json"
            else [json.loads(line) for line in out.splitlines()]
        )
        assert documents
        if command.name not in {"audit events", "case revisions"}:
            assert "\u202e" in json.dumps(documents, ensure_ascii=False)

    async def test_the_services_log_lines_carry_no_raw_characters(self, world: World) -> None:
        """Whatever the services logged while the payloads were stored and read is JSON
        lines of ASCII."""
        lines = world.log.getvalue().splitlines()
        assert lines
        for line in lines:
            assert line.isascii(), line
            json.loads(line)


@pytest.mark.asyncio(loop_scope="module")
class TestTimes:
    @pytest.mark.parametrize("output", ["table", "wide"])
    async def test_audit_events_show_rfc3339_times(
        self, world: World, output: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Event times and the payload's ``*_time`` values (stored as microseconds) are
        RFC 3339 in UTC; no raw microsecond count is printed."""
        command = next(c for c in COMMANDS if c.name == "audit events")
        code, out, err = await run(world, command, "nul", capsys, "-o", output)
        assert code == 0, err
        times = re.findall(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b", out)
        assert len(times) > len(PAYLOADS)
        assert re.search(r"_time=-?\d+\b(?!-)", out) is None
        assert re.search(r"_time=\d{4}-\d\d-\d\dT", out)

    async def test_reviewer_list_shows_rfc3339(
        self, world: World, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A reviewer's registration time is RFC 3339 in UTC."""
        command = next(c for c in COMMANDS if c.name == "reviewer list")
        code, out, err = await run(world, command, "nul", capsys, "-o", "wide")
        assert code == 0, err
        assert re.search(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b", out)
