"""Every claim rule of ``claim_rules`` is enforced on every path that reads claims.

For each rule, one request whose second claim breaks only that rule goes through
ResolveEvidence and ResolveColumns on a real server on loopback (and its claims through
the fast intake, which only detects): each path must refuse it with the rule's reason,
its field and its words. A path that cannot see a rule is listed in ``EXCLUDED`` with
why, so a rule added to the table fails here until every path enforces it or the gap is
written down.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
import pytest

from assay.errors import excerpt
from assay.prototime import timestamp_problem
from assay.runtime.server import serving
from assay.runtime.status import DecodedError, decode_rpc_error
from assay.services.registry import ServeOptions
from assay.services.resolver.domain.claim_rules import CLAIM_RULES, ClaimRule
from assay.services.resolver.domain.policy import DEFAULT_POLICY
from assay.services.resolver.service import build_spec
from assay.services.resolver.wire.intake import intake, source_table
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc
from tests.unit.resolver.columnar_support import stream, to_claim, to_table

TIMEOUT = 30.0
PATHS = ("ResolveEvidence", "intake", "ResolveColumns")


def valid(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "subject": "api:payments.create",
        "predicate": "idempotency.mode",
        "value": '"key"',
        "source": "test_result",
        "confidence": 0.9,
    }
    base.update(fields)
    return base


# The one change to a valid second claim that breaks each rule (and nothing else).
BREAKS: dict[str, dict[str, Any]] = {
    "subject_required": {"subject": ""},
    "predicate_required": {"predicate": ""},
    "value_required": {"value": None},
    "value_keyable": {"value": '{"a": NaN}'},
    "source_required": {"source": ""},
    "source_known": {"source": "oracle"},
    "confidence_required": {"confidence": None},
    "confidence_unit": {"confidence": 1.5},
    "reliability_unit": {"reliability": 2.0},
    "observe_time_valid": {"observe_time": 10**12},
    "review_status_known": {"review_status": 7},
    "relation_needs_id": {"relation_kind": 3, "relation_target": "c1"},
    "relation_kind_required": {"id": "c2", "relation_target": "c1"},
    "relation_target_required": {"id": "c2", "relation_kind": 1},
    "id_unique": {"id": "c1"},
}
# (rule, path) pairs a path cannot enforce, and why.
EXCLUDED: dict[tuple[str, str], str] = {
    ("confidence_required", "ResolveEvidence"): (
        "a proto3 double has no presence: a Claim without a confidence reads 0.0, a valid one"
    ),
    ("confidence_required", "intake"): "the intake reads Claim messages: as ResolveEvidence",
}
# The sub-path below the rule's field that each breaking claim names (the bad member).
SUB = {"value_keyable": ".a"}


def rows(rule: ClaimRule) -> list[dict[str, Any]]:
    return [valid(id="c1"), valid(**BREAKS[rule.name])]


def enforced(path: str) -> list[Any]:
    return [
        pytest.param(rule, id=rule.name)
        for rule in CLAIM_RULES
        if (rule.name, path) not in EXCLUDED
    ]


@pytest.fixture
async def stub() -> AsyncIterator[pb_grpc.ResolverServiceStub]:
    async with (
        serving([await build_spec(ServeOptions(port=0))]) as running,
        grpc.aio.insecure_channel(running[0].address) as channel,
    ):
        yield pb_grpc.ResolverServiceStub(channel)


async def refusal(call: Awaitable[Any]) -> DecodedError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return decode_rpc_error(caught.value)


class TestTheTable:
    def test_every_rule_has_a_breaking_claim(self) -> None:
        """Each rule of the table has a claim breaking it here, and no retired rule lingers."""
        assert set(BREAKS) == {rule.name for rule in CLAIM_RULES}

    def test_exclusions_name_real_rules_and_paths(self) -> None:
        """The exclusion list names only rules of the table and paths this test drives."""
        names = {rule.name for rule in CLAIM_RULES}
        assert all(name in names and path in PATHS for name, path in EXCLUDED)

    def test_the_valid_claim_passes(self) -> None:
        """The claim every case starts from is valid, so each case breaks only its rule."""
        claims = [to_claim(valid(id="c1")), to_claim(valid())]
        assert intake(claims, source_table(DEFAULT_POLICY.reliability)) is not None


class TestEveryRuleOnEveryPath:
    @pytest.mark.parametrize("rule", enforced("ResolveEvidence"))
    async def test_resolve_evidence(
        self, stub: pb_grpc.ResolverServiceStub, rule: ClaimRule
    ) -> None:
        """ResolveEvidence refuses the claim with the rule's reason, field and words."""
        request = pb.ResolveEvidenceRequest()
        request.evidence.claims.extend(to_claim(row) for row in rows(rule))
        error = await refusal(stub.ResolveEvidence(request, timeout=TIMEOUT))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == rule.reason
        field = f"evidence.claims[1].{rule.field}{SUB.get(rule.name, '')}"
        assert [v.field for v in error.violations] == [field]
        assert error.violations[0].description == expected_words(rule, "evidence.claims")

    @pytest.mark.parametrize("rule", enforced("intake"))
    def test_intake(self, rule: ClaimRule) -> None:
        """The fast intake detects the claim (it returns None, and the reference explains)."""
        claims = [to_claim(row) for row in rows(rule)]
        assert intake(claims, source_table(DEFAULT_POLICY.reliability)) is None

    @pytest.mark.parametrize("rule", enforced("ResolveColumns"))
    async def test_resolve_columns(
        self, stub: pb_grpc.ResolverServiceStub, rule: ClaimRule
    ) -> None:
        """ResolveColumns refuses the row with the rule's reason, column and words."""
        request = pb.ResolveColumnsRequest(claims_arrow=stream(to_table(rows(rule))))
        error = await refusal(stub.ResolveColumns(request, timeout=TIMEOUT))
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert error.reason == rule.reason
        field = f"claims_arrow.{rule.column}[1]{SUB.get(rule.name, '')}"
        assert [v.field for v in error.violations] == [field]
        assert error.violations[0].description == expected_words(rule, "claims_arrow")


def expected_words(rule: ClaimRule, where: str) -> str:
    """The rule's message for the breaking claim, filled as each path fills it."""
    values: dict[str, dict[str, object]] = {
        "value_keyable": {"sub": ".a", "description": "nan is not a finite number"},
        "source_known": {"source": excerpt("oracle")},
        "confidence_unit": {"confidence": 1.5},
        "reliability_unit": {"reliability": 2.0},
        "review_status_known": {"status": 7},
        "observe_time_valid": {"problem": timestamp_problem(10**12, 0)},
        "id_unique": {
            "id": excerpt("c1"),
            "first": "evidence.claims[0]" if where == "evidence.claims" else "claims_arrow.id[0]",
        },
    }
    return rule.violation("", **values.get(rule.name, {})).description
