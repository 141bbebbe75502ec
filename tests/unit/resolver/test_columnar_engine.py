"""The columnar engine on plain values: pyarrow tables in, arrays out, no protobuf anywhere."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import InvalidArgument, Reason, ResourceExhausted
from assay.prototime import MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS
from assay.services.resolver.columnar import resolve_stream
from assay.services.resolver.columnar.engine.vectorized import Resolved, resolve_table
from assay.services.resolver.columnar.input import decode, distinct, stream
from assay.services.resolver.domain.model import Flag, Status, WarningCode
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.domain.validation import raise_if_any

TABLE = dict(DEFAULT_POLICY.reliability)
# The rows of each table for three claims of one value in three groups (the test below).
ROWS_OF = {"semantics": 1, "values": 1, "excluded": 0, "claims": 3, "groups": 3, "warnings": 0}


def resolve(columns: dict[str, Any], horizon: float | None = None, full: bool = True) -> Resolved:
    """Decode, validate and resolve a table given as plain columns."""
    table = pa.table(columns)
    assert not stream.check_schema(table.schema)
    raw = decode.read_raw(table.combine_chunks(), TABLE)
    raise_if_any(decode.violations(raw, TABLE), TABLE)
    claims = decode.columns(raw, TABLE)

    def refs(rows: Any) -> list[str]:
        return claims.ids.texts(np.asarray(rows, dtype=np.int64))

    return resolve_table(claims, DEFAULT_POLICY, horizon, refs=refs, full=full)


def claims(n: int, **columns: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": [f"c{i}" for i in range(n)],
        "subject": ["s"] * n,
        "predicate": ["p"] * n,
        "value": ['"a"'] * n,
        "source": ["human_review"] * n,
        "confidence": [1.0] * n,
    }
    base.update(columns)
    return base


class TestFusion:
    def test_a_certain_group_gives_support_one_exactly(self) -> None:
        """w == 1 in any group makes the support exactly 1 (1 - Π(1 - w), no logarithms)."""
        out = resolve(claims(3, source_ref=["a", "b", "c"], confidence=[1.0, 0.5, 0.25]))
        assert out.support.tolist() == [1.0]

    def test_supports_multiply_strongest_first(self) -> None:
        """Three groups: 1 - (1 - w1)(1 - w2)(1 - w3) in descending weight order."""
        weights = [0.3, 0.9, 0.6]
        out = resolve(claims(3, source_ref=["a", "b", "c"], confidence=weights))
        remaining = 1.0
        for w in sorted(weights, reverse=True):
            remaining *= 1.0 - w
        assert out.support.tolist() == [1.0 - remaining]

    def test_one_claim_per_group_counts_and_ties_go_to_the_lowest_id(self) -> None:
        """Two equally strong claims of one group: the lower id counts."""
        out = resolve(claims(3, id=["z", "b", "m"], confidence=[0.5, 0.9, 0.9]))
        assert out.counted.tolist() == [False, True, False]
        assert out.group_counted_row.tolist() == [1]
        assert out.support.tolist() == [0.9]

    def test_equal_texts_are_one_value_and_leader_ties_go_to_the_lowest_key(self) -> None:
        """ "1" and "1.0" are one value; equal supports: the lower value_key leads, CONFLICTED."""
        out = resolve(
            claims(3, value=["2", "1", "1.0"], source_ref=["a", "b", "b"], confidence=[0.5] * 3)
        )
        assert out.value_keys.to_pylist() == ["1", "2"]
        assert out.status.tolist() == [Status.CONFLICTED]
        assert out.leader.tolist() == [0]

    def test_the_margin_has_a_tolerance(self) -> None:
        """0.7 against 0.5 is a gap of 0.2 on paper: CONFLICTED, as the reference says."""
        out = resolve(claims(2, value=['"a"', '"b"'], source_ref=["x", "y"], confidence=[0.7, 0.5]))
        assert out.status.tolist() == [Status.CONFLICTED]

    def test_semantics_are_ordered_and_flags_raised(self) -> None:
        """Semantics by subject then predicate; a stale, undeclared, corroborated leader."""
        out = resolve(
            claims(
                4,
                subject=["b", "a", "a", "a"],
                source=["llm_inference"] * 4,
                source_ref=["x", "x", "y", "y"],
                observe_time=pa.array([None, 10, 20, None], pa.timestamp("s")),
            ),
            horizon=100.0,
        )
        assert out.subjects.to_pylist() == ["a", "b"]
        flags = {Flag(number + 1): rows.tolist() for number, rows in enumerate(out.rationale)}
        assert flags[Flag.ALL_SUPPORT_DISCOUNTED] == [0, 1]
        assert flags[Flag.INDEPENDENCE_UNVERIFIED] == [0]
        assert flags[Flag.STALE_SUPPORT] == [0, 1]
        assert flags[Flag.SINGLE_SOURCE_CORROBORATION] == []

    def test_cycles_and_dangling_relations(self) -> None:
        """A supersession cycle drops both claims with a warning each; a dangling one warns."""
        out = resolve(
            claims(
                3,
                relation_kind=pa.array([3, 3, 1], pa.int32()),
                relation_target=["c1", "c0", "ghost"],
            )
        )
        assert out.excluded_row.tolist() == [0, 1]
        assert out.superseded_by.as_dict() == {0: ("c1",), 1: ("c0",)}
        assert [(row, code) for row, code, _ in out.warnings] == [
            (0, WarningCode.SUPERSESSION_CYCLE),
            (1, WarningCode.SUPERSESSION_CYCLE),
            (2, WarningCode.DANGLING_RELATION),
        ]

    def test_supersessions_without_cycles_list_every_superseder_sorted(self) -> None:
        """Three claims supersede c0 (ids listed in code point order), one supersedes c1,
        and c4 supersedes c2, which is reviewed out: REVIEWED_OUT, so nobody is listed."""
        out = resolve(
            claims(
                8,
                id=["c0", "c1", "c2", "zz", "Ab", "m", "k", "c7"],
                relation_kind=pa.array([None, None, None, 3, 3, 3, 3, 3], pa.int32()),
                relation_target=[None, None, None, "c0", "c0", "c1", "c2", "c0"],
                review_status=pa.array([0, 0, 3, 0, 0, 0, 0, 0], pa.int32()),
            )
        )
        assert out.excluded_row.tolist() == [0, 1, 2]
        assert out.superseded_by.as_dict() == {0: ("Ab", "c7", "zz"), 1: ("m",)}
        lists = out.superseded_by.lists(out.excluded_row).to_pylist()
        assert lists == [["Ab", "c7", "zz"], ["m"], []]

    def test_summary_skips_the_per_claim_arrays(self) -> None:
        """SUMMARY: no counted flags, value positions or warnings are filled in."""
        out = resolve(claims(2, reliability=[1.0, 0.5], source=["api_spec"] * 2), full=False)
        assert out.warnings == []
        assert not out.counted.any()
        assert out.status.tolist() == [Status.RESOLVED]


class TestColumns:
    def test_string_encodings_and_batches_agree(self) -> None:
        """large_utf8, dictionaries with int8 indices and repeated entries, and batches
        with different dictionaries all read as the same claims."""
        plain = claims(4, value=['"a"', '"b"', '"a"', '"b"'], source_ref=["x", "y", "x", "y"])
        expected = resolve(plain)
        large = {
            k: pa.array(v, pa.large_string()) if isinstance(v[0], str) else v
            for k, v in plain.items()
        }
        assert resolve(large).support.tolist() == expected.support.tolist()
        value = pa.DictionaryArray.from_arrays(
            pa.array([0, 1, 2, 1], pa.int8()), pa.array(['"a"', '"b"', '"a"'])
        )
        assert resolve({**plain, "value": value}).support.tolist() == expected.support.tolist()
        first = pa.table({k: v[:2] for k, v in plain.items()})
        second = pa.table({k: v[2:] for k, v in plain.items()})
        column = first.schema.get_field_index("value")
        first = first.set_column(column, "value", pa.array(['"a"', '"b"']).dictionary_encode())
        second = second.set_column(
            column,
            "value",
            pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(['"b"', '"a"'])),
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, first.schema) as writer:
            writer.write_table(first)
            writer.write_table(second)
        read, problems = stream.read(sink.getvalue().to_pybytes())
        assert read is not None
        assert not problems
        raw = decode.read_raw(read.table, TABLE)
        assert not decode.violations(raw, TABLE)
        claims_read = decode.columns(raw, TABLE)
        assert claims_read.value.tolist() == [0, 1, 0, 1]

    @pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
    def test_timestamps_of_any_unit(self, unit: str) -> None:
        """-1.5 s before the epoch is (seconds -2, nanos 500,000,000), as a Timestamp."""
        per_second = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
        value = -3 * per_second // 2 if unit != "s" else -2
        table = pa.table(claims(1, observe_time=pa.array([value], pa.timestamp(unit, tz="UTC"))))
        raw = decode.read_raw(table, TABLE)
        seconds, nanos = raw.observe.seconds_nanos(np.array([0]))
        assert seconds.tolist() == [-2]
        assert nanos.tolist() == [0 if unit == "s" else 500_000_000]

    @pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
    def test_the_timestamp_range_is_checked_on_ticks_to_the_tick(self, unit: str) -> None:
        """0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z are in range, one tick
        past either end is not; in ns every int64 falls inside, and nothing is flagged."""
        per_second = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
        low, high = MIN_TIMESTAMP_SECONDS * per_second, (MAX_TIMESTAMP_SECONDS + 1) * per_second - 1
        int64 = np.iinfo(np.int64)
        values = [max(low, int64.min), min(high, int64.max), None]
        flagged = [False, False, False]
        if unit != "ns":
            values += [low - 1, high + 1]
            flagged += [True, True]
        observe = pa.array(values, pa.timestamp(unit, tz="UTC"))
        raw = decode.read_raw(pa.table(claims(len(values), observe_time=observe)), TABLE)
        outside = raw.observe.outside(MIN_TIMESTAMP_SECONDS, MAX_TIMESTAMP_SECONDS)
        assert outside.tolist() == flagged
        problems = decode.violations(raw, TABLE)
        assert [v.field for v in problems] == [
            f"claims_arrow.observe_time[{row}]" for row, bad in enumerate(flagged) if bad
        ]

    def test_codec_of_names_the_request_codec(self) -> None:
        """codec_of reads the codec from the first record batch's metadata."""
        table = pa.table(claims(2))
        for codec in (None, "lz4", "zstd"):
            sink = pa.BufferOutputStream()
            options = pa.ipc.IpcWriteOptions(compression=codec)
            with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
                writer.write_table(table)
            assert stream.codec_of(sink.getvalue().to_pybytes()) == codec


