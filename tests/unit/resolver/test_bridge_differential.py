"""The bridge equals the per-claim path: ResolveEvidence's bytes, column-wise or not.

Generated evidence (the columnar differential test's: ids and none, weight ties,
declared groups and one spelled like a defaulted one, rejected claims, supersession
with cycles and dangling targets, capped reliabilities, staleness, safety predicates,
struct, number and bool values, invalid claims) is resolved by one servicer with the
bridge forced on (threshold 0) and one with it off; the serialized responses
(deterministic) must be the same bytes at FULL and SUMMARY, and a bad request must get
the same error.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from assay.errors import InvalidArgument
from assay.services.resolver.adapters.servicer import ResolverServicer
from assay.services.resolver.columnar import wire
from assay.services.resolver.columnar.from_claims import read_claims
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.columnar_support import to_claim
from tests.unit.resolver.test_columnar_differential import PROFILE, evidence

DETAILS = [
    pb.RESOLUTION_DETAIL_UNSPECIFIED,
    pb.RESOLUTION_DETAIL_FULL,
    pb.RESOLUTION_DETAIL_SUMMARY,
]


def _servicer(bridged: bool) -> ResolverServicer:
    servicer = ResolverServicer(DEFAULT_POLICY)
    threshold = 0 if bridged else 1 << 62
    servicer.bridge_min_claims = servicer.bridge_min_claims_full = threshold
    return servicer


def _request(
    rows: list[dict[str, Any]], as_of: int | None, detail: int, nanos: list[int]
) -> pb.ResolveEvidenceRequest:
    request = pb.ResolveEvidenceRequest(detail=detail)  # type: ignore[arg-type]
    for i, row in enumerate(rows):
        claim = request.evidence.claims.add()
        claim.CopyFrom(to_claim(row))
        if claim.HasField("observe_time") and i < len(nanos):
            claim.observe_time.nanos = nanos[i]
    if as_of is not None:
        request.as_of.seconds = as_of
        request.stale_after.seconds = 500
    return request


def _answer(servicer: ResolverServicer, request: pb.ResolveEvidenceRequest) -> bytes | str:
    try:
        return servicer._ResolveEvidence(request).SerializeToString(deterministic=True)
    except InvalidArgument as error:
        return f"{error!r} {error.__dict__!r}"


class TestBridgeDifferential:
    @PROFILE
    @given(
        rows=evidence(),
        as_of=st.sampled_from([None, 1200, 2000]),
        detail=st.sampled_from(DETAILS),
        nanos=st.lists(st.sampled_from([0, 0, 1, 500_000_000, 999_999_999]), max_size=14),
    )
    def test_same_bytes_as_per_claim_path(
        self, rows: list[dict[str, Any]], as_of: int | None, detail: int, nanos: list[int]
    ) -> None:
        """Valid evidence: the bridged response is byte-equal to the per-claim one."""
        request = _request(rows, as_of, detail, nanos)
        assert _answer(_servicer(True), request) == _answer(_servicer(False), request)

    @PROFILE
    @given(rows=evidence(invalid=True), detail=st.sampled_from(DETAILS))
    def test_invalid_evidence_gets_the_same_error(
        self, rows: list[dict[str, Any]], detail: int
    ) -> None:
        """Invalid evidence: the bridge declines it and the error is the per-claim one."""
        request = _request(rows, None, detail, [])
        ours, theirs = _answer(_servicer(True), request), _answer(_servicer(False), request)
        assert ours == theirs
        if isinstance(theirs, str):
            assert read_claims(request.evidence, DEFAULT_POLICY.reliability) is None

    def test_bridge_takes_valid_evidence(self) -> None:
        """The bridge does answer valid evidence (the differential test is not vacuous)."""
        rows = [
            {
                "id": "a",
                "subject": "s",
                "predicate": "p",
                "value": '"x"',
                "source": "api_spec",
                "confidence": 0.9,
            },
            {
                "subject": "s",
                "predicate": "p",
                "value": "2",
                "source": "llm_inference",
                "confidence": 0.5,
            },
        ]
        request = _request(rows, None, pb.RESOLUTION_DETAIL_FULL, [])
        assert read_claims(request.evidence, DEFAULT_POLICY.reliability) is not None
        assert _answer(_servicer(True), request) == _answer(_servicer(False), request)

    def test_unknown_fields_decline(self) -> None:
        """A claim carrying a field this version does not know goes the per-claim way."""
        rows = [
            {
                "id": "a",
                "subject": "s",
                "predicate": "p",
                "value": '"x"',
                "source": "api_spec",
                "confidence": 0.9,
            }
        ]
        request = _request(rows, None, pb.RESOLUTION_DETAIL_FULL, [])
        claim = request.evidence.claims[0]
        claim.MergeFromString(b"\xf8\x01\x05")  # field 31, varint 5: unknown
        assert read_claims(request.evidence, DEFAULT_POLICY.reliability) is None
        assert _answer(_servicer(True), request) == _answer(_servicer(False), request)

    @PROFILE
    @given(
        ids=st.lists(st.sampled_from(["", "a", "b" * 130, "c" * 17_000]), min_size=1, max_size=6),
        groups=st.lists(st.sampled_from(["", "g", "h" * 200, "k" * 20_000]), max_size=6),
        detail=st.sampled_from(DETAILS),
    )
    def test_long_strings_same_bytes(self, ids: list[str], groups: list[str], detail: int) -> None:
        """Ids, groups and records long enough for two- and three-byte length varints
        (a claim weight over 16,383 bytes) are encoded as the per-claim path encodes them."""
        rows = [
            {
                "id": f"{claim_id}{i}" if claim_id else "",
                "subject": "s",
                "predicate": "p",
                "value": f'"{i % 2}"',
                "source": ("api_spec", "llm_inference")[i % 2],
                "source_ref": "r" * (i * 70),
                "confidence": 0.5 + i / 100,
                "correlation_group": groups[i] if i < len(groups) else "",
            }
            for i, claim_id in enumerate(ids)
        ]
        request = _request(rows, None, detail, [])
        assert read_claims(request.evidence, DEFAULT_POLICY.reliability) is not None
        assert _answer(_servicer(True), request) == _answer(_servicer(False), request)

    @PROFILE
    @given(
        rejected=st.lists(st.booleans(), min_size=1, max_size=6),
        detail=st.sampled_from(DETAILS),
    )
    def test_semantics_without_values_same_bytes(self, rejected: list[bool], detail: int) -> None:
        """Semantics whose claims are all reviewed out (no values, no leader), beside
        ones that keep theirs, down to a request where no semantic has a value."""
        rows = [
            {
                "id": f"c{i}",
                "subject": f"s{i % 3}",
                "predicate": "p",
                "value": f'"{i % 2}"',
                "source": "api_spec",
                "confidence": 0.6,
                "review_status": 3 if out else 0,
            }
            for i, out in enumerate(rejected)
        ]
        request = _request(rows, None, detail, [])
        assert read_claims(request.evidence, DEFAULT_POLICY.reliability) is not None
        assert _answer(_servicer(True), request) == _answer(_servicer(False), request)


class TestClaimBounds:
    """``wire.fields`` finds each claim in the evidence's bytes, or declines."""

    def test_one_two_and_three_byte_lengths_and_an_empty_claim(self) -> None:
        claims = [
            claim_pb2.Claim(id="x" * 20_000),
            claim_pb2.Claim(id="y"),
            claim_pb2.Claim(),
            claim_pb2.Claim(id="z" * 200),
        ]
        data = claim_pb2.Evidence(claims=claims).SerializeToString()
        found = wire.fields(data, 0x0A)
        assert found is not None
        sizes = [claim.ByteSize() for claim in claims]
        assert (found[1] - found[0]).tolist() == sizes
        assert [data[a:b] for a, b in zip(*found, strict=True)] == [
            claim.SerializeToString() for claim in claims
        ]
        assert int(found[1][-1]) == len(data)

    def test_another_field_or_cut_short_declines(self) -> None:
        data = claim_pb2.Evidence(claims=[claim_pb2.Claim(id="a" * 300)]).SerializeToString()
        assert wire.fields(data + b"\x10\x01", 0x0A) is None
        assert wire.fields(data[:-1], 0x0A) is None
        assert wire.fields(data[:2], 0x0A) is None
