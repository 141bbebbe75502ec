"""The hand-framed ResolveColumnsResponse is byte-equal to protobuf's deterministic output."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.services.resolver.columnar.output.arrow_out import Encoded
from assay.services.resolver.columnar.output.response import Answer, response_bytes
from assay.v1 import resolver_service_pb2 as pb

_STREAM = st.one_of(
    st.just(b""),
    st.binary(min_size=1, max_size=300),  # lengths on both sides of one varint byte
    st.integers(1, 70_000).map(lambda size: bytes(range(256)) * (size // 256 + 1)),  # longer
)
_TEXT = st.text(max_size=200)  # "" included: proto3 leaves it out inside SemanticKey


def expected(answer: Answer) -> bytes:
    t = answer.tables
    message = pb.ResolveColumnsResponse(
        semantics_arrow=bytes(t.semantics),
        values_arrow=bytes(t.values),
        excluded_arrow=bytes(t.excluded),
        claims_arrow=bytes(t.claims),
        groups_arrow=bytes(t.groups),
        warnings_arrow=bytes(t.warnings),
        coverage_confidence=answer.coverage,
        reliability_table_digest=answer.table_digest,
    )
    for subject, predicate in answer.conflicted_safety:
        message.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
    data: bytes = message.SerializeToString(deterministic=True)
    return data


@settings(max_examples=300, deadline=None)
@given(
    streams=st.lists(_STREAM, min_size=6, max_size=6),
    coverage=st.one_of(st.sampled_from([0.0, -0.0, 1.0, 5e-324]), st.floats(allow_nan=False)),
    conflicted=st.lists(st.tuples(_TEXT, _TEXT), max_size=5),
    as_arrow_buffers=st.booleans(),
    table_digest=st.sampled_from(["", "sha256:" + "0" * 64]),
)
def test_equal_to_the_deterministic_serializer(
    streams: list[bytes],
    coverage: float,
    conflicted: list[tuple[str, str]],
    as_arrow_buffers: bool,
    table_digest: str,
) -> None:
    tables = [pa.py_buffer(s) if as_arrow_buffers else s for s in streams]
    answer = Answer(Encoded(*tables), coverage, conflicted, table_digest)
    data = response_bytes(answer)
    assert data == expected(answer)
    parsed = pb.ResolveColumnsResponse.FromString(data)
    assert parsed.claims_arrow == streams[3]
    assert [(k.subject, k.predicate) for k in parsed.conflicted_safety_predicates] == conflicted
    assert parsed.reliability_table_digest == table_digest
