"""The rules called with plain values (``plain``): no protobuf in the rule tests, and the
plain rows held equal to the served intake's on generated evidence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import errors
from assay.protovalues import value_to_json
from assay.services.resolver.domain import plain_claims as plain
from assay.services.resolver.domain.model import Exclusion, Flag, ReviewStatus, Status
from assay.services.resolver.domain.plain_claims import PlainClaim
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.domain.resolve import resolve_evidence
from assay.services.resolver.domain.validation import MAX_VIOLATIONS
from assay.services.resolver.wire.convert import claim_ref
from assay.services.resolver.wire.intake import intake, source_table
from assay.services.resolver.wire.reader import Reader
from assay.v1 import claim_pb2
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.test_resolver_properties import PROFILE, claims

SUBJECT = "api:payments.create"


def said(value: object, source: str = "test_result", **fields: object) -> PlainClaim:
    base: dict[str, object] = {
        "subject": SUBJECT,
        "predicate": "http.method",
        "value": value,
        "source": source,
        "confidence": 0.9,
    }
    return PlainClaim(**(base | fields))  # type: ignore[arg-type]


class TestRulesWithPlainValues:
    def test_independent_groups_combine_by_noisy_or(self) -> None:
        """Two sources in their own groups: support is 1 - (1 - w1)(1 - w2)."""
        (result,) = plain.resolve_all(
            [said("POST", source_ref="a"), said("POST", source="api_spec", source_ref="b")]
        )
        w1, w2 = 0.9 * DEFAULT_POLICY.reliability["test_result"], 0.9 * 0.8
        assert result.status is Status.RESOLVED
        assert result.values[0].support == pytest.approx(1 - (1 - w1) * (1 - w2))

    def test_one_group_counts_once(self) -> None:
        """Claims of one declared group count as their strongest, flagged as such."""
        (result,) = plain.resolve_all(
            [said("POST", correlation_group="run", confidence=c) for c in (0.5, 0.9, 0.7)]
        )
        leader = result.values[0]
        assert leader.support == pytest.approx(0.9 * DEFAULT_POLICY.reliability["test_result"])
        assert len(leader.counted) == 1
        assert Flag.SINGLE_SOURCE_CORROBORATION in result.rationale

    def test_close_competitor_conflicts_and_safety_needs_review(self) -> None:
        """Within the margin is CONFLICTED; on a safety predicate, review is required."""
        result = plain.resolve_one(
            [
                said("key", predicate="idempotency.mode", source_ref="a"),
                said("none", predicate="idempotency.mode", source_ref="b"),
            ],
            (SUBJECT, "idempotency.mode"),
        )
        assert result.status is Status.CONFLICTED
        assert result.requires_review

    def test_reviewed_out_and_superseded_are_excluded(self) -> None:
        """A rejected claim and a superseded one take no part, with their reasons."""
        (result,) = plain.resolve_all(
            [
                said("PUT", id="old"),
                said("POST", id="new", relation=(3, "old")),
                said("PATCH", id="gone", review_status=ReviewStatus.REJECTED),
            ]
        )
        assert [v.value_key for v in result.values] == ['"POST"']
        assert [(e.row[1], e.reason) for e in result.excluded] == [
            ("gone", Exclusion.REVIEWED_OUT),
            ("old", Exclusion.SUPERSEDED),
        ]

    def test_stale_support_is_flagged(self) -> None:
        """Every counted claim observed before the horizon: STALE_SUPPORT."""
        (result,) = plain.resolve_all(
            [said("POST", observe_time=(100, 0))], as_of=(1_000, 0), stale_after=(60, 0)
        )
        assert Flag.STALE_SUPPORT in result.rationale

    def test_bad_claims_name_their_fields(self) -> None:
        """Validation is the served one: every problem, with its path."""
        with pytest.raises(errors.InvalidArgument) as caught:
            plain.resolve_all([said(None), said("x", source="oracle", confidence=2.0)])
        assert [v.field for v in caught.value.violations] == [
            "claims[0].value",
            "claims[1].source",
            "claims[1].confidence",
        ]


def as_plain(claim: claim_pb2.Claim) -> PlainClaim:
    """A wire claim as plain values, its content reference computed as served."""
    return PlainClaim(
        subject=claim.subject,
        predicate=claim.predicate,
        value=value_to_json(claim.value) if claim.HasField("value") else None,
        source=claim.source,
        confidence=claim.confidence,
        id=claim.id,
        source_ref=claim.source_ref,
        reliability=claim.reliability if claim.HasField("reliability") else None,
        correlation_group=claim.correlation_group,
        review_status=int(claim.review_status),
        relation=(
            (int(claim.relation.kind), claim.relation.target_claim_id)
            if claim.HasField("relation")
            else None
        ),
        observe_time=(
            (claim.observe_time.seconds, claim.observe_time.nanos)
            if claim.HasField("observe_time")
            else None
        ),
        ref="" if claim.id else claim_ref(claim),
    )


class TestSameAsServed:
    @PROFILE
    @given(claims(), st.booleans())
    def test_plain_rows_and_resolutions_equal_the_intakes(
        self, found: list[claim_pb2.Claim], stale: bool
    ) -> None:
        """Rows, groups, exclusions, warnings and resolutions are the served path's."""
        served = intake(found, source_table(DEFAULT_POLICY.reliability))
        assert served is not None
        mine = plain.intake_of([as_plain(c) for c in found], DEFAULT_POLICY.reliability)
        assert mine.values == served.values
        assert (mine.id_rows, mine.relations) == (served.id_rows, served.relations)
        assert (mine.rejected, mine.capped) == (served.rejected, served.capped)
        times = ((1500, 0), (600, 0)) if stale else (None, None)
        request = pb.ResolveEvidenceRequest()
        if stale:
            request.as_of.seconds, request.stale_after.seconds = 1500, 600
        reader = Reader(DEFAULT_POLICY, source_table(DEFAULT_POLICY.reliability))
        staleness = reader.staleness(request)
        assert reader.base(found, "evidence.claims") is not None
        expected = resolve_evidence(served, DEFAULT_POLICY, staleness)
        assert plain.resolve_all([as_plain(c) for c in found], DEFAULT_POLICY, *times) == expected

    def test_errors_equal_the_served_ones(self) -> None:
        """The same violations, in the same order, under the same path."""
        bad = [
            claim_pb2.Claim(subject="", predicate="p", source="oracle", confidence=0.5),
            claim_pb2.Claim(id="a", subject="s", predicate="p", source="api_spec", confidence=2),
            claim_pb2.Claim(id="a", subject="s", predicate="p", source="api_spec", confidence=1),
        ]
        bad[1].value.string_value = bad[2].value.string_value = "x"
        with pytest.raises(errors.InvalidArgument) as mine:
            plain.intake_of(
                [as_plain(c) for c in bad], DEFAULT_POLICY.reliability, "evidence.claims"
            )
        reader = Reader(DEFAULT_POLICY, source_table(DEFAULT_POLICY.reliability))
        reader.base(bad, "evidence.claims")
        with pytest.raises(errors.InvalidArgument) as served:
            reader.done()
        assert mine.value.violations == served.value.violations
        assert len(served.value.violations) < MAX_VIOLATIONS
