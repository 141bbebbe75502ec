"""Rejected input: every reason, with its field path, collected into one error."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import struct_pb2

from assay import errors
from assay.errors import Reason
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.domain.validation import MAX_VIOLATIONS
from assay.services.resolver.wire.intake import intake, source_table
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.resolver_factories import (
    SUBJECT,
    calls,
    claim,
    evidence,
    fields,
    invalid,
    resolve,
    resolve_evidence,
)

SOURCES = source_table(DEFAULT_POLICY.reliability)
NAN = float("nan")
INF = float("inf")


def no_value() -> claim_pb2.Claim:
    return claim(None)


def null_value() -> claim_pb2.Claim:
    out = claim(None)
    out.value.null_value = struct_pb2.NULL_VALUE
    return out


def observed_at(seconds: int, nanos: int) -> claim_pb2.Claim:
    out = claim()
    out.observe_time.seconds, out.observe_time.nanos = seconds, nanos
    return out


BAD_CLAIMS: list[tuple[str, Any, Reason, str]] = [
    ("unknown source", lambda: claim(source="oracle"), Reason.UNKNOWN_SOURCE, "source"),
    ("empty source", lambda: claim(source=""), Reason.INVALID_CLAIM, "source"),
    ("NaN confidence", lambda: claim(confidence=NAN), Reason.INVALID_CLAIM, "confidence"),
    ("inf confidence", lambda: claim(confidence=INF), Reason.INVALID_CLAIM, "confidence"),
    ("-inf confidence", lambda: claim(confidence=-INF), Reason.INVALID_CLAIM, "confidence"),
    ("negative confidence", lambda: claim(confidence=-0.1), Reason.INVALID_CLAIM, "confidence"),
    ("confidence above 1", lambda: claim(confidence=1.1), Reason.INVALID_CLAIM, "confidence"),
    ("NaN reliability", lambda: claim(reliability=NAN), Reason.INVALID_CLAIM, "reliability"),
    ("reliability above 1", lambda: claim(reliability=1.5), Reason.INVALID_CLAIM, "reliability"),
    ("negative reliability", lambda: claim(reliability=-0.2), Reason.INVALID_CLAIM, "reliability"),
    ("empty subject", lambda: claim(subject=""), Reason.INVALID_CLAIM, "subject"),
    ("empty predicate", lambda: claim(predicate=""), Reason.INVALID_CLAIM, "predicate"),
    ("missing value", no_value, Reason.INVALID_CLAIM, "value"),
    ("null value", null_value, Reason.INVALID_CLAIM, "value"),
    ("NaN value", lambda: claim(NAN), Reason.INVALID_CLAIM, "value"),
    ("inf inside an object", lambda: claim({"x": [1, INF]}), Reason.INVALID_CLAIM, "value.x[1]"),
    ("unknown review status", lambda: claim(status=9), Reason.INVALID_CLAIM, "review_status"),
    ("negative nanos", lambda: observed_at(10, -1), Reason.INVALID_CLAIM, "observe_time"),
    ("nanos of a second", lambda: observed_at(10, 10**9), Reason.INVALID_CLAIM, "observe_time"),
    ("after year 9999", lambda: observed_at(253402300800, 0), Reason.INVALID_CLAIM, "observe_time"),
    ("before year 1", lambda: observed_at(-62135596801, 0), Reason.INVALID_CLAIM, "observe_time"),
    (
        "relation without id",
        lambda: claim(supersedes="b"),
        Reason.RELATION_WITHOUT_ID,
        "id",
    ),
    (
        "relation without kind",
        lambda: claim(id="a", relation=(0, "b")),
        Reason.INVALID_CLAIM,
        "relation.kind",
    ),
    (
        "relation with unknown kind",
        lambda: claim(id="a", relation=(7, "b")),
        Reason.INVALID_CLAIM,
        "relation.kind",
    ),
    (
        "relation without target",
        lambda: claim(id="a", relation=(claim_pb2.RELATION_KIND_SUPERSEDES, "")),
        Reason.INVALID_CLAIM,
        "relation.target_claim_id",
    ),
]


class TestClaims:
    @pytest.mark.parametrize(
        ("make", "reason", "path"),
        [case[1:] for case in BAD_CLAIMS],
        ids=[case[0] for case in BAD_CLAIMS],
    )
    def test_bad_claim_is_rejected_with_its_path(
        self, make: Any, reason: Reason, path: str
    ) -> None:
        """The error names the reason and the exact field of the offending claim."""
        error = invalid(resolve_evidence, [claim("ok"), make()])
        assert error.reason == reason
        assert fields(error) == [f"evidence.claims[1].{path}"]

    @pytest.mark.parametrize(
        "make", [case[1] for case in BAD_CLAIMS], ids=[c[0] for c in BAD_CLAIMS]
    )
    def test_fast_intake_agrees(self, make: Any) -> None:
        """The intake's cheap checks reject exactly what validation explains."""
        assert intake([claim("ok"), make()], SOURCES) is None

    def test_rejected_claims_are_still_validated(self) -> None:
        """Reviewed-out claims are excluded from fusion, not from validation."""
        error = invalid(
            resolve_evidence, [claim(source="oracle", status=claim_pb2.REVIEW_STATUS_REJECTED)]
        )
        assert error.reason == Reason.UNKNOWN_SOURCE

    def test_valid_edge_values_are_accepted(self) -> None:
        """0 and 1 are inside [0, 1]; an empty string is a value."""
        claims = [
            claim("", confidence=0.0, reliability=0.0),
            claim(False, confidence=1.0, reliability=1.0),
        ]
        assert intake(claims, SOURCES) is not None
        assert len(resolve_evidence(claims).resolutions) == 1

    def test_duplicate_ids_are_rejected(self) -> None:
        """Ids are unique within a request; the second use is the violation."""
        error = invalid(resolve_evidence, [claim(id="x"), claim(id="y"), claim(id="x")])
        assert error.reason == Reason.DUPLICATE_CLAIM_ID
        assert fields(error) == ["evidence.claims[2].id"]
        assert "evidence.claims[0]" in error.violations[0].description
        assert intake([claim(id="x"), claim(id="x")], SOURCES) is None

    def test_every_violation_is_collected(self) -> None:
        """One error carries every problem; its reason is the first one's."""
        claims = [claim(source="oracle", confidence=NAN), claim(subject="")]
        error = invalid(resolve_evidence, claims)
        assert error.reason == Reason.UNKNOWN_SOURCE
        assert fields(error) == [
            "evidence.claims[0].source",
            "evidence.claims[0].confidence",
            "evidence.claims[1].subject",
        ]

    def test_violations_are_bounded(self) -> None:
        """A huge bad request gets a bounded error that says there may be more."""
        error = invalid(resolve_evidence, [claim(source="oracle")] * (MAX_VIOLATIONS * 3))
        assert len(error.violations) == MAX_VIOLATIONS
        assert isinstance(error, errors.InvalidArgument)
        assert not error.violations_complete
        assert "(and at least 99 more)" in error.message

    def test_known_sources_go_once_into_the_metadata(self) -> None:
        """Violations name the bad kind, never the list; the list is in the metadata once."""
        error = invalid(resolve_evidence, [claim(source="runtime-trace")] * 3)
        known = sorted(DEFAULT_POLICY.reliability)
        assert error.metadata == {"known_sources": ",".join(known)}
        for violation in error.violations:
            assert "'runtime-trace'" in violation.description
            assert known[0] not in violation.description

    def test_a_long_value_is_quoted_by_its_prefix(self) -> None:
        """A 6,000-character source or id is quoted by 64 characters and its length."""
        error = invalid(
            resolve_evidence,
            [claim(source="s" * 6000), claim(id="i" * 6000), claim(id="i" * 6000)],
        )
        quoted = [v.description for v in error.violations]
        assert all(len(d) < 200 for d in quoted), quoted
        assert "(6000 characters)" in quoted[0]
        assert "(6000 characters)" in quoted[1]


