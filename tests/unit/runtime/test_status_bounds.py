"""Every status the runtime sends is bounded: violations, lengths, metadata and total size.

``to_status`` is the one place every service's errors pass, so its bounds are
tested here on plain errors; tests/service/test_bounded_errors.py then checks
the same bounds over the wire, per service. The well-known time rules every
service applies to request Timestamps and Durations are tested here too.
"""

from __future__ import annotations

import pytest
from google.rpc import error_details_pb2, status_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import errors
from assay.errors import FieldViolation, Reason, excerpt
from assay.prototime import (
    MAX_DURATION_SECONDS,
    MAX_TIMESTAMP_SECONDS,
    MIN_TIMESTAMP_SECONDS,
    duration_problem,
    timestamp_problem,
    valid_timestamp,
)
from assay.runtime.status import (
    MAX_DESCRIPTION_BYTES,
    MAX_FIELD_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_METADATA_ENTRIES,
    MAX_METADATA_KEY_BYTES,
    MAX_METADATA_VALUE_BYTES,
    MAX_VIOLATIONS,
    TRAILER_BUDGET_BYTES,
    bounded_status_proto,
    clip,
    message_wire_bytes,
    to_status,
)

REQUEST_ID = "0123456789abcdef" * 8  # the longest the handler accepts (128)
EIGHT_KIB = 8192


def parts(
    proto: status_pb2.Status,
) -> tuple[error_details_pb2.ErrorInfo, list[error_details_pb2.BadRequest.FieldViolation]]:
    info = error_details_pb2.ErrorInfo()
    bad = error_details_pb2.BadRequest()
    for detail in proto.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            detail.Unpack(info)
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            detail.Unpack(bad)
    return info, list(bad.field_violations)


def invalid(
    count: int,
    field: str = "evidence.claims[{i}].source",
    description: str = "bad",
    metadata: dict[str, str] | None = None,
    more_violations: int = 0,
    violations_complete: bool = True,
) -> errors.InvalidArgument:
    violations = [FieldViolation(field.format(i=i), description) for i in range(count)]
    return errors.InvalidArgument(
        Reason.INVALID_CLAIM,
        "bad input",
        violations,
        metadata or {},
        more_violations=more_violations,
        violations_complete=violations_complete,
    )


def sent_bytes(proto: status_pb2.Status) -> int:
    """What the trailer carries for the status: the details, and the message as sent."""
    return int(proto.ByteSize()) + message_wire_bytes(proto.message)


class TestClip:
    @pytest.mark.parametrize("text", ["", "short", "é" * 64, "x" * 256])
    def test_short_text_is_kept(self, text: str) -> None:
        """Text within the limit comes back unchanged."""
        assert clip(text, 256) == text

    @pytest.mark.parametrize("char", ["x", "é", "€", "😀"])
    def test_long_text_is_cut_on_a_character_and_marked(self, char: str) -> None:
        """Cut text fits the byte limit, is valid UTF-8 and ends with the ellipsis."""
        out = clip(char * 1000, 256)
        assert len(out.encode()) <= 256
        assert out.endswith("…")
        assert set(out[:-1]) == {char}

    def test_wire_size_counts_percent_encoding(self) -> None:
        """Printable ASCII is sent as is; '%' and non-ASCII bytes take three bytes each."""
        assert message_wire_bytes("abc") == 3
        assert message_wire_bytes("%") == 3
        assert message_wire_bytes("é") == 6  # two UTF-8 bytes, each %XX
        assert message_wire_bytes("a\nb") == 5


class TestExcerpt:
    def test_a_short_value_is_quoted_whole(self) -> None:
        """Values up to the limit are quoted with repr."""
        assert excerpt("runtime-trace") == "'runtime-trace'"

    def test_a_long_value_is_quoted_by_its_prefix_and_length(self) -> None:
        """Only the first 64 characters are quoted, then the length."""
        out = excerpt("s" * 6000)
        assert out == repr("s" * 64) + "… (6000 characters)"

    def test_control_characters_are_escaped(self) -> None:
        """A quoted value cannot break a line."""
        assert "\n" not in excerpt("a\nb")