class TestValidation:
    def test_violations_name_column_and_row(self) -> None:
        """Bad cells are listed row by row with claims_arrow.<column>[<row>] paths."""
        table = pa.table(
            claims(3, confidence=[0.5, float("nan"), 2.0], source=["api_spec", "x", "api_spec"])
        )
        raw = decode.read_raw(table, TABLE)
        found = decode.violations(raw, TABLE)
        assert [(v.reason, v.field) for v in found] == [
            (Reason.UNKNOWN_SOURCE, "claims_arrow.source[1]"),
            (Reason.INVALID_CLAIM, "claims_arrow.confidence[1]"),
            (Reason.INVALID_CLAIM, "claims_arrow.confidence[2]"),
        ]

    def test_duplicates_are_found_in_bulk(self) -> None:
        """A repeated id among many names the repeat and the first use."""
        ids = [f"c{i}" for i in range(10_000)]
        ids[7_000] = "c42"
        raw = decode.read_raw(pa.table(claims(10_000, id=ids)), TABLE)
        found = decode.violations(raw, TABLE)
        assert [(v.reason, v.field) for v in found] == [
            (Reason.DUPLICATE_CLAIM_ID, "claims_arrow.id[7000]")
        ]
        assert "claims_arrow.id[42]" in found[0].description

    def test_violations_are_capped_like_the_reference(self) -> None:
        """Past MAX_VIOLATIONS the list stops after the row that reached it."""
        raw = decode.read_raw(pa.table(claims(500, confidence=[2.0] * 500)), TABLE)
        found = decode.violations(raw, TABLE)
        assert len(found) == 100
        with pytest.raises(InvalidArgument) as error:
            raise_if_any(found, TABLE)
        assert not error.value.violations_complete


