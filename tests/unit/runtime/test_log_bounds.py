"""No log line grows with the input: every field is cut to a bound, with a marker saying
how much was cut, for lines through structlog and for the per-RPC line alike."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from assay.runtime.logging import (
    MAX_FIELD_CHARS,
    MAX_FIELD_ITEMS,
    MAX_TRACEBACK_CHARS,
    bounded_fields,
    configure_logging,
    get_logger,
    rpc_line,
)

MIB = 1 << 20
MARKER_ROOM = 40  # "…[1048064 chars cut]…"


@pytest.fixture
def stream() -> io.StringIO:
    out = io.StringIO()
    configure_logging("info", out)
    return out


def only_line(stream: io.StringIO) -> tuple[str, dict[str, Any]]:
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1, lines
    return lines[0], json.loads(lines[0])


class TestBoundedFields:
    def test_short_fields_pass_unchanged(self) -> None:
        """Strings within the bound, numbers, booleans and None are left as they are."""
        fields = {"a": "x" * MAX_FIELD_CHARS, "b": 3, "c": 1.5, "d": True, "e": None}
        assert bounded_fields(fields) == fields

    def test_long_string_keeps_both_ends_and_says_how_much_was_cut(self) -> None:
        """A 1 MiB string keeps its first and last characters around the count it lost."""
        value = "<" + "x" * MIB + ">"
        cut = bounded_fields({"error": value})["error"]
        assert len(cut) <= MAX_FIELD_CHARS + MARKER_ROOM
        assert cut.startswith("<xx")
        assert cut.endswith("xx>")
        kept = MAX_FIELD_CHARS // 2 * 2
        assert f"…[{len(value) - kept} chars cut]…" in cut

    def test_traceback_gets_more_room_and_keeps_its_end(self) -> None:
        """``exception`` (a formatted traceback) is cut at its own, larger bound; the
        innermost frame and the message at the end survive."""
        value = "Traceback (most recent call last):\n" + "  frame\n" * 100_000 + "KeyError: 'k'"
        cut = bounded_fields({"exception": value})["exception"]
        assert MAX_FIELD_CHARS < len(cut) <= MAX_TRACEBACK_CHARS + MARKER_ROOM
        assert cut.startswith("Traceback")
        assert cut.endswith("KeyError: 'k'")

    def test_containers_keep_a_few_bounded_items(self) -> None:
        """A long list keeps its first items and counts the rest; a dict likewise; strings
        inside either are cut too."""
        fields = {
            "items": ["y" * MIB, *range(100_000)],
            "map": {f"k{i}": i for i in range(1000)},
        }
        bounded = bounded_fields(fields)
        items = bounded["items"]
        assert len(items) == MAX_FIELD_ITEMS + 1
        assert len(items[0]) <= MAX_FIELD_CHARS + MARKER_ROOM
        assert items[-1] == f"…[{100_001 - MAX_FIELD_ITEMS} more items cut]"
        assert len(bounded["map"]) == MAX_FIELD_ITEMS + 1
        assert bounded["map"]["…"] == f"{1000 - MAX_FIELD_ITEMS} more entries cut"

    def test_deep_and_odd_values_become_short_text(self) -> None:
        """Nesting past the depth bound, bytes, huge integers and objects become short text."""
        nested: list[Any] = []
        nested.append(nested)  # a circular list
        fields = {"deep": nested, "raw": b"\x00" * MIB, "big": 1 << 100_000, "obj": object()}
        line = json.dumps(bounded_fields(fields))
        assert len(line) < 4 * MAX_FIELD_CHARS
        assert "<int of 100001 bits>" in line


class TestLinesStayShort:
    def test_structlog_line_with_a_huge_message_and_field(self, stream: io.StringIO) -> None:
        """A line whose event and field are each 1 MiB is written short, both cut."""
        get_logger("t").warning("e" * MIB, value="v" * MIB, count=3)
        line, parsed = only_line(stream)
        assert len(line) < 3 * (MAX_FIELD_CHARS + MARKER_ROOM)
        assert "chars cut" in parsed["event"]
        assert "chars cut" in parsed["value"]
        assert parsed["count"] == 3
        assert parsed["level"] == "warning"

    def test_exception_with_a_huge_message(self, stream: io.StringIO) -> None:
        """An exception whose message is 1 MiB logs a bounded traceback ending in it."""
        try:
            raise ValueError("bad value " + "x" * MIB + " end")
        except ValueError as error:
            get_logger("t").error("rpc_unhandled_exception", exc_info=error)
        line, parsed = only_line(stream)
        assert len(line) < MAX_TRACEBACK_CHARS + 2 * MAX_FIELD_CHARS
        assert parsed["exception"].startswith("Traceback")
        assert parsed["exception"].endswith(" end")

    def test_rpc_line_with_a_huge_error(self, stream: io.StringIO) -> None:
        """The per-RPC line (written past structlog's dispatch) is bounded the same way."""
        rpc_line().warning(
            {"method": "/m", "code": "INVALID_ARGUMENT", "error": "echo " + "q" * MIB}
        )
        line, parsed = only_line(stream)
        assert len(line) < 2 * (MAX_FIELD_CHARS + MARKER_ROOM)
        assert parsed["error"].startswith("echo qq")
        assert parsed["event"] == "rpc"
        assert parsed["code"] == "INVALID_ARGUMENT"

    def test_short_rpc_line_is_plain_json(self, stream: io.StringIO) -> None:
        """A line with nothing to cut is written exactly as JSON renders it."""
        rpc_line().info({"method": "/m", "code": "OK", "duration_ms": 1.5})
        line, parsed = only_line(stream)
        assert json.dumps(parsed, sort_keys=True) == line
        assert "cut" not in line
