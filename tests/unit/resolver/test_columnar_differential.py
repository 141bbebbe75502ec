"""The columnar path equals the reference: ResolveColumns' tables against ResolveEvidence.

Generated evidence (ids and none, weight ties, shared and declared groups, a declared
group spelled like a defaulted one, several sources, stated reliabilities above and
below the table, staleness, safety predicates, rejected claims, supersession with
cycles and dangling targets, and invalid claims) is resolved by both paths; every
status, leader, value order, support (within 1e-12), counted claim, group, claim
weight, exclusion, warning and error must agree, and both name the same reliability
table.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import InvalidArgument
from assay.services.resolver.adapters.rpcs import ResolverRpcs
from assay.services.resolver.columnar import resolve_stream
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.use_cases.resolve import Resolver
from assay.services.resolver.wire.convert import claim_ref
from assay.v1 import resolver_service_pb2 as pb
from tests.unit.resolver.columnar_support import read, stream, to_claim, to_table

SOURCES = ["api_spec", "llm_inference", "test_result", "human_review"]
TEXTS = ['"x"', '"y"', "1", "1.0", "2", "true", '{"a":1,"b":[1,2]}', '{"b":[1,2],"a":1.0}']
BAD_TEXTS = ["null", "NaN", '{"a":[1,Infinity]}']
CONFIDENCES = [0.0, 0.3, 0.5, 0.5, 0.75, 0.9, 1.0]
PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def evidence(draw: st.DrawFn, invalid: bool = False) -> list[dict[str, Any]]:
    size = draw(st.integers(0, 14))
    ids = [f"c{i}" for i in range(size)]
    # Small palettes per example make ties (same group, same weight) common.
    texts = draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3))
    sources = draw(st.lists(st.sampled_from(SOURCES), min_size=1, max_size=2))
    confidences = draw(
        st.lists(st.sampled_from(CONFIDENCES) | st.floats(0, 1), min_size=1, max_size=3)
    )
    rows = []
    for i in range(size):
        has_id = draw(st.integers(0, 3)) > 0
        row: dict[str, Any] = {
            "id": ids[i] if has_id else draw(st.sampled_from([None, ""])),
            "subject": draw(st.sampled_from(["s1", "s2"])),
            "predicate": draw(st.sampled_from(["p", "idempotency.mode"])),
            "value": draw(st.sampled_from(texts)),
            "source": draw(st.sampled_from(sources)),
            "source_ref": draw(st.sampled_from([None, "", "r1", "r2"])),
            "source_revision": draw(st.sampled_from([None, "v1"])),
            "method": draw(st.sampled_from([None, "m"])),
            "confidence": draw(st.sampled_from(confidences)),
            "reliability": draw(st.sampled_from([None, None, 0.1, 0.45, 0.5, 0.8, 1.0])),
            "observe_time": draw(st.sampled_from([None, 100, 1000, 2000])),
            "correlation_group": draw(st.sampled_from([None, None, "g1", "g2", "api_spec|r1"])),
            "review_status": draw(st.sampled_from([0, 0, 1, 2, 3])),
        }
        if has_id and size > 1 and draw(st.integers(0, 3)) == 0:
            row["relation_kind"] = draw(st.sampled_from([1, 2, 3, 3, 3]))
            # Few targets, so several claims often supersede the same one.
            row["relation_target"] = draw(st.sampled_from([*ids[:3], "ghost"]))
        rows.append(row)
    if invalid and rows:
        for _ in range(draw(st.integers(1, 3))):
            row = rows[draw(st.integers(0, len(rows) - 1))]
            field, bad = draw(
                st.sampled_from(
                    [
                        ("subject", ""),
                        ("predicate", None),
                        ("value", None),
                        ("value", BAD_TEXTS[0]),
                        ("value", BAD_TEXTS[1]),
                        ("value", BAD_TEXTS[2]),
                        ("source", "nope"),
                        ("source", ""),
                        ("confidence", 1.5),
                        ("confidence", math.nan),
                        ("reliability", -0.5),
                        ("review_status", 7),
                        ("relation_kind", 0),
                        ("relation_kind", 9),
                        ("relation_target", "c0"),
                        ("id", "c0"),
                        ("observe_time", 10**12),
                    ]
                )
            )
            row[field] = bad
    return rows


def _ref(rows: list[dict[str, Any]], row: int) -> str:
    return claim_ref(to_claim(rows[row]))


def _reference(rows: list[dict[str, Any]], as_of: int | None) -> pb.ResolveEvidenceResponse:
    request = pb.ResolveEvidenceRequest()
    request.evidence.claims.extend(to_claim(row) for row in rows)
    if as_of is not None:
        request.as_of.seconds = as_of
        request.stale_after.seconds = 500
    return ResolverRpcs(Resolver(DEFAULT_POLICY)).resolve_evidence(request)


def _normal_reference(response: pb.ResolveEvidenceResponse) -> dict[str, Any]:
    semantics = []
    for res in response.resolutions:
        values = []
        for value in res.values:
            groups = [
                (g.correlation_group, g.declared, g.weight, g.counted_claim_ref)
                for g in value.groups
            ]
            assert list(value.counted_claim_refs) == [g[3] for g in groups]
            claims = Counter(
                (c.claim_ref, c.reliability, c.effective_weight, c.correlation_group, c.counted)
                for c in value.claims
            )
            values.append((value.value_key, value.support, groups, claims))
        excluded = sorted((e.claim_ref, e.reason, tuple(e.superseded_by)) for e in res.excluded)
        semantics.append(
            (
                res.subject,
                res.predicate,
                res.status,
                res.leader.value_key if res.HasField("leader") else None,
                res.confidence,
                res.safety_sensitive,
                res.requires_review,
                list(res.rationale),
                values,
                excluded,
            )
        )
    return {
        "semantics": semantics,
        "warnings": Counter((w.claim_ref, w.code, w.message) for w in response.warnings),
        "coverage": response.coverage_confidence,
        "conflicted": [(k.subject, k.predicate) for k in response.conflicted_safety_predicates],
        "tables": sorted({res.reliability_table_digest for res in response.resolutions}),
    }


def _normal_columnar(rows: list[dict[str, Any]], as_of: int | None) -> dict[str, Any]:
    horizon = None if as_of is None else float(as_of - 500)
    answer = resolve_stream(stream(to_table(rows)), DEFAULT_POLICY, horizon)
    summary = resolve_stream(stream(to_table(rows)), DEFAULT_POLICY, horizon, full=False)
    for name in ("semantics", "values", "excluded"):  # SUMMARY keeps exactly what FULL says
        assert getattr(summary.tables, name) == getattr(answer.tables, name)
    sems = read(answer.tables.semantics).to_pylist()
    values = read(answer.tables.values).to_pylist()
    excluded = read(answer.tables.excluded).to_pylist()
    claims = read(answer.tables.claims).to_pylist()
    groups = read(answer.tables.groups).to_pylist()
    warnings = read(answer.tables.warnings).to_pylist()
    assert len(claims) == len(rows)
    refs = [_ref(rows, i) for i in range(len(rows))]
    per_value: list[list[Any]] = [[] for _ in values]
    for group in groups:
        per_value[group["value"]].append(
            (
                group["correlation_group"],
                group["declared"],
                group["weight"],
                refs[group["counted_row"]],
            )
        )
    claims_of: list[Counter[Any]] = [Counter() for _ in values]
    for row, claim in enumerate(claims):
        if claim["value"] is not None:
            claims_of[claim["value"]][
                (
                    refs[row],
                    claim["reliability"],
                    claim["effective_weight"],
                    claim["correlation_group"],
                    claim["counted"],
                )
            ] += 1
    semantics = []
    for index, sem in enumerate(sems):
        mine = [i for i, v in enumerate(values) if v["semantic"] == index]
        semantics.append(
            (
                sem["subject"],
                sem["predicate"],
                sem["status"],
                None if sem["leader"] is None else values[sem["leader"]]["value_key"],
                sem["confidence"],
                sem["safety_sensitive"],
                sem["requires_review"],
                sem["rationale"],
                [
                    (values[i]["value_key"], values[i]["support"], per_value[i], claims_of[i])
                    for i in mine
                ],
                sorted(
                    (refs[e["row"]], e["reason"], tuple(e["superseded_by"]))
                    for e in excluded
                    if e["semantic"] == index
                ),
            )
        )
        if sem["leader"] is not None:
            assert sem["leader"] == mine[0]
    assert [w["row"] for w in warnings] == sorted(w["row"] for w in warnings)
    return {
        "semantics": semantics,
        "warnings": Counter((refs[w["row"]], w["code"], w["message"]) for w in warnings),
        "coverage": answer.coverage,
        "conflicted": answer.conflicted_safety,
        "tables": [answer.table_digest] if semantics else [],
    }


def _close(mine: Any, theirs: Any) -> None:
    """Equal, floats within 1e-12 (supports are in fact computed identically)."""
    if isinstance(theirs, float):
        assert math.isclose(mine, theirs, rel_tol=0, abs_tol=1e-12), (mine, theirs)
    elif isinstance(theirs, list | tuple):
        assert len(mine) == len(theirs), (mine, theirs)
        for a, b in zip(mine, theirs, strict=True):
            _close(a, b)
    else:
        assert mine == theirs


_PATH = re.compile(r"evidence\.claims\[(\d+)\]\.(relation\.kind|relation\.target_claim_id|\w+)")
_COLUMN = {"relation.kind": "relation_kind", "relation.target_claim_id": "relation_target"}


def _columnar_path(text: str) -> str:
    def swap(match: re.Match[str]) -> str:
        field = match.group(2)
        return f"claims_arrow.{_COLUMN.get(field, field)}[{match.group(1)}]"

    text = _PATH.sub(swap, text)
    return re.sub(r"evidence\.claims\[(\d+)\]", r"claims_arrow.id[\1]", text)


class TestDifferential:
    @PROFILE
    @given(evidence(), st.sampled_from([None, 1200, 2500]))
    def test_tables_equal_resolve_evidence(
        self, rows: list[dict[str, Any]], as_of: int | None
    ) -> None:
        """Every number, order, counted claim, exclusion and warning equals the reference's."""
        try:
            theirs = _normal_reference(_reference(rows, as_of))
        except InvalidArgument as error:
            _same_error(rows, error)
            return
        mine = _normal_columnar(rows, as_of)
        assert mine["warnings"] == theirs["warnings"]
        assert mine["conflicted"] == theirs["conflicted"]
        assert mine["coverage"] == theirs["coverage"]
        assert len(mine["semantics"]) == len(theirs["semantics"])
        for a, b in zip(mine["semantics"], theirs["semantics"], strict=True):
            *head, values, excluded = b
            *my_head, my_values, my_excluded = a
            _close(my_head, head)
            assert my_excluded == excluded
            assert len(my_values) == len(values)
            for (key, support, groups, claims), (k2, s2, g2, c2) in zip(
                my_values, values, strict=True
            ):
                assert key == k2
                assert support == s2  # equal to the bit: the same multiplications in order
                _close(groups, g2)
                assert claims == c2

    @PROFILE
    @given(evidence(invalid=True))
    def test_errors_equal_resolve_evidence(self, rows: list[dict[str, Any]]) -> None:
        """Invalid claims give the same reason and violations, at column paths."""
        try:
            _reference(rows, None)
        except InvalidArgument as error:
            _same_error(rows, error)
        else:  # the mutations happened to leave every claim valid
            resolve_stream(stream(to_table(rows, dictionary=False)), DEFAULT_POLICY)


def _same_error(rows: list[dict[str, Any]], theirs: InvalidArgument) -> None:
    with pytest.raises(InvalidArgument) as columnar:
        resolve_stream(stream(to_table(rows, dictionary=False)), DEFAULT_POLICY)
    mine = columnar.value
    assert mine.reason == theirs.reason
    assert [(v.field, v.description) for v in mine.violations] == [
        (_columnar_path(v.field), _columnar_path(v.description)) for v in theirs.violations
    ]
    assert mine.message == _columnar_path(theirs.message)
    assert dict(mine.metadata) == dict(theirs.metadata)
    assert (mine.more_violations, mine.violations_complete) == (
        theirs.more_violations,
        theirs.violations_complete,
    )