class TestUntrustedStreams:
    @pytest.mark.parametrize("codec", [None, "zstd"])
    def test_corrupted_streams_are_refused_or_resolved(self, codec: str | None) -> None:
        """Bytes flipped anywhere in a stream: it is either resolved (it still reads as
        valid claims) or refused with INVALID_ARGUMENT, or with RESOURCE_EXHAUSTED where a
        header now declares more rows or bytes than a request may hold; never another error."""
        import random

        table = pa.table(claims(20, value=['"a"', '"b"'] * 10, source_ref=["x", "y"] * 10))
        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(compression=codec)
        with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        original = sink.getvalue().to_pybytes()
        refused: list[Reason] = []
        for seed in range(300):
            rng = random.Random(seed)
            data = bytearray(original)
            for _ in range(3):
                data[rng.randrange(len(data))] = rng.randrange(256)
            try:
                resolve_stream(bytes(data), DEFAULT_POLICY)
            except InvalidArgument:
                refused.append(Reason.MALFORMED_REQUEST)
            except ResourceExhausted as error:
                refused.append(error.reason)
        assert refused
        assert set(refused) <= {Reason.MALFORMED_REQUEST, Reason.REQUEST_TOO_EXPENSIVE}


class TestResponseTables:
    def test_correlation_groups_go_out_dictionary_encoded(self) -> None:
        """Both correlation_group columns are dictionary<int32, utf8> and read as the names."""
        columns = claims(
            4,
            value=['"a"', '"a"', '"b"', '"a"'],
            source=["api_spec"] * 4,
            source_ref=["r1", "r1", "r2", None],
            correlation_group=[None, None, None, "run-7"],
        )
        table = pa.table(columns)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        answer = resolve_stream(sink.getvalue().to_pybytes(), DEFAULT_POLICY)
        named = {}
        for name in ("claims", "groups"):
            read = pa.ipc.open_stream(getattr(answer.tables, name)).read_all()
            kind = read.schema.field("correlation_group").type
            assert kind == pa.dictionary(pa.int32(), pa.string())
            named[name] = read.column("correlation_group").to_pylist()
        assert named["claims"] == ["api_spec|r1", "api_spec|r1", "api_spec|r2", "run-7"]
        assert sorted(named["groups"]) == ["api_spec|r1", "api_spec|r2", "run-7"]

    @pytest.mark.parametrize("codec", [None, "zstd"])
    def test_each_table_is_the_stream_a_plain_writer_writes(self, codec: str | None) -> None:
        """Uncompressed tables are written into a buffer sized beforehand: byte for byte the
        stream a growing sink gets, and every table reads back."""
        columns = claims(3, source_ref=["a", "b", "c"], confidence=[0.5, 0.25, 0.75])
        table = pa.table(columns)
        sink = pa.BufferOutputStream()
        options = pa.ipc.IpcWriteOptions(compression=codec)
        with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        answer = resolve_stream(sink.getvalue().to_pybytes(), DEFAULT_POLICY)
        for name in ("semantics", "values", "excluded", "claims", "groups", "warnings"):
            written = bytes(getattr(answer.tables, name))
            again = pa.ipc.open_stream(written).read_all()
            plain = pa.BufferOutputStream()
            with pa.ipc.new_stream(plain, again.schema, options=options) as writer:
                writer.write_table(again)
            assert again.num_rows == ROWS_OF[name]
            if codec is None:
                assert written == plain.getvalue().to_pybytes()


