"""Log lines never carry a raw control, bidi or format character: whatever a field holds (a
caller's subject, a method name, an error that quotes a stored value), every path that
writes a line escapes it as JSON ``\\u`` escapes, and the line decodes back to the value."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from assay.runtime.logging import configure_logging, get_logger, rpc_line
from assay.safe_text import is_unsafe

PAYLOADS = [
    "\x1b[2J",
    "\x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\",
    "\x1b]0;owned\x07",
    "abc\u202edef",
    "\u2066\u2069\u200e\u200f\u061c",
    "\x9b2J",
    "[red]x[/red]",
    "a\x00b",
    "line\r\nbreak\u2028",
    "del\x7f",
]


def ok_line(value: str) -> None:
    rpc_line().ok("/assay.v1.Svc/Do", 1.5, value, "ipv4:127.0.0.1:1", value)


def info_line(value: str) -> None:
    rpc_line().info({"method": "/assay.v1.Svc/Do", "code": "OK", "caller": value})


def warning_line(value: str) -> None:
    rpc_line().warning({"code": "INVALID_ARGUMENT", "message": f"subject {value!s} refused"})


def logger_line(value: str) -> None:
    get_logger("assay.test").info("started", detail=value, nested={"items": [value]})


def long_line(value: str) -> None:
    get_logger("assay.test").info("cut", detail=value * 200)


# Each writer, and what the decoded line holds of the value it was given.
WRITERS: list[tuple[Callable[[str], None], Callable[[dict[str, Any], str], bool]]] = [
    (ok_line, lambda line, value: line["caller"] == value == line["request_id"]),
    (info_line, lambda line, value: line["caller"] == value),
    (warning_line, lambda line, value: line["message"] == f"subject {value} refused"),
    (logger_line, lambda line, value: line["detail"] == value == line["nested"]["items"][0]),
    (long_line, lambda line, value: line["detail"].startswith(value * 3)),
]


class TestLogLinesAreAscii:
    @pytest.mark.parametrize(("write", "holds"), WRITERS, ids=lambda w: getattr(w, "__name__", ""))
    @pytest.mark.parametrize("value", PAYLOADS)
    def test_no_raw_character_and_the_value_round_trips(
        self,
        write: Callable[[str], None],
        holds: Callable[[dict[str, Any], str], bool],
        value: str,
    ) -> None:
        """The line is ASCII JSON with no unsafe character, and decodes back to the value
        (past the field bound, to its start)."""
        out = io.StringIO()
        configure_logging("info", out)
        write(value)
        (line,) = out.getvalue().splitlines()
        assert line.isascii()
        assert not [c for c in line if is_unsafe(c)]
        assert holds(json.loads(line), value)
