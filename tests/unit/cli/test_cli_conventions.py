"""The conventions every ``assay`` command keeps, checked on the parser and the pure helpers:
an example in each ``--help``, ``-o table|wide|json|jsonl`` on each command that prints
results, documented exit codes, ``-`` for standard input and output, completion scripts,
and tables that never cut an id at 80 columns."""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import grpc
import pytest

from assay.cli import adjudication_render as render
from assay.cli import common
from assay.cli.adjudication_cmds import read_cases
from assay.cli.completion_cmds import SHELLS, script
from assay.cli.examples import subcommands
from assay.cli.main import build_parser, main
from assay.cli.planner_cmds import load_plan_request
from assay.client import DataLossError, NotFoundError
from assay.v1 import adjudication_service_pb2 as pb
from assay.v1 import gold_pb2

ROOT = Path(__file__).resolve().parents[3]
# Commands that print no result to choose a format for: servers, set-up, the walkthrough.
NO_RESULT = {"serve", "up", "dev-credentials", "demo", "completion", "context add", "context use"}


def leaves() -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for path, sub in subcommands(build_parser()):
        if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
            found.append((" ".join(path), sub))
    return found


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for action in parser._actions for o in action.option_strings}


@pytest.fixture(autouse=True)
def table_output() -> None:
    """Each test starts from the default output (``configure_output`` is process-wide)."""
    common.configure_output(argparse.Namespace(output="table"))


class TestHelp:
    @pytest.mark.parametrize("path", [p for p, _ in subcommands(build_parser())], ids=str)
    def test_every_command_has_an_example(self, path: tuple[str, ...]) -> None:
        """Each subcommand's --help (groups included) ends with an Example section."""
        sub = dict(subcommands(build_parser()))[path]
        text = sub.format_help()
        assert "Example:\n  assay " in text, " ".join(path)

    def test_the_top_level_help_documents_the_exit_codes(self) -> None:
        """`assay --help` lists 0, 1, 2, 3, 4, 5 and 130 with what each means."""
        text = build_parser().format_help()
        for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "130"):
            assert f"\n  {code}" in text
        assert "verification failed" in text

    def test_docs_cli_md_has_the_same_exit_codes_as_the_help(self) -> None:
        """docs/cli.md carries the help's exit-code table word for word."""
        doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
        assert common.EXIT_CODES_HELP in doc


class TestOutputOption:
    def test_every_command_that_prints_results_takes_o(self) -> None:
        """All commands but servers, set-up and the demo take -o, --json and --jsonl."""
        missing = [
            name
            for name, sub in leaves()
            if name not in NO_RESULT and not {"-o", "--json", "--jsonl"} <= options(sub)
        ]
        assert missing == []

    @pytest.mark.parametrize(
        ("flags", "output"),
        [
            ([], "table"),
            (["-o", "wide"], "wide"),
            (["--json"], "json"),
            (["-o", "json"], "json"),
            (["--jsonl"], "jsonl"),
            (["--output", "jsonl"], "jsonl"),
        ],
    )
    def test_aliases_are_the_same_choice(self, flags: list[str], output: str) -> None:
        """--json is -o json and --jsonl is -o jsonl; args.json/jsonl follow -o."""
        args = build_parser().parse_args(["queue", "--reviewer", "ann", *flags])
        common.configure_output(args)
        assert (args.output, args.json, args.jsonl) == (
            output,
            output == "json",
            output == "jsonl",
        )

    def test_two_formats_at_once_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--json with --jsonl exits 2, like any command line argparse refuses."""
        with pytest.raises(SystemExit) as stopped:
            main(["queue", "--reviewer", "ann", "--json", "--jsonl"])
        assert stopped.value.code == common.EXIT_USAGE
        assert "not allowed with" in capsys.readouterr().err

    def test_jsonl_prints_one_item_per_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        """-o jsonl: one compact JSON document per item, enums by name."""
        items = [
            pb.Reviewer(reviewer_id=f"r{i}", kind=gold_pb2.REVIEWER_KIND_HUMAN) for i in range(3)
        ]
        args = argparse.Namespace(output="jsonl")
        common.emit(args, pb.ListReviewersResponse(reviewers=items), lambda: None, items)
        lines = capsys.readouterr().out.splitlines()
        assert [json.loads(line)["reviewerId"] for line in lines] == ["r0", "r1", "r2"]
        assert json.loads(lines[0])["kind"] == "REVIEWER_KIND_HUMAN"


def blinded(n: int) -> list[pb.BlindedCase]:
    return [
        pb.BlindedCase(
            case_id=f"case_{i:016x}{'f' * 8}",
            round=1,
            subject="api:payments.create",
            predicate="idempotency.mode",
            evidence_refs=["claim-1", "claim-2"],
            context="two sources disagree about the idempotency mode of this endpoint",
        )
        for i in range(n)
    ]


class TestTablesKeepIdsWhole:
    def test_a_queue_at_80_columns_shows_every_id_whole(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """At 80 columns the other columns wrap; each case id is on one line, uncut."""
        monkeypatch.setenv("COLUMNS", "80")
        found = blinded(3)
        render.queue("ann", found)
        out = capsys.readouterr().out
        assert max(len(line) for line in out.splitlines()) <= 80
        for case in found:
            assert case.case_id in out
        assert "…" not in out

    def test_wide_puts_each_row_on_one_line_and_digests_whole(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """-o wide: one line per row, however narrow the terminal; digests not shortened."""
        monkeypatch.setenv("COLUMNS", "80")
        common.configure_output(argparse.Namespace(output="wide"))
        render.queue("ann", blinded(2))
        rows = [line for line in capsys.readouterr().out.splitlines() if "case_" in line]
        assert len(rows) == 2
        assert all("two sources disagree about the idempotency mode" in row for row in rows)
        digest = "sha256:" + "ab" * 32
        assert common.short(digest) == digest
        common.configure_output(argparse.Namespace(output="table"))
        assert common.short(digest) == digest[:19] + "…"


class TestStdio:
    CASE: ClassVar[dict[str, Any]] = {
        "tenant": "t",
        "subject": "api:x",
        "predicate": "p",
        "candidateValues": ["a", "b"],
    }

    def test_cases_from_standard_input(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """`assay case enqueue -` reads the cases from standard input."""
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps([self.CASE, self.CASE])))
        cases, many = read_cases("-")
        assert many
        assert [c.subject for c in cases] == ["api:x", "api:x"]

    def test_a_plan_request_from_standard_input(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """`assay plan -` reads the request from standard input."""
        text = (ROOT / "examples" / "plan" / "capability-gap.json").read_text(encoding="utf-8")
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        assert load_plan_request("-").subject

    def test_evidence_from_standard_input(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """`assay resolve -` reads the evidence from standard input; bad JSON is a CliError."""
        text = (ROOT / "examples" / "evidence" / "corroborated.json").read_text(encoding="utf-8")
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        assert len(common.read_evidence("-").claims) > 0
        monkeypatch.setattr("sys.stdin", io.StringIO("{nope"))
        with pytest.raises(common.CliError, match="<stdin>"):
            common.read_evidence("-")

    def test_dash_writes_to_standard_output(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An output file of `-` is standard output (`audit checkpoint --out -`)."""
        common.write_text("-", "a signed note\n")
        assert capsys.readouterr().out == "a signed note\n"


