"""The one rule for showing stored text on a terminal (``assay.safe_text``): what is escaped,
how it reads, that nothing it returns is unsafe, and that data given to ``rich`` through it
is never read as markup, an emoji code or a style."""

from __future__ import annotations

import argparse
import io
import sys
import unicodedata

import pytest
from rich.console import Console
from rich.table import Table

from assay import safe_text
from assay.cli import common
from assay.cli.main import main
from assay.safe_text import escape_char, is_unsafe, markup, printable, text

# (what is stored, how it is shown)
CASES = [
    ("plain ascii", "plain ascii"),
    ("café · naïve — 日本語 🙂", "café · naïve — 日本語 🙂"),
    ("\x1b[2J", "\\x1b[2J"),
    (
        "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\",
        "\\x1b]8;;http://evil\\x1b\\text\\x1b]8;;\\x1b\\",
    ),
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),
    ("abc\u202edef", "abc\\u202edef"),
    ("\u202a\u202b\u202c\u202d", "\\u202a\\u202b\\u202c\\u202d"),
    ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
    ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),
    ("zero\u200bwidth\u200djoin\ufeff", "zero\\u200bwidth\\u200djoin\\ufeff"),
    ("\x9b2J", "\\x9b2J"),
    ("\x85next line", "\\x85next line"),
    ("a\x00b", "a\\x00b"),
    ("bell\x07", "bell\\x07"),
    ("over\rwrite", "over\\x0dwrite"),
    ("two\nlines\ttab", "two\\x0alines\\x09tab"),
    ("del\x7f", "del\\x7f"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    ("tag\U000e0041", "tag\\U000e0041"),
    ("[red]x[/red]", "[red]x[/red]"),
    ("[link=http://evil]x[/link]", "[link=http://evil]x[/link]"),
    ("back\\slash", "back\\slash"),
]
# Every bidi control the finding names, one by one.
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]


class TestPrintable:
    @pytest.mark.parametrize(("stored", "shown"), CASES)
    def test_each_payload_reads_as_its_escape(self, stored: str, shown: str) -> None:
        """Controls, bidi and format characters become visible escapes; the rest is kept."""
        assert printable(stored) == shown

    @pytest.mark.parametrize("char", BIDI, ids=lambda c: f"U+{ord(c):04X}")
    def test_every_bidi_control_is_escaped(self, char: str) -> None:
        """U+202A-U+202E, U+2066-U+2069, U+200E/F and U+061C are each shown as \\uNNNN."""
        assert printable(f"a{char}b") == f"a\\u{ord(char):04x}b"

    def test_no_code_point_survives_unsafe(self) -> None:
        """Over every code point, what ``printable`` returns holds no unsafe character."""
        for start in range(0, sys.maxunicode + 1, 4096):
            chunk = "".join(chr(c) for c in range(start, min(start + 4096, sys.maxunicode + 1)))
            assert not [c for c in printable(chunk) if is_unsafe(c)], hex(start)

    @pytest.mark.parametrize(
        ("char", "escape"),
        [
            ("\x1b", "\\x1b"),
            ("\xad", "\\xad"),
            ("\u202e", "\\u202e"),
            ("\U000e007f", "\\U000e007f"),
        ],
    )
    def test_the_escape_is_sized_to_the_code_point(self, char: str, escape: str) -> None:
        """Two hex digits up to U+00FF, four up to U+FFFF, eight beyond."""
        assert escape_char(char) == escape

    @pytest.mark.parametrize("category", sorted(safe_text.UNSAFE_CATEGORIES))
    def test_the_unsafe_categories(self, category: str) -> None:
        """Each unsafe category has members, and each member is unsafe."""
        members = [chr(c) for c in range(0x30000) if unicodedata.category(chr(c)) == category]
        assert members
        assert all(is_unsafe(c) for c in members)

    def test_other_values_are_shown_as_their_str(self) -> None:
        """A path or number given instead of a string is shown as ``str`` of it."""
        assert printable(12) == "12"


