"""The progress bar of long CLI work: on stderr only, and only once the work takes a while."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from assay.cli.progress import progress
from tests.support.eventually import eventually


def terminal() -> tuple[Console, io.StringIO]:
    sink = io.StringIO()
    return Console(file=sink, force_terminal=True, width=100), sink


def test_work_that_takes_a_while_shows_its_label_and_count() -> None:
    out, sink = terminal()
    with progress("exporting gold labels", enabled=True, unit="records", out=out, after=0) as step:
        step(1234)
        eventually(lambda: "exporting gold labels" in sink.getvalue(), message="the label drawn")
    assert "1,234 records" in sink.getvalue()


def test_a_bar_with_a_total_counts_against_it() -> None:
    out, sink = terminal()
    with progress("enqueueing cases", 2100, enabled=True, out=out, after=0) as step:
        step(1000)
        eventually(lambda: "1,000/2,100" in sink.getvalue(), message="the count drawn")


def test_quick_work_shows_nothing() -> None:
    out, sink = terminal()
    with progress("sweeping expired cases", enabled=True, out=out, after=60) as step:
        step(1)
    assert sink.getvalue() == ""


def test_disabled_writes_nowhere(capsys: pytest.CaptureFixture[str]) -> None:
    with progress("exporting gold labels", enabled=False, after=0) as step:
        step(5)
    assert capsys.readouterr() == ("", "")


def test_by_default_the_bar_goes_to_stderr_never_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output piped on (``assay export --out - | …``) must stay clean."""
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws as on a terminal
    out, err = io.StringIO(), io.StringIO()

    def drawn() -> bool:
        captured = capsys.readouterr()
        out.write(captured.out)
        err.write(captured.err)
        return "exporting gold labels" in err.getvalue()

    with progress("exporting gold labels", enabled=True, unit="records", after=0) as step:
        step(7)
        eventually(drawn, message="the label drawn on stderr")
    drawn()
    assert "7 records" in err.getvalue()
    assert out.getvalue() == ""