class TestExitCodes:
    def test_an_unknown_flag_exits_2(self) -> None:
        """argparse's usage error: 2."""
        with pytest.raises(SystemExit) as stopped:
            main(["policy", "--no-such-flag"])
        assert stopped.value.code == 2

    def test_flags_that_do_not_go_together_exit_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A contradiction the command finds after parsing is a usage error too."""
        evidence = str(ROOT / "examples" / "evidence" / "corroborated.json")
        assert main(["resolve", evidence, "--subject", "x"]) == common.EXIT_USAGE
        assert "--predicate" in capsys.readouterr().err

    def test_an_unreachable_service_exits_1(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A call that fails (here: nothing listens) is 1, not a usage error."""
        code = main(["policy", "--target", "127.0.0.1:1", "--timeout", "5"])
        assert code == common.EXIT_FAILED
        assert "not reachable" in capsys.readouterr().err

    def test_a_failed_offline_verification_exits_3(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """verify-export of a manifest without a checkpoint: the data is wrong, so 3."""
        corpus = tmp_path / "corpus.jsonl"
        corpus.write_text("")
        (tmp_path / "corpus.jsonl.manifest.json").write_text("{}")
        key = tmp_path / "key.pem"
        key.write_text("unused")
        code = main(["audit", "verify-export", str(corpus), "--public-key", str(key)])
        assert code == common.EXIT_VERIFICATION_FAILED
        assert "no checkpoint" in capsys.readouterr().err

    @pytest.mark.parametrize(
        ("error", "code"),
        [
            (DataLossError(grpc.StatusCode.DATA_LOSS, "chain broken"), 3),
            (NotFoundError(grpc.StatusCode.NOT_FOUND, "no case x"), 1),
        ],
    )
    def test_a_server_reporting_data_loss_exits_3(self, error: Exception, code: int) -> None:
        """DATA_LOSS from the library's typed errors is a failed verification (3); other
        refusals are 1."""

        def fail() -> None:
            raise error

        with pytest.raises(common.CliError) as raised:
            common.call("adjudication", "127.0.0.1:1", fail)
        assert raised.value.exit_code == code


class TestCompletion:
    COMMANDS = ("resolve", "plan", "queue", "enqueue", "verify-export", "approval", "completion")

    @pytest.mark.parametrize("shell", SHELLS)
    def test_the_script_names_the_subcommands(self, shell: str) -> None:
        """bash, zsh and fish scripts each name the commands and nested subcommands."""
        text = script(shell)
        for name in self.COMMANDS:
            assert name in text, (shell, name)

    def test_bash_accepts_the_bash_script(self, tmp_path: Path) -> None:
        """`bash -n` parses the generated script."""
        bash = shutil.which("bash")
        if bash is None:
            pytest.skip("bash is not installed")
        path = tmp_path / "assay.bash"
        path.write_text(script("bash"))
        done = subprocess.run([bash, "-n", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr

    def test_the_command_prints_the_script(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`assay completion zsh` prints what ``script`` makes."""
        assert main(["completion", "zsh"]) == 0
        assert capsys.readouterr().out == script("zsh")
