"""Every time a table shows is RFC 3339 in UTC to the second, however it was stored."""

from __future__ import annotations

import pytest

from assay.cli.common import micros_time


class TestPayloadTimes:
    @pytest.mark.parametrize(
        ("stored", "shown"),
        [
            ("1780300800123456", "2026-06-01T08:00:00Z"),
            ("0", "1970-01-01T00:00:00Z"),
            ("2026-06-01T08:00:00.123456Z", "2026-06-01T08:00:00Z"),
            ("2026-06-01T10:00:00.5+02:00", "2026-06-01T08:00:00Z"),
        ],
        ids=["micros", "epoch", "rfc3339-micros", "offset"],
    )
    def test_stored_times_are_shown_to_the_second_in_utc(self, stored: str, shown: str) -> None:
        """Microseconds since the epoch and RFC 3339 text alike become one spelling."""
        assert micros_time(stored) == shown

    @pytest.mark.parametrize("stored", ["soon", "2026-06-01T08:00:00", "", "9" * 19])
    def test_anything_else_is_shown_as_stored(self, stored: str) -> None:
        """Text that is not a time with a zone, or is out of range, is left as it is."""
        assert micros_time(stored) == stored