class TestViolationCap:
    def test_a_small_error_is_sent_as_it_is(self) -> None:
        """Under every bound nothing changes and no "more" entry is added."""
        error = invalid(3, metadata={"known_sources": "a,b"})
        info, violations = parts(bounded_status_proto(error, "rid"))
        assert [v.field for v in violations] == [v.field for v in error.violations]
        assert dict(info.metadata) == {"known_sources": "a,b", "request_id": "rid"}
        assert info.reason == Reason.INVALID_CLAIM

    def test_exactly_the_cap_is_listed_whole(self) -> None:
        """MAX_VIOLATIONS violations are all listed, none summarized."""
        _, violations = parts(bounded_status_proto(invalid(MAX_VIOLATIONS)))
        assert len(violations) == MAX_VIOLATIONS
        assert "more" not in violations[-1].description

    def test_beyond_the_cap_the_last_entry_counts_the_rest(self) -> None:
        """60 violations: 49 listed, then one entry naming the 50th field and "11 more"."""
        _, violations = parts(bounded_status_proto(invalid(60)))
        assert len(violations) == MAX_VIOLATIONS
        assert violations[48].field == "evidence.claims[48].source"
        assert violations[-1].field == "evidence.claims[49].source"
        assert violations[-1].description == "11 more violations not shown"

    def test_counted_but_unlisted_violations_are_included(self) -> None:
        """``more_violations`` adds to the count even when every listed one fits."""
        _, violations = parts(bounded_status_proto(invalid(3, more_violations=7)))
        assert len(violations) == 4
        assert violations[-1].description == "7 more violations not shown"

    def test_an_incomplete_check_says_at_least(self) -> None:
        """A check that stopped early is reported as a floor."""
        error = invalid(100, violations_complete=False)
        _, violations = parts(bounded_status_proto(error))
        assert violations[-1].description == "at least 51 more violations not shown"


class TestLengthCaps:
    def test_field_and_description_are_cut(self) -> None:
        """A 10,000-character path or description is cut to its byte limit, marked."""
        error = invalid(1, field="x" * 10_000, description="é" * 10_000)
        _, (violation,) = parts(bounded_status_proto(error))
        assert len(violation.field.encode()) <= MAX_FIELD_BYTES
        assert len(violation.description.encode()) <= MAX_DESCRIPTION_BYTES
        assert violation.field.endswith("…")
        assert violation.description.endswith("…")

    def test_message_is_cut(self) -> None:
        """The message is cut to MAX_MESSAGE_BYTES."""
        error = errors.FailedPrecondition(Reason.CASE_FROZEN, "m" * 100_000)
        proto = bounded_status_proto(error)
        assert len(proto.message.encode()) <= MAX_MESSAGE_BYTES
        assert proto.message.endswith("…")

    def test_metadata_entries_keys_and_values_are_capped(self) -> None:
        """At most MAX_METADATA_ENTRIES entries (plus the request id), each cut."""
        metadata = {f"{i:02d}" + "k" * 200: "v" * 5000 for i in range(40)}
        error = errors.NotFound(Reason.CASE_NOT_FOUND, "no case", metadata=metadata)
        info, _ = parts(bounded_status_proto(error, REQUEST_ID))
        assert len(info.metadata) == MAX_METADATA_ENTRIES + 1
        assert info.metadata["request_id"] == REQUEST_ID
        for key, value in info.metadata.items():
            assert len(key.encode()) <= MAX_METADATA_KEY_BYTES
            assert len(value.encode()) <= MAX_METADATA_VALUE_BYTES