class TestRequestFields:
    @pytest.mark.parametrize(
        ("request_fields", "path"),
        [
            ({"as_of": {"seconds": 10}}, "stale_after"),
            ({"stale_after": {"seconds": 10}}, "as_of"),
            ({"as_of": {"seconds": 10}, "stale_after": {"seconds": 0}}, "stale_after"),
            ({"as_of": {"seconds": 10}, "stale_after": {"seconds": -5}}, "stale_after"),
            ({"as_of": {"seconds": 10, "nanos": -1}, "stale_after": {"seconds": 5}}, "as_of"),
            ({"as_of": {"seconds": 10}, "stale_after": {"seconds": 5, "nanos": -1}}, "stale_after"),
            ({"as_of": {"seconds": 10**12}, "stale_after": {"seconds": 5}}, "as_of"),
            ({"as_of": {"seconds": 10}, "stale_after": {"nanos": 10**9}}, "stale_after"),
        ],
    )
    def test_staleness_fields_come_together(
        self, request_fields: dict[str, Any], path: str
    ) -> None:
        """as_of and a positive stale_after are given together or not at all."""
        error = invalid(resolve_evidence, [claim()], **request_fields)
        assert error.reason == Reason.INVALID_FIELD
        assert fields(error) == [path]

    @pytest.mark.parametrize(
        ("subject", "predicate", "path"), [("", "p", "subject"), ("s", "", "predicate")]
    )
    def test_resolve_semantic_needs_its_semantic(
        self, subject: str, predicate: str, path: str
    ) -> None:
        """subject and predicate are required."""
        error = invalid(resolve, [claim()], predicate, subject)
        assert error.reason == Reason.INVALID_FIELD
        assert fields(error) == [path]

    def test_hypothesis_paths(self) -> None:
        """Hypothesis claims are named hypotheses[i].claims[j]; base ids count as taken."""
        request = pb.ResolveHypothesesRequest(
            evidence=evidence([claim(id="x")]), subject=SUBJECT, predicate="p"
        )
        request.hypotheses.add(claims=[claim()])
        request.hypotheses.add(claims=[claim(), claim(source="oracle")])
        request.hypotheses.add(claims=[claim(id="x")])
        error = invalid(calls().resolve_hypotheses, request)
        assert error.reason == Reason.UNKNOWN_SOURCE
        assert fields(error) == ["hypotheses[1].claims[1].source", "hypotheses[2].claims[0].id"]
        assert "evidence.claims[0]" in error.violations[1].description

    def test_ids_may_repeat_across_hypotheses(self) -> None:
        """Each hypothesis is base + its claims: the same id in two hypotheses is fine."""
        request = pb.ResolveHypothesesRequest(evidence=evidence([]), subject=SUBJECT, predicate="p")
        request.hypotheses.add(claims=[claim(id="x")])
        request.hypotheses.add(claims=[claim(id="x")])
        assert len(calls().resolve_hypotheses(request).hypotheses) == 2

    def test_too_many_hypotheses(self) -> None:
        """At most 1024 hypotheses per call."""
        request = pb.ResolveHypothesesRequest(subject=SUBJECT, predicate="p")
        for _ in range(1025):
            request.hypotheses.add()
        error = invalid(calls().resolve_hypotheses, request)
        assert fields(error) == ["hypotheses"]

    def test_proposal_paths(self) -> None:
        """Proposals are named proposals[i]."""
        request = pb.ReconcileRequest(evidence=evidence([claim(id="x")]))
        request.proposals.extend(
            [
                claim(),
                claim(id="x"),
                claim(id="p", relation=(claim_pb2.RELATION_KIND_SUPERSEDES, "")),
            ]
        )
        error = invalid(calls().reconcile, request)
        assert error.reason == Reason.DUPLICATE_CLAIM_ID
        assert fields(error) == ["proposals[1].id", "proposals[2].relation.target_claim_id"]

    def test_reconcile_needs_a_proposal(self) -> None:
        """An empty proposal list is an error, not an empty answer."""
        error = invalid(calls().reconcile, pb.ReconcileRequest())
        assert error.reason == Reason.INVALID_FIELD
        assert fields(error) == ["proposals"]


def test_long_string_values_are_not_cached() -> None:
    """Only short values are remembered across requests: a large value (of a request that
    may be rejected) must not stay in the process after its request."""
    from assay.services.resolver.wire import intake

    long_value = "v" * (intake._MAX_CACHED_CHARS + 1)
    short_value = "short-value-for-cache-test"
    assert intake._string_key(long_value) == intake._string_key(long_value)
    intake._string_key(short_value)
    assert long_value not in intake._STRING_KEYS
    assert short_value in intake._STRING_KEYS
