"""The finding commands' flags read as documented: times as RFC 3339 or an age, and a
listing that keeps asking past short pages until the server has no more."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from assay.cli import finding_cmds
from assay.cli.common import CliError
from assay.v1 import adjudication_service_pb2 as pb

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class TestParseTime:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-05-31T09:30:00Z", datetime(2026, 5, 31, 9, 30, tzinfo=UTC)),
            ("2026-05-31T11:30:00+02:00", datetime(2026, 5, 31, 9, 30, tzinfo=UTC)),
            ("2026-05-31T09:30:00.250z", datetime(2026, 5, 31, 9, 30, 0, 250_000, tzinfo=UTC)),
            ("90s", NOW - timedelta(seconds=90)),
            ("30m", NOW - timedelta(minutes=30)),
            ("24h", NOW - timedelta(days=1)),
            ("7d", NOW - timedelta(days=7)),
            ("2W", NOW - timedelta(weeks=2)),
        ],
    )
    def test_rfc3339_or_an_age(self, text: str, expected: datetime) -> None:
        """Each accepted form gives the instant it names, in UTC."""
        found = finding_cmds.parse_time(text, NOW)
        assert found == expected
        assert found.tzinfo == UTC

    @pytest.mark.parametrize("text", ["yesterday", "2026-05-31T09:30:00", "24", "-3h", "1y"])
    def test_anything_else_is_a_usage_error(self, text: str) -> None:
        """A time without a zone, a bare number or an unknown unit is refused, saying why."""
        with pytest.raises(argparse.ArgumentTypeError):
            finding_cmds.parse_time(text, NOW)


def _args(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(**{"limit": 50, "all": False, **given})


class _Pages:
    """A server whose pages are given in advance; records the requests it was sent."""

    def __init__(self, pages: list[list[str]]) -> None:
        self.pages = pages
        self.sent: list[pb.ListCasesRequest] = []

    def __call__(self, args: argparse.Namespace, name: str, request: Any) -> Any:
        assert name == "ListCases"
        self.sent.append(request)
        index = int(request.page_token or "0")
        more = str(index + 1) if index + 1 < len(self.pages) else ""
        cases = [pb.CaseSummary(case_id=c) for c in self.pages[index]]
        return pb.ListCasesResponse(cases=cases, next_page_token=more)


class TestCollect:
    def test_short_and_empty_pages_are_not_the_end(self) -> None:
        """Pages of one, none and two are followed to the last, with the filters each time."""
        server = _Pages([["a"], [], ["b", "c"]])
        first = pb.ListCasesRequest(predicate="p")
        found = finding_cmds.collect(_args(), server, "ListCases", first, "cases")
        assert [c.case_id for c in found] == ["a", "b", "c"]
        assert [r.predicate for r in server.sent] == ["p", "p", "p"]
        assert first.page_token == ""

    def test_limit_stops_early_and_all_does_not(self) -> None:
        server = _Pages([["a", "b"], ["c", "d"], ["e"]])
        found = finding_cmds.collect(
            _args(limit=3), server, "ListCases", pb.ListCasesRequest(), "cases"
        )
        assert [c.case_id for c in found] == ["a", "b", "c"]
        assert [r.page_size for r in server.sent] == [3, 1]
        everything = finding_cmds.collect(
            _args(all=True), _Pages([["a", "b"], ["c", "d"], ["e"]]), "ListCases",
            pb.ListCasesRequest(), "cases",
        )  # fmt: skip
        assert len(everything) == 5

    def test_a_limit_below_one_is_refused(self) -> None:
        with pytest.raises(CliError):
            finding_cmds.collect(
                _args(limit=0), _Pages([[]]), "ListCases", pb.ListCasesRequest(), "cases"
            )
