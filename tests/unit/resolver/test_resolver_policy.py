"""The policy: the documented default table, canonical value keys, and table files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from assay.errors import Reason
from assay.reliability_table import TableError
from assay.services.resolver.domain import model, value_keys
from assay.services.resolver.domain.policy import (
    BUILTIN_ORIGIN,
    CONFLICT_MARGIN,
    DEFAULT_POLICY,
    DEFAULT_RELIABILITY,
    MARGIN_TOLERANCE,
    SAFETY_SENSITIVE_PREDICATES,
    TABLE_ENV,
    load_policy,
)
from assay.v1 import claim_pb2, resolution_pb2, resolver_service_pb2
from tests.unit.resolver.resolver_factories import claim, invalid, resolve, resolve_evidence


class TestDefaults:
    @pytest.mark.parametrize(
        ("source", "reliability"),
        [
            ("human_review", 1.0),
            ("artifact_hash", 0.95),
            ("vcs_state", 0.9),
            ("runtime_trace", 0.9),
            ("test_result", 0.85),
            ("ci_status", 0.85),
            ("api_spec", 0.8),
            ("replay_experiment", 0.8),
            ("static_analysis", 0.7),
            ("documentation", 0.6),
            ("llm_inference", 0.4),
            ("generated_mock", 0.3),
        ],
    )
    def test_default_table(self, source: str, reliability: float) -> None:
        """Every documented source kind has its documented reliability."""
        assert DEFAULT_RELIABILITY[source] == reliability

    def test_constants(self) -> None:
        """Margin 0.2, tolerance 1e-9 and the five safety-sensitive predicates."""
        assert (CONFLICT_MARGIN, MARGIN_TOLERANCE) == (0.2, 1e-9)
        assert sorted(SAFETY_SENSITIVE_PREDICATES) == [
            "auth.principal",
            "confirmation.required",
            "effect.stateImpact",
            "idempotency.mode",
            "retries.mode",
        ]
        assert len(DEFAULT_RELIABILITY) == 12


class TestTableFile:
    def write(self, tmp_path: Path, content: Any) -> str:
        path = tmp_path / "table.json"
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return str(path)

    def test_good_file_replaces_the_table(self, tmp_path: Path) -> None:
        """The file's table is used by every computation, and its path is the origin."""
        path = self.write(tmp_path, {"sources": {"oracle": 0.5, "human_review": 1}})
        policy = load_policy(path)
        assert dict(policy.reliability) == {"oracle": 0.5, "human_review": 1.0}
        assert policy.origin == path
        assert resolve([claim(source="oracle", confidence=1.0)], policy=policy).confidence == 0.5
        error = invalid(resolve_evidence, [claim(source="test_result")], policy=policy)
        assert error.reason == Reason.UNKNOWN_SOURCE

    @pytest.mark.parametrize(
        ("content", "complaint"),
        [
            ("{not json", "not valid JSON"),
            ('{"sources": {"a": NaN}}', "not valid JSON"),
            ({"sources": {"a": 1.5}}, "sources.a"),
            ({"sources": {"a": -0.1}}, "sources.a"),
            ({"sources": {"a": "high"}}, "sources.a"),
            ({"sources": {"a": True}}, "sources.a"),
            ({"sources": {"a": None}}, "sources.a"),
            ({"sources": {"": 0.5}}, "name is empty"),
            ({"sources": {"  ": 0.5}}, "name is empty"),
            ({"sources": {}}, "empty"),
            ({"table": {"a": 0.5}}, "expected an object"),
            ([0.5], "expected an object"),
        ],
    )
    def test_bad_file_is_a_clear_error(self, tmp_path: Path, content: Any, complaint: str) -> None:
        """A bad table stops start-up with a message naming the file and the entry."""
        path = self.write(tmp_path, content)
        with pytest.raises(TableError) as caught:
            load_policy(path)
        assert path in str(caught.value)
        assert complaint in str(caught.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        """An unreadable file is reported, not silently replaced by the builtin table."""
        with pytest.raises(TableError, match="cannot read"):
            load_policy(str(tmp_path / "absent.json"))

    def test_environment_variable(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without an explicit path, $ASSAY_RELIABILITY_TABLE names the file."""
        path = self.write(tmp_path, {"sources": {"x": 0.1}})
        monkeypatch.setenv(TABLE_ENV, path)
        assert load_policy(None).origin == path
        explicit = self.write(tmp_path / "..", {"sources": {"y": 0.2}})
        assert load_policy(explicit).origin == explicit

    def test_builtin_without_file(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """No option and no variable: the builtin table."""
        monkeypatch.delenv(TABLE_ENV, raising=False)
        assert load_policy(None) is DEFAULT_POLICY
        assert DEFAULT_POLICY.origin == BUILTIN_ORIGIN


class TestValueKeys:
    @pytest.mark.parametrize(
        ("value", "key"),
        [
            ("a", '"a"'),
            ("", '""'),
            ("é\n", '"é\\n"'),
            (1.0, "1"),
            (-0.0, "0"),
            (0.5, "0.5"),
            (1e300, str(int(1e300))),
            (True, "true"),
            ({"b": 2, "a": 1}, '{"a":1,"b":2}'),
            ({"a": {"d": [1, 2.5], "c": None}}, '{"a":{"c":null,"d":[1,2.5]}}'),
            ([], "[]"),
        ],
    )
    def test_canonical_key(self, value: value_keys.JsonValue, key: str) -> None:
        """Sorted keys, no spaces, integral numbers as integers."""
        assert value_keys.top_level_key(value) == key

    @pytest.mark.parametrize(
        ("value", "path"),
        [(None, ""), (math.nan, ""), ({"a": [math.inf]}, "a[0]"), ([{"b": -math.inf}], "[0].b")],
    )
    def test_unkeyable_values(self, value: value_keys.JsonValue, path: str) -> None:
        """Top-level null and non-finite numbers are rejected with their sub-path."""
        with pytest.raises(value_keys.UnkeyableValue) as caught:
            value_keys.top_level_key(value)
        assert caught.value.path == path

    def test_round_trip(self) -> None:
        """A key decodes to a value with the same key."""
        key = '{"a":[1,"x",true],"b":{"c":0.25}}'
        assert value_keys.canonical_key(value_keys.from_key(key)) == key


class TestEnumsMatchTheContract:
    @pytest.mark.parametrize(
        ("domain", "contract", "prefix"),
        [
            (model.Status, resolution_pb2.ResolutionStatus, "RESOLUTION_STATUS_"),
            (model.Flag, resolution_pb2.RationaleFlag, "RATIONALE_FLAG_"),
            (model.Exclusion, resolution_pb2.ExclusionReason, "EXCLUSION_REASON_"),
            (model.WarningCode, resolution_pb2.WarningCode, "WARNING_CODE_"),
            (model.RelationKind, claim_pb2.RelationKind, "RELATION_KIND_"),
            (model.ReviewStatus, claim_pb2.ReviewStatus, "REVIEW_STATUS_"),
            (model.Decision, resolver_service_pb2.ReconcileDecision, "RECONCILE_DECISION_"),
            (model.DecisionReason, resolver_service_pb2.ReconcileReason, "RECONCILE_REASON_"),
        ],
    )
    def test_same_names_and_numbers(self, domain: Any, contract: Any, prefix: str) -> None:
        """Domain enums are the contract's, number for number."""
        assert {prefix + m.name: m.value for m in domain} == dict(contract.items())