class TestTotalSize:
    def test_the_worst_case_fits_with_a_violation_and_the_request_id(self) -> None:
        """Huge everything: still under the budget, one field named, the rest counted."""
        huge = FieldViolation("😀" * 10_000, "%" * 10_000)
        error = errors.InvalidArgument(
            Reason.INVALID_CLAIM,
            "😀" * 100_000,
            [huge] * 100_000,
            {f"key{i}" + "😀" * 100: "😀" * 100_000 for i in range(100)},
        )
        proto = bounded_status_proto(error, REQUEST_ID)
        info, violations = parts(proto)
        assert sent_bytes(proto) <= TRAILER_BUDGET_BYTES < EIGHT_KIB
        assert len(violations) >= 2
        assert violations[-1].description.endswith(
            f"{100_000 - len(violations) + 1} more violations not shown"
        )
        assert info.metadata["request_id"] == REQUEST_ID

    @settings(max_examples=60, deadline=None)
    @given(
        count=st.integers(0, 400),
        field_chars=st.integers(0, 600),
        description_chars=st.integers(0, 600),
        message_chars=st.integers(0, 3000),
        metadata_entries=st.integers(0, 30),
        metadata_chars=st.integers(0, 3000),
        char=st.sampled_from(["a", "%", "é", "😀"]),
    )
    def test_any_error_fits_and_counts_every_violation(
        self,
        count: int,
        field_chars: int,
        description_chars: int,
        message_chars: int,
        metadata_entries: int,
        metadata_chars: int,
        char: str,
    ) -> None:
        """Within the budget, and listed + counted = every violation the error carried."""
        error = errors.InvalidArgument(
            Reason.INVALID_FIELD,
            char * message_chars,
            [
                FieldViolation(f"f{i}" + char * field_chars, char * description_chars)
                for i in range(count)
            ],
            {f"k{i}": char * metadata_chars for i in range(metadata_entries)},
        )
        proto = bounded_status_proto(error, REQUEST_ID)
        _, violations = parts(proto)
        assert sent_bytes(proto) <= TRAILER_BUDGET_BYTES
        assert len(violations) <= MAX_VIOLATIONS
        if count:
            assert violations
        if len(violations) < count:
            *listed, more = violations
            assert more.description == f"{count - len(listed)} more violations not shown"
            assert more.field.startswith(f"f{len(listed)}")
        else:
            assert len(violations) == count

    def test_to_status_carries_the_bounded_details(self) -> None:
        """The grpc.Status handed to abort carries exactly the bounded details."""
        error = invalid(500, description="d" * 300)
        status = to_status(error, "rid")
        (key, value), *_ = status.trailing_metadata
        assert key == "grpc-status-details-bin"
        assert value == bounded_status_proto(error, "rid").SerializeToString()
        assert len(value) < EIGHT_KIB


class TestWellKnownTimes:
    @pytest.mark.parametrize(
        ("seconds", "nanos"),
        [(0, 0), (MIN_TIMESTAMP_SECONDS, 0), (MAX_TIMESTAMP_SECONDS, 999_999_999), (-1, 5)],
    )
    def test_valid_timestamps(self, seconds: int, nanos: int) -> None:
        """Anything from year 1 to year 9999 with nanos in [0, 1e9) is a Timestamp."""
        assert timestamp_problem(seconds, nanos) is None
        assert valid_timestamp(seconds, nanos)

    @pytest.mark.parametrize(
        ("seconds", "nanos", "part"),
        [
            (0, -1, "nanos -1"),
            (0, 1_000_000_000, "nanos 1000000000"),
            (MIN_TIMESTAMP_SECONDS - 1, 0, "seconds"),
            (MAX_TIMESTAMP_SECONDS + 1, 0, "seconds"),
        ],
    )
    def test_invalid_timestamps(self, seconds: int, nanos: int, part: str) -> None:
        """Negative or whole-second nanos, and years outside 1..9999, are refused."""
        problem = timestamp_problem(seconds, nanos)
        assert problem is not None
        assert part in problem
        assert not valid_timestamp(seconds, nanos)

    @pytest.mark.parametrize(
        ("seconds", "nanos", "valid"),
        [
            (5, 0, True),
            (-5, -1, True),
            (0, -999_999_999, True),
            (MAX_DURATION_SECONDS, 0, True),
            (5, -1, False),
            (-5, 1, False),
            (0, 1_000_000_000, False),
            (MAX_DURATION_SECONDS + 1, 0, False),
            (-MAX_DURATION_SECONDS - 1, 0, False),
        ],
    )
    def test_durations(self, seconds: int, nanos: int, valid: bool) -> None:
        """±10,000 years, |nanos| below a second, and the same sign as seconds."""
        assert (duration_problem(seconds, nanos) is None) == valid
