"""Active claims: reviewed-out claims, supersession in force, chains, cycles, dangling targets."""

from __future__ import annotations

import pytest

from assay.v1 import claim_pb2, resolution_pb2
from tests.unit.resolver.resolver_factories import claim, resolve, resolve_evidence

REJECTED = claim_pb2.REVIEW_STATUS_REJECTED
REVIEWED_OUT = resolution_pb2.EXCLUSION_REASON_REVIEWED_OUT
SUPERSEDED = resolution_pb2.EXCLUSION_REASON_SUPERSEDED
CYCLE = resolution_pb2.WARNING_CODE_SUPERSESSION_CYCLE
DANGLING = resolution_pb2.WARNING_CODE_DANGLING_RELATION


def active_refs(result: resolution_pb2.SemanticResolution) -> list[str]:
    return sorted(c.claim_ref for v in result.values for c in v.claims)


def excluded(result: resolution_pb2.SemanticResolution) -> list[tuple[str, int, list[str]]]:
    return [(e.claim_ref, e.reason, list(e.superseded_by)) for e in result.excluded]


class TestSupersession:
    def test_supersedes_drops_the_target(self) -> None:
        """The target of an in-force SUPERSEDES relation is dropped and listed."""
        result = resolve([claim("new", id="a", supersedes="b"), claim("old", id="b")])
        assert active_refs(result) == ["a"]
        assert excluded(result) == [("b", SUPERSEDED, ["a"])]
        assert result.excluded[0].claim.id == "b"  # echoed as received

    def test_chain_leaves_only_the_head(self) -> None:
        """A→B→C: a superseded claim's own supersessions stay in force."""
        claims = [
            claim("v3", id="A", supersedes="B"),
            claim("v2", id="B", supersedes="C"),
            claim("v1", id="C"),
        ]
        result = resolve(claims)
        assert active_refs(result) == ["A"]
        assert excluded(result) == [("B", SUPERSEDED, ["A"]), ("C", SUPERSEDED, ["B"])]
        assert result.leader.value_key == '"v3"'

    def test_cycle_drops_every_claim_on_it_with_warnings(self) -> None:
        """A→B→A: both are targets of in-force relations; each is warned about."""
        claims = [
            claim("x", id="A", supersedes="B"),
            claim("y", id="B", supersedes="A"),
            claim("z", id="C"),
        ]
        result = resolve(claims)
        assert active_refs(result) == ["C"]
        assert [(w.code, w.claim_ref) for w in result.warnings] == [(CYCLE, "A"), (CYCLE, "B")]

    def test_self_supersession_is_a_cycle(self) -> None:
        """A claim superseding itself is a cycle of one."""
        result = resolve([claim("x", id="A", supersedes="A")])
        assert result.status == resolution_pb2.RESOLUTION_STATUS_INSUFFICIENT
        assert [w.code for w in result.warnings] == [CYCLE]

    def test_tail_feeding_a_cycle_is_not_on_it(self) -> None:
        """D→A with A↔B: D stays active and gets no cycle warning."""
        claims = [
            claim("x", id="A", supersedes="B"),
            claim("y", id="B", supersedes="A"),
            claim("w", id="D", supersedes="A"),
        ]
        result = resolve(claims)
        assert active_refs(result) == ["D"]
        assert sorted(w.claim_ref for w in result.warnings) == ["A", "B"]
        assert excluded(result)[0] == ("A", SUPERSEDED, ["B", "D"])

    def test_rejected_claims_supersession_is_void(self) -> None:
        """A reviewed-out claim's relations are void: its target stays active."""
        result = resolve(
            [claim("new", id="a", supersedes="b", status=REJECTED), claim("old", id="b")]
        )
        assert active_refs(result) == ["b"]
        assert excluded(result) == [("a", REVIEWED_OUT, [])]

    def test_rejected_target_is_reported_as_reviewed_out(self) -> None:
        """Reviewed out wins over superseded when both apply."""
        result = resolve(
            [claim("new", id="a", supersedes="b"), claim("old", id="b", status=REJECTED)]
        )
        assert excluded(result) == [("b", REVIEWED_OUT, [])]

    def test_supersession_across_semantics(self) -> None:
        """A relation may cross semantics: the target is dropped from its own semantic."""
        claims = [
            claim("x", id="a", predicate="p1", supersedes="b"),
            claim("y", id="b", predicate="p2"),
        ]
        response = resolve_evidence(claims)
        by_predicate = {r.predicate: r for r in response.resolutions}
        assert active_refs(by_predicate["p1"]) == ["a"]
        assert by_predicate["p2"].status == resolution_pb2.RESOLUTION_STATUS_INSUFFICIENT
        assert excluded(by_predicate["p2"]) == [("b", SUPERSEDED, ["a"])]

    @pytest.mark.parametrize(
        "kind", [claim_pb2.RELATION_KIND_SUPPORTS, claim_pb2.RELATION_KIND_CONTRADICTS]
    )
    def test_informational_relations_change_nothing(self, kind: int) -> None:
        """SUPPORTS and CONTRADICTS do not change fusion."""
        claims = [
            claim("a", id="x", relation=(kind, "y"), source_ref="1"),
            claim("b", id="y", source_ref="2"),
        ]
        result = resolve(claims)
        assert active_refs(result) == ["x", "y"]
        assert list(result.excluded) == []
        assert list(result.warnings) == []


class TestDangling:
    def test_dangling_relation_is_warned_and_ignored(self) -> None:
        """A relation to a missing id: the claim still counts, with a warning."""
        result = resolve([claim("a", id="x", supersedes="ghost")])
        assert active_refs(result) == ["x"]
        assert [(w.code, w.claim_ref) for w in result.warnings] == [(DANGLING, "x")]
        assert "ghost" in result.warnings[0].message

    def test_dangling_warning_reaches_the_evidence_level(self) -> None:
        """ResolveEvidence lists every semantic's warnings."""
        response = resolve_evidence([claim("a", id="x", supersedes="ghost")])
        assert [w.code for w in response.warnings] == [DANGLING]

    def test_rejected_claims_dangling_relation_is_not_reported(self) -> None:
        """A void relation is not evaluated at all."""
        result = resolve([claim("a", id="x", supersedes="ghost", status=REJECTED)])
        assert list(result.warnings) == []