class TestDistinctIds:
    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.one_of(
                st.none(),
                st.text(max_size=20),
                st.sampled_from(["", "a", "a\x00", "ab", "x" * 70 + "1" + "y" * 9]),
                st.integers(0, 30).map(lambda i: "p" * 64 + str(i % 7) + "m" * i + "tail0000"),
            ),
            max_size=60,
        ),
        st.booleans(),
        st.integers(0, 3),
    )
    def test_repeats_are_found_exactly(self, ids: list[str | None], wide: bool, cut: int) -> None:
        """``has_repeats`` says whether two present ids are equal, for short ids, ids
        that differ only past their 64th byte, nulls, "", large_utf8 and sliced arrays."""
        column = pa.array(["pad"] * cut + ids, pa.large_string() if wide else pa.string())[cut:]
        present = np.array([bool(text) for text in ids], dtype=np.bool_)
        texts = [text for text in ids if text]
        assert distinct.has_repeats(column, present) == (len(set(texts)) < len(texts))

    def test_long_ids_that_share_fingerprints_are_compared(self) -> None:
        """Ids differing only between byte 64 and their last eight are told apart."""
        ids = ["z" * 64 + f"{i:04d}" + "constant" for i in range(500)]
        present = np.ones(len(ids), dtype=np.bool_)
        assert not distinct.has_repeats(pa.array(ids), present)
        assert distinct.has_repeats(pa.array([*ids, ids[250]]), np.r_[present, True])