def render(*renderables: object, width: int = 200) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, emoji=False, color_system=None)
    console.print(*renderables)
    return out.getvalue()


class TestRich:
    @pytest.mark.parametrize(("stored", "shown"), CASES)
    def test_markup_interpolation_prints_the_data_as_written(self, stored: str, shown: str) -> None:
        """Data interpolated into a markup line through ``markup`` prints as its escape,
        brackets included, inside a style that still applies."""
        line = render(f"[bold]case[/] {markup(stored)} [red]end[/]")
        assert line == f"case {shown} end\n"

    @pytest.mark.parametrize("stored", ["ends with a backslash\\", "\\[red]x\\[/red]", "\\\\[b]"])
    def test_backslashes_cannot_reopen_markup(self, stored: str) -> None:
        """A backslash before a tag, or at the end of the data, does not unescape the
        markup that follows the data."""
        assert render(f"{markup(stored)}[red]!") == f"{stored}!\n"

    @pytest.mark.parametrize(("stored", "shown"), CASES)
    def test_text_is_never_parsed(self, stored: str, shown: str) -> None:
        """``text`` is a ``Text`` whose plain string is the escape."""
        assert text(stored).plain == shown
        assert render(text(stored)) == f"{shown}\n"

    def test_emoji_codes_in_data_stay_words(self) -> None:
        """The CLI's console does not turn ``:warning:`` in data into an emoji."""
        common.configure_output(argparse.Namespace(output="table"))
        assert common.console().print is not None
        out = io.StringIO()
        console = common.console()
        console.file = out
        console.print(f"note {markup(':warning: :smile:')}")
        assert out.getvalue() == "note :warning: :smile:\n"


class TestTables:
    @pytest.mark.parametrize(("stored", "shown"), CASES)
    def test_string_cells_are_data(self, stored: str, shown: str) -> None:
        """``print_table`` shows a string cell through ``safe_text``: its escape, on one
        line, never styled or linked."""
        common.configure_output(argparse.Namespace(output="wide"))
        try:
            table = Table("id", "subject")
            table.add_row("case_1", stored)
            out = io.StringIO()
            console = common.console()
            console.file = out
            common.print_table(table, console)
        finally:
            common.configure_output(argparse.Namespace(output="table"))
        shown_lines = [line for line in out.getvalue().splitlines() if "case_1" in line]
        assert len(shown_lines) == 1
        assert shown in shown_lines[0]
        assert not [c for c in out.getvalue() if is_unsafe(c) and c != "\n"]

    def test_words_are_kept_whole_at_80_columns(self) -> None:
        """A column wraps between words, so every word of every cell is on one line."""
        table = Table("#", "probe → signal", "availability", "discrimination")
        words = ["bounded_replay_experiment", "filesystem_write_worktree,", "leader_changed"]
        table.add_row(
            "1", f"{words[0]} → tool_trace", f"grant {words[1]} network_call", f"high: {words[2]}"
        )
        out = io.StringIO()
        console = Console(file=out, width=80, emoji=False, highlight=False)
        common.print_table(table, console)
        lines = out.getvalue().splitlines()
        assert max(len(line) for line in lines) <= 80
        for word in words:
            assert any(word in line for line in lines), word


class TestErrorLines:
    @pytest.mark.parametrize(("stored", "shown"), CASES)
    def test_a_cli_error_is_printable(self, stored: str, shown: str) -> None:
        """A ``CliError`` quoting a server's or a file's text holds its escape."""
        assert str(common.CliError(f"refused: {stored}")) == f"refused: {shown}"

    def test_the_error_line_on_stderr(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A file name with an escape sequence in it is named escaped on stderr, one line."""
        code = main(["resolve", "/nonexistent/\x1b[2J\u202e.json"])
        err = capsys.readouterr().err
        assert code == common.EXIT_FAILED
        assert "/nonexistent/\\x1b[2J\\u202e.json" in err
        assert not [c for c in err if is_unsafe(c) and c != "\n"]
        assert err.count("\n") == 1
