"""Reading planner requests (with every bad field named) and the resolver's answers."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from assay import errors
from assay.services.planner.domain.model import (
    CountedClaim,
    Outcome,
    OutcomeAssumption,
    RationaleFlag,
    ResolutionStatus,
    SideEffect,
    SignalAvailability,
    SignalClass,
)
from assay.services.planner.wire import convert, scope
from assay.v1 import plan_pb2, planner_service_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as rpb


def request(**fields: object) -> planner_service_pb2.PlanEvidenceRequest:
    base: dict[str, object] = {"subject": "s", "predicate": "p"}
    return json_format.ParseDict({**base, **fields}, planner_service_pb2.PlanEvidenceRequest())


def violations(req: planner_service_pb2.PlanEvidenceRequest) -> list[str]:
    with pytest.raises(errors.InvalidArgument) as caught:
        convert.read_request(req)
    assert caught.value.reason is errors.Reason.INVALID_FIELD
    return [v.field for v in caught.value.violations]


class TestReadRequest:
    def test_reads_a_valid_request(self) -> None:
        """Notes, capabilities and policy come through as domain values."""
        notes, caps, policy = convert.read_request(
            request(
                missingSignals=[
                    {"signalClass": "SIGNAL_CLASS_TOOL_TRACE", "availability": 4, "note": "x"}
                ],
                capabilities={"signals": [{"signalClass": 1, "availability": 2}]},
                policy={"grantedSideEffects": [1, 5], "egressAllowed": True},
            )
        )
        assert notes[0].signal_class is SignalClass.TOOL_TRACE
        assert notes[0].availability is SignalAvailability.COLLECTION_FAILED
        assert caps == {SignalClass.PROCESS_RESULT: SignalAvailability.UNSUPPORTED}
        assert policy.granted == {SideEffect.FILESYSTEM_READ, SideEffect.VCS_READ}
        assert policy.egress_allowed
        assert not policy.cloud_sync_allowed

    @pytest.mark.parametrize(
        ("fields", "paths"),
        [
            ({"subject": ""}, ["subject"]),
            ({"subject": "", "predicate": ""}, ["subject", "predicate"]),
            ({"missingSignals": [{"availability": 2}]}, ["missing_signals[0].signal_class"]),
            ({"missingSignals": [{"signalClass": 1}]}, ["missing_signals[0].availability"]),
            (
                {"missingSignals": [{"signalClass": 99, "availability": 2}]},
                ["missing_signals[0].signal_class"],
            ),
            (
                {"missingSignals": [{"signalClass": 9, "availability": 2}]},
                ["missing_signals[0].signal_class"],
            ),
            (
                {"capabilities": {"signals": [{"signalClass": 1, "availability": 42}]}},
                ["capabilities.signals[0].availability"],
            ),
            (
                {
                    "capabilities": {
                        "signals": [
                            {"signalClass": 1, "availability": 1},
                            {"signalClass": 1, "availability": 2},
                        ]
                    }
                },
                ["capabilities.signals[1].signal_class"],
            ),
            ({"policy": {"grantedSideEffects": [1, 0]}}, ["policy.granted_side_effects[1]"]),
            ({"policy": {"grantedSideEffects": [77]}}, ["policy.granted_side_effects[0]"]),
        ],
    )
    def test_every_bad_field_is_named(self, fields: dict[str, object], paths: list[str]) -> None:
        """INVALID_ARGUMENT names each bad field by its path in the planner request."""
        assert violations(request(**fields)) == paths


class TestResolverSide:
    def test_hypotheses_request_carries_one_hypothesis_per_outcome(self) -> None:
        """Each outcome becomes one single-claim hypothesis, observed at as_of when given."""
        req = request(asOf="2026-01-01T00:00:00Z", staleAfter="3600s")
        outcomes = [
            Outcome(OutcomeAssumption.RUNNER_UP, "test_result", '"none"', "none", "planner/x"),
            Outcome(
                OutcomeAssumption.RUNNER_UP, "vcs_state", '"none"', "none", "vcs_state|r", False
            ),
        ]
        out = convert.hypotheses_request(req, outcomes)
        assert [len(h.claims) for h in out.hypotheses] == [1, 1]
        first, second = (h.claims[0] for h in out.hypotheses)
        assert first.correlation_group == "planner/x"
        assert not second.HasField("correlation_group")
        assert second.source_ref == "r"
        assert first.observe_time == req.as_of
        assert out.stale_after == req.stale_after
        assert out.detail == rpb.RESOLUTION_DETAIL_SUMMARY

    def test_requests_as_bytes_parse_to_the_request_messages(self) -> None:
        """The bytes built around one serialization of the evidence are the same requests
        as the messages: same fields, same evidence."""
        req = request(
            asOf="2026-01-01T00:00:00Z",
            staleAfter="3600s",
            evidence={"claims": [{"id": "c1", "subject": "s", "predicate": "p", "value": 1}]},
        )
        outcomes = [Outcome(OutcomeAssumption.RUNNER_UP, "test_result", "2", 2, "planner/x")]
        evidence = convert.evidence_field(req.evidence)
        semantic = rpb.ResolveSemanticRequest.FromString(
            convert.semantic_request_bytes(req, evidence)
        )
        assert semantic == convert.semantic_request(req)
        hypotheses = rpb.ResolveHypothesesRequest.FromString(
            convert.hypotheses_request_bytes(req, outcomes, evidence)
        )
        assert hypotheses == convert.hypotheses_request(req, outcomes)
        empty = convert.evidence_field(request().evidence)
        assert rpb.ResolveSemanticRequest.FromString(
            convert.semantic_request_bytes(request(), empty)
        ).HasField("evidence")

    def test_plan_response_bytes_equal_the_serialized_message(self) -> None:
        """The resolver's resolution re-tagged into the plan response gives the bytes that
        serializing the response message gives; an answer that is not exactly one
        resolution field is refused (the servicer then builds the message)."""
        resolution = resolution_pb2.SemanticResolution(
            subject="s", predicate="p", status=resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        )
        for key, support in (('"a"', 0.5), ('"b"', 0.25)):
            resolution.values.add(value_key=key, support=support).claims.add(claim_ref="c")
        answer = rpb.ResolveSemanticResponse(resolution=resolution)
        raw = answer.SerializeToString(deterministic=True)
        plan = plan_pb2.EvidencePlan(
            subject="s", predicate="p", outcome=plan_pb2.PLAN_OUTCOME_ACQUISITION_RECOMMENDED
        )
        expected = planner_service_pb2.PlanEvidenceResponse(
            plan=plan, resolution=resolution
        ).SerializeToString(deterministic=True)
        assert convert.plan_response_bytes(plan, raw) == expected
        for bad in (b"", raw + raw[:2], b"\x08\x01" + raw, raw[:-1]):
            with pytest.raises(ValueError, match=r"resolution field|varint"):
                convert.plan_response_bytes(plan, bad)

    def test_plan_response_bytes_from_a_hypotheses_answer(self) -> None:
        """The one-call plan echoes ResolveHypothesesResponse.base (field 1 too): re-tagged,
        the hypotheses after it skipped; a base that appears twice is refused."""
        base = resolution_pb2.SemanticResolution(subject="s", predicate="p")
        base.values.add(value_key='"a"', support=0.5).claims.add(claim_ref="c")
        answer = rpb.ResolveHypothesesResponse(base=base)
        for label in ("h0", "h1"):
            answer.hypotheses.add(label=label).resolution.CopyFrom(base)
        raw = answer.SerializeToString(deterministic=True)
        plan = plan_pb2.EvidencePlan(subject="s", predicate="p")
        expected = planner_service_pb2.PlanEvidenceResponse(
            plan=plan, resolution=base
        ).SerializeToString(deterministic=True)
        assert convert.plan_response_bytes(plan, raw) == expected
        twice = rpb.ResolveHypothesesResponse(base=base).SerializeToString()
        with pytest.raises(ValueError, match="more than once"):
            convert.plan_response_bytes(plan, raw + twice)
        request_bytes = convert.hypotheses_request_bytes(
            request(), [], b"", rpb.RESOLUTION_DETAIL_FULL
        )
        sent = rpb.ResolveHypothesesRequest.FromString(request_bytes)
        assert (sent.detail, sent.base_detail) == (
            rpb.RESOLUTION_DETAIL_SUMMARY,
            rpb.RESOLUTION_DETAIL_FULL,
        )

    def test_counted_pairs_keep_declared_groups_and_each_sources_first_defaulted(
        self,
    ) -> None:
        """Independence, the joined group and corroboration read only these."""
        pb = resolution_pb2.SemanticResolution()
        view = pb.values.add(value_key='"a"', support=0.9)
        view.groups.add(correlation_group="suite", declared=True)
        claims = [
            ("test_result", "suite", True),
            ("test_result", "test_result|z", True),
            ("api_spec", "api_spec|b", True),
            ("api_spec", "api_spec|a", True),
            ("api_spec", "api_spec|0", False),
        ]
        for i, (source, group, counted) in enumerate(claims):
            view.claims.add(
                claim_ref=f"c{i}", source=source, correlation_group=group, counted=counted
            )
        for members in (True, False):
            (read,) = convert.resolution(pb, with_members=members).values
            assert read.counted == (
                CountedClaim("api_spec", "api_spec|a", False),
                CountedClaim("test_result", "suite", True),
                CountedClaim("test_result", "test_result|z", False),
            )

    @pytest.mark.parametrize("data", [{}, [], {"limits": {}}, {"tags": []}, [{}, []]])
    def test_empty_objects_and_lists_survive_both_ways(self, data: Any) -> None:
        """An empty object or list, top level or nested, is read from a resolution and
        written into a hypothetical claim as itself, never as null or an unset value."""
        pb = resolution_pb2.SemanticResolution()
        view = pb.values.add(value_key="k", support=0.5)
        json_format.ParseDict(data, view.value)
        (read,) = convert.resolution(pb).values
        assert read.value == data
        outcome = Outcome(OutcomeAssumption.RUNNER_UP, "test_result", "k", read.value, "g")
        claim = convert.outcome_claim(request(), outcome)
        assert claim.value.WhichOneof("kind") == (
            "struct_value" if isinstance(data, dict) else "list_value"
        )
        assert json_format.MessageToDict(claim.value) == data

    def test_reads_counted_claims_with_their_groups(self) -> None:
        """Only counted claims are read, with the declared flag of their group."""
        pb = json_format.ParseDict(
            {
                "status": "RESOLUTION_STATUS_RESOLVED",
                "leader": {"value": "key", "valueKey": '"key"', "support": 0.9},
                "values": [
                    {
                        "value": "key",
                        "valueKey": '"key"',
                        "support": 0.9,
                        "claims": [
                            {"source": "api_spec", "correlationGroup": "g", "counted": True},
                            {"source": "api_spec", "correlationGroup": "g", "counted": False},
                            {"source": "test_result", "correlationGroup": "t|r", "counted": True},
                        ],
                        "groups": [
                            {"correlationGroup": "g", "declared": True},
                            {"correlationGroup": "t|r", "declared": False},
                        ],
                    }
                ],
                "rationale": ["RATIONALE_FLAG_INDEPENDENCE_UNVERIFIED"],
            },
            resolution_pb2.SemanticResolution(),
        )
        res = convert.resolution(pb)
        assert res.status is ResolutionStatus.RESOLVED
        assert res.leader_key == '"key"'
        assert res.flags == {RationaleFlag.INDEPENDENCE_UNVERIFIED}
        assert res.values[0].counted == (
            CountedClaim("api_spec", "g", True),
            CountedClaim("test_result", "t|r", False),
        )


class TestTargetScope:
    def test_keeps_the_target_its_superseders_and_its_targets(self) -> None:
        """Target claims, claims pointing at them, and claims they point at; nothing else."""
        req = request(
            evidence={
                "claims": [
                    {"id": "t1", "subject": "s", "predicate": "p"},
                    {"id": "o1", "subject": "s", "predicate": "other"},
                    {
                        "id": "o2",
                        "subject": "x",
                        "predicate": "p",
                        "relation": {"kind": "RELATION_KIND_SUPERSEDES", "targetClaimId": "t1"},
                    },
                    {
                        "id": "t2",
                        "subject": "s",
                        "predicate": "p",
                        "relation": {"kind": "RELATION_KIND_SUPERSEDES", "targetClaimId": "o3"},
                    },
                    {"id": "o3", "subject": "y", "predicate": "q"},
                    {
                        "id": "o4",
                        "subject": "y",
                        "predicate": "q",
                        "relation": {"kind": "RELATION_KIND_SUPERSEDES", "targetClaimId": "o1"},
                    },
                    {"subject": "s", "predicate": "p"},
                ]
            }
        )
        scoped = scope.target_scope(req)
        assert [c.id for c in scoped.claims] == ["t1", "o2", "t2", "o3", ""]

    def test_all_on_target_is_the_whole_evidence(self) -> None:
        """When every claim is about the target, the scope is the evidence itself."""
        req = request(
            evidence={
                "claims": [
                    {"id": "t1", "subject": "s", "predicate": "p"},
                    {
                        "id": "t2",
                        "subject": "s",
                        "predicate": "p",
                        "relation": {"kind": "RELATION_KIND_SUPERSEDES", "targetClaimId": "t1"},
                    },
                ]
            }
        )
        scoped = scope.target_scope(req)
        assert scoped == req.evidence
        assert len(scoped.claims) == len(req.evidence.claims)
