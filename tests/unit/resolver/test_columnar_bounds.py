"""A ResolveColumns stream is measured from its headers, and held to the limits, before
anything in it is decompressed: the measure equals what pyarrow then reads, and every
limit's refusal names the limit, its flag and the numbers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from assay.errors import InvalidArgument, Reason, ResourceExhausted
from assay.services.resolver.columnar import resolve_stream
from assay.services.resolver.columnar.input import bounds
from assay.services.resolver.columnar.input.ipc_headers import HeaderError, record_batch
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.domain.request_cost import (
    MAX_COLUMNS_BYTES,
    MAX_COLUMNS_RATIO,
    MAX_COLUMNS_ROWS,
    RATIO_FLOOR_BYTES,
    ColumnsLimits,
    charge_columns,
)
from tests.support.arrow_bombs import identical, ipc, varied

DEFAULTS = ColumnsLimits()
ROOMY = ColumnsLimits(max_ratio=1_000_000)  # measures compressed bombs without refusing them


def refusal(data: bytes, limits: ColumnsLimits = DEFAULTS) -> ResourceExhausted:
    with pytest.raises(ResourceExhausted) as raised:
        bounds.survey(data, limits)
    return raised.value


class TestSurvey:
    @pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
    @pytest.mark.parametrize(
        ("table", "batches"),
        [
            pytest.param(varied(1_000), 1, id="varied-one-batch"),
            pytest.param(varied(10_000), 7, id="varied-seven-batches"),
            pytest.param(identical(50_000), 3, id="identical-dictionaries"),
        ],
    )
    def test_the_measure_is_what_pyarrow_reads(
        self, table: pa.Table, batches: int, codec: str | None
    ) -> None:
        """Rows, decompressed bytes and codec from the headers equal pyarrow's reading."""
        data = ipc(table, codec, batches)
        surveyed = bounds.survey(data, ROOMY)
        read = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
        assert surveyed.rows == read.num_rows == table.num_rows
        assert surveyed.decompressed == read.get_total_buffer_size()
        assert surveyed.codec == codec
        assert surveyed.problem is None

    def test_a_compressed_bomb_declares_what_it_hides(self) -> None:
        """A million identical rows in a few kilobytes of ZSTD declare their 24 MB."""
        data = ipc(identical(1_000_000), "zstd")
        assert len(data) < 8 * 1024
        surveyed = bounds.survey(data, ROOMY)
        assert surveyed.rows == 1_000_000
        assert surveyed.decompressed > 24_000_000

    @pytest.mark.parametrize(
        "data",
        [b"", b"not arrow at all", b"\xff\xff\xff\xff\x10\x00\x00\x00" + b"\x00" * 4],
        ids=["empty", "text", "truncated"],
    )
    def test_bytes_that_are_no_stream_are_left_to_the_reader(self, data: bytes) -> None:
        """The survey counts nothing and the stream is refused as malformed, as before."""
        assert bounds.survey(data, DEFAULTS).rows == 0
        with pytest.raises(InvalidArgument) as raised:
            resolve_stream(data, DEFAULT_POLICY)
        assert raised.value.reason == Reason.MALFORMED_REQUEST

    def test_the_walk_checks_its_stop(self) -> None:
        """A stream of many messages calls ``check`` as it walks, which may abandon it."""
        data = ipc(varied(bounds.CHECK_EVERY * 2), batches=bounds.CHECK_EVERY * 2)

        class Stopped(Exception):
            pass

        def check() -> None:
            raise Stopped

        with pytest.raises(Stopped):
            bounds.survey(data, DEFAULTS, check)

    def test_a_header_pointing_outside_its_metadata_is_an_error(self) -> None:
        """Metadata too short for the table it declares raises HeaderError."""
        with pytest.raises(HeaderError):
            record_batch(b"\x04\x00\x00\x00")


class TestLimits:
    def test_the_findings_bombs_are_refused(self) -> None:
        """The hostile test's 1,000,000 rows in ~3 KB pass the ratio; 2,000,000 the rows."""
        ratio = refusal(ipc(identical(1_000_000), "zstd"))
        assert ratio.metadata["limit_name"] == "columns_max_ratio"
        rows = refusal(ipc(identical(2_000_000), "zstd"))
        assert rows.metadata["limit_name"] == "columns_max_rows"
        assert rows.metadata["requested"] == "2000000"
        assert rows.metadata["limit"] == str(MAX_COLUMNS_ROWS)

    def test_refused_at_the_first_message_past_a_limit(self) -> None:
        """Four batches of 3,000 rows against 5,000: refused at the second, counting 6,000."""
        data = ipc(varied(12_000), batches=4)
        error = refusal(data, ColumnsLimits(max_rows=5_000))
        assert error.metadata["requested"] == "6000"

    @pytest.mark.parametrize(
        ("limits", "data", "name", "words"),
        [
            pytest.param(
                ColumnsLimits(max_rows=999),
                ipc(varied(1_000)),
                "columns_max_rows",
                ("at least 1,000 rows", "at most 999", "--columns-max-rows"),
                id="rows",
            ),
            pytest.param(
                ColumnsLimits(max_bytes=10_000),
                ipc(varied(1_000)),
                "columns_max_bytes",
                ("decompresses to at least", "at most 10,000", "--columns-max-bytes"),
                id="bytes",
            ),
            pytest.param(
                DEFAULTS,
                ipc(identical(20_000, source_ref=pa.array(["r" * 100] * 20_000)), "zstd"),
                "columns_max_ratio",
                (f"at most {MAX_COLUMNS_RATIO}x", "--columns-max-ratio"),
                id="ratio",
            ),
        ],
    )
    def test_each_limit_is_named_with_its_numbers(
        self, limits: ColumnsLimits, data: bytes, name: str, words: tuple[str, ...]
    ) -> None:
        """RESOURCE_EXHAUSTED's reason, metadata, field and message say which limit."""
        error = refusal(data, limits)
        assert error.reason == Reason.REQUEST_TOO_EXPENSIVE
        assert error.metadata["limit_name"] == name
        assert int(error.metadata["requested"]) > int(error.metadata["limit"])
        assert [v.field for v in error.violations] == ["claims_arrow"]
        assert error.message.startswith("claims_arrow: ")
        for word in words:
            assert word in error.message

    @pytest.mark.parametrize(
        ("rows", "decompressed", "received", "refused_by"),
        [
            (MAX_COLUMNS_ROWS, MAX_COLUMNS_BYTES, MAX_COLUMNS_BYTES, None),
            (MAX_COLUMNS_ROWS + 1, 0, 1, "columns_max_rows"),
            (1, MAX_COLUMNS_BYTES + 1, MAX_COLUMNS_BYTES, "columns_max_bytes"),
            (1, RATIO_FLOOR_BYTES, 1, None),
            (1, RATIO_FLOOR_BYTES + 1, 1, "columns_max_ratio"),
            (1, MAX_COLUMNS_RATIO * 100_000, 100_000, None),
            (1, MAX_COLUMNS_RATIO * 100_000 + 1, 100_000, "columns_max_ratio"),
        ],
    )
    def test_each_limit_is_inclusive(
        self, rows: int, decompressed: int, received: int, refused_by: str | None
    ) -> None:
        """A stream at a limit passes; one past it is refused by that limit."""
        if refused_by is None:
            charge_columns(DEFAULTS, rows, decompressed, received)
            return
        with pytest.raises(ResourceExhausted) as raised:
            charge_columns(DEFAULTS, rows, decompressed, received)
        assert raised.value.metadata["limit_name"] == refused_by

    def test_limits_left_unset_are_the_defaults(self) -> None:
        """``ColumnsLimits.of`` keeps the default of each limit given as None."""
        assert ColumnsLimits.of(None, None, None) == DEFAULTS
        assert ColumnsLimits.of(5, None, 2) == ColumnsLimits(5, MAX_COLUMNS_BYTES, 2)

    def test_resolve_stream_holds_the_stream_to_its_limits(self) -> None:
        """The use case refuses before reading; within the limits it resolves."""
        data = ipc(varied(2_000), "zstd")
        with pytest.raises(ResourceExhausted):
            resolve_stream(data, DEFAULT_POLICY, limits=ColumnsLimits(max_rows=1_999))
        answer = resolve_stream(data, DEFAULT_POLICY, limits=ColumnsLimits(max_rows=2_000))
        assert answer.tables.semantics
