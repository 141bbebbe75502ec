"""The asyncio clients against the three real services, in this process on loopback ports.

Every RPC of every service is called at least once through the typed client,
and the error families come back as ``AssayCallError`` subclasses with the
server's reason, field paths and request id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from assay.client import (
    AlreadyExistsError,
    AsyncAdjudicationClient,
    AsyncPlannerClient,
    AsyncResolverClient,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from assay.client.builders import as_evidence
from assay.client.evidence import load_json_file
from assay.executor.stack import LocalStack, local_stack
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import claim_pb2, gold_pb2, plan_pb2, resolution_pb2
from assay.v1 import planner_service_pb2 as ps
from assay.v1 import resolver_service_pb2 as rs
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = load_json_file(ROOT / "examples/evidence/safety-conflict.json")
SUBJECT, PREDICATE = "api:payments.create", "idempotency.mode"


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    async with local_stack(tmp_path / "assay.db") as running:
        yield running


@pytest.fixture
async def resolver(stack: LocalStack) -> AsyncIterator[AsyncResolverClient]:
    async with AsyncResolverClient(stack.resolver, timeout=10) as client:
        yield client


@pytest.fixture
async def planner(stack: LocalStack) -> AsyncIterator[AsyncPlannerClient]:
    async with AsyncPlannerClient(stack.planner, timeout=10) as client:
        yield client


@pytest.fixture
async def adjudication(stack: LocalStack) -> AsyncIterator[AsyncAdjudicationClient]:
    async with AsyncAdjudicationClient(stack.adjudication, timeout=10) as client:
        yield client


class TestResolver:
    async def test_every_resolver_rpc(self, resolver: AsyncResolverClient) -> None:
        """resolve, resolve_all, hypotheses, reconcile and the policy answer through the client."""
        resolution = await resolver.resolve(EVIDENCE, SUBJECT, PREDICATE)
        assert resolution.status == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        assert resolution.requires_review
        everything = await resolver.resolve_all(EVIDENCE)
        assert [(k.subject, k.predicate) for k in everything.conflicted_safety_predicates] == [
            (SUBJECT, PREDICATE)
        ]
        extra = claim_pb2.Claim(
            subject=SUBJECT, predicate=PREDICATE, source="human_review", confidence=1.0
        )
        extra.value.string_value = "idempotency-key"
        evidence = as_evidence(EVIDENCE)
        hypotheses = await resolver.resolve_hypotheses(
            rs.ResolveHypothesesRequest(
                evidence=evidence,
                subject=SUBJECT,
                predicate=PREDICATE,
                hypotheses=[rs.Hypothesis(label="person", claims=[extra])],
            )
        )
        assert hypotheses.hypotheses[0].resolution.status == (
            resolution_pb2.RESOLUTION_STATUS_RESOLVED
        )
        reconciled = await resolver.reconcile(
            rs.ReconcileRequest(evidence=evidence, proposals=[extra])
        )
        assert reconciled.outcomes[0].decision == rs.RECONCILE_DECISION_REQUIRES_REVIEW
        table = await resolver.policy()
        assert table["human_review"] == 1.0

    async def test_bad_input_is_invalid_argument_naming_the_field(
        self, resolver: AsyncResolverClient
    ) -> None:
        """An unknown source kind comes back as InvalidArgumentError with the field path."""
        bad = [{**EVIDENCE["claims"][0], "source": "oracle"}]
        with pytest.raises(InvalidArgumentError) as caught:
            await resolver.resolve(bad, SUBJECT, PREDICATE, x_request_id="client-test-1")
        assert caught.value.reason == "ERROR_REASON_UNKNOWN_SOURCE"
        assert caught.value.field_paths() == ["evidence.claims[0].source"]
        assert caught.value.request_id == "client-test-1"


class TestPlanner:
    async def test_plan_and_probes(self, planner: AsyncPlannerClient) -> None:
        """``plan`` honours the grants; ``probes`` pages through the catalogue."""
        response = await planner.plan(EVIDENCE, SUBJECT, PREDICATE, granted=["VCS_READ"])
        assert response.plan.resolution_status == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
        by_probe = {c.probe: c for c in response.plan.candidates}
        assert by_probe[plan_pb2.PROBE_KIND_HUMAN_REVIEW].availability == (
            plan_pb2.AVAILABILITY_AVAILABLE
        )
        vcs = by_probe[plan_pb2.PROBE_KIND_INSPECT_VCS_STATE]
        assert list(vcs.missing_grants) == [plan_pb2.SIDE_EFFECT_CLASS_FILESYSTEM_READ]
        probes = [p.kind async for p in planner.probes()]
        assert len(probes) == 6
        raw = await planner.list_probes(ps.ListProbesRequest(page_size=2))
        assert len(raw.probes) == 2
        assert raw.next_page_token

    async def test_planner_errors_map(self, planner: AsyncPlannerClient) -> None:
        """A request without a target is InvalidArgumentError naming ``subject``."""
        with pytest.raises(InvalidArgumentError) as caught:
            await planner.plan_evidence(ps.PlanEvidenceRequest(predicate=PREDICATE))
        assert "subject" in caught.value.field_paths()


class TestAdjudication:
    async def test_the_whole_workflow_and_every_rpc(
        self, adjudication: AsyncAdjudicationClient
    ) -> None:
        """Register, enqueue, review, adjudicate, freeze, list, export, agree, audit, delete."""
        client = adjudication
        for reviewer in ("fx-a", "fx-b", "fx-c"):
            await client.add_reviewer(reviewer, "MECHANISM_TEST_FIXTURE")
        assert [r.reviewer_id async for r in client.reviewers()] == ["fx-a", "fx-b", "fx-c"]
        got = await client.get_reviewer(adj.GetReviewerRequest(reviewer_id="fx-a"))
        assert got.reviewer.kind == gold_pb2.REVIEWER_KIND_MECHANISM_TEST_FIXTURE
        case = await client.enqueue(
            tenant="t1",
            subject=SUBJECT,
            predicate=PREDICATE,
            candidate_values=["idempotency-key", "none"],
            local_verdict="none",
            evidence_refs=["spec-idem", "trace-idem"],
        )
        queue = [c.case_id async for c in client.queue("fx-a")]
        assert queue == [case.case_id]
        blinded = await client.get_blinded_case(adj.GetBlindedCaseRequest(case_id=case.case_id))
        assert not hasattr(blinded.case, "local_verdict")
        first = await client.review(case.case_id, "fx-a", "idempotency-key")
        assert first.state == adj.CASE_STATE_AWAITING_SECOND_REVIEW
        second = await client.review(case.case_id, "fx-b", "none")
        assert second.state == adj.CASE_STATE_DISAGREED
        with pytest.raises(FailedPreconditionError) as caught:
            await client.adjudicate(case.case_id, "fx-a", "none")
        assert caught.value.reason == "ERROR_REASON_ADJUDICATOR_IS_REVIEWER"
        decided = await client.adjudicate(case.case_id, "fx-c", "idempotency-key")
        assert decided.state == adj.CASE_STATE_RESOLVED
        revision = await client.freeze(case.case_id)
        assert revision.provenance == gold_pb2.LABELING_PROVENANCE_SYNTHETIC_MECHANISM_TEST
        latest = await client.latest_gold_label(case.case_id)
        assert latest is not None
        assert latest.digest == revision.digest
        state = await client.get_case_state(adj.GetCaseStateRequest(case_id=case.case_id))
        assert state.state == adj.CASE_STATE_FROZEN
        operator = await client.get_case(adj.GetCaseRequest(case_id=case.case_id))
        assert operator.case.local_verdict.string_value == "none"
        assert len(operator.reviews) == 2
        items = [item async for item in client.export()]
        assert isinstance(items[-1], adj.ExportManifest)
        assert items[-1].contains_synthetic_labels
        assert [type(i) for i in items[:-1]] == [adj.CorpusRecord]
        agreement = await client.compute_agreement()
        assert agreement.status == adj.AGREEMENT_STATUS_INSUFFICIENT
        assert agreement.fixture_reviewers_contributed
        verified = await client.verify_audit_chain()
        assert verified.ok
        events = [e.event_type async for e in client.audit_events()]
        assert events[-1] == adj.AUDIT_EVENT_TYPE_GOLD_LABEL_FROZEN
        deleted = await client.delete_tenant_records(adj.DeleteTenantRecordsRequest(tenant="t1"))
        assert deleted.deleted.cases == 1
        swept = await client.sweep_expired_records()
        assert swept.deleted.cases == 0
        after = [item async for item in client.export()]
        assert isinstance(after[-1], adj.ExportManifest)
        assert after[-1].exclusions[0].case_id == case.case_id

    async def test_adjudication_errors_map(self, adjudication: AsyncAdjudicationClient) -> None:
        """NOT_FOUND, ALREADY_EXISTS and INVALID_ARGUMENT come back as their subclasses."""
        with pytest.raises(NotFoundError) as missing:
            await adjudication.get_case(adj.GetCaseRequest(case_id="case_nope"))
        assert missing.value.reason == "ERROR_REASON_CASE_NOT_FOUND"
        await adjudication.add_reviewer("human-1", "HUMAN", attested_by="a@example.org")
        with pytest.raises(AlreadyExistsError):
            await adjudication.add_reviewer("human-1", "HUMAN", attested_by="a@example.org")
        with pytest.raises(InvalidArgumentError) as caught:
            await adjudication.add_reviewer("human-2", "HUMAN")
        assert caught.value.reason == "ERROR_REASON_HUMAN_REVIEWER_REQUIRES_ATTESTATION"


class TestUnreachable:
    async def test_a_dead_target_is_unavailable_within_the_timeout(self) -> None:
        """Nothing listening: UnavailableError (after the channel's retries), not a hang."""
        async with AsyncResolverClient(f"127.0.0.1:{free_port()}", timeout=3) as client:
            with pytest.raises(UnavailableError) as caught:
                await client.policy()
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE
