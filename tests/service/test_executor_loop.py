"""The executor's whole loop through the three real services on loopback ports.

Human review round trip (fixture and human reviewers), the honest return of
fixture labels, the local probes acting within grants and approvals, and a run
over TLS carrying one principal's token to every service.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from assay.client import (
    AsyncAdjudicationClient,
    AsyncPlannerClient,
    AsyncResolverClient,
    Credentials,
)
from assay.client.builders import as_evidence
from assay.client.evidence import load_json_file
from assay.executor.demo import demo_table
from assay.executor.loop import Executor, Services
from assay.executor.model import Outcome, ProbeSetup, RunReport, Settings, StopReason
from assay.executor.stack import local_stack
from assay.v1 import adjudication_service_pb2 as adj
from assay.v1 import claim_pb2
from tests.support.secure import SecureStack, secure_stack

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = as_evidence(load_json_file(ROOT / "examples/executor/idempotency-conflict.json"))
SUBJECT, PREDICATE = "api:checkout.submit", "idempotency.mode"


@dataclass
class Clients:
    services: Services
    adjudication: AsyncAdjudicationClient


async def clients_for(stack: Any) -> AsyncIterator[Clients]:
    async with (
        AsyncResolverClient(stack.resolver, timeout=10) as resolver,
        AsyncPlannerClient(stack.planner, timeout=10) as planner,
        AsyncAdjudicationClient(stack.adjudication, timeout=10) as adjudication,
    ):
        yield Clients(Services(resolver, planner, adjudication), adjudication)


@pytest.fixture
async def builtin(tmp_path: Path) -> AsyncIterator[Clients]:
    """The stack with the builtin reliability table (no fixture source kind)."""
    async with local_stack(tmp_path / "a.db") as stack:
        async for clients in clients_for(stack):
            yield clients


@pytest.fixture
async def with_fixture_kind(tmp_path: Path) -> AsyncIterator[Clients]:
    """The stack with the demo's table (builtin + mechanism_test_fixture)."""
    table, _ = demo_table(tmp_path)
    async with local_stack(tmp_path / "a.db", table) as stack:
        async for clients in clients_for(stack):
            yield clients


async def run(
    clients: Clients | Services, settings: Settings, evidence: Any = EXAMPLE
) -> RunReport:
    services = clients.services if isinstance(clients, Clients) else clients
    return await Executor(services, settings).run(evidence)


async def review_and_freeze(client: AsyncAdjudicationClient, case_id: str, kind: str) -> None:
    """Two reviewers disagree, a third decides "idempotency-key", the label is frozen."""
    attested = "reviewer@example.org" if kind == "HUMAN" else ""
    for reviewer in ("r-a", "r-b", "r-c"):
        await client.add_reviewer(reviewer, kind, attested_by=attested)
    await client.review(case_id, "r-a", "idempotency-key")
    await client.review(case_id, "r-b", "none")
    await client.adjudicate(case_id, "r-c", "idempotency-key")
    await client.freeze(case_id)


class TestHumanReview:
    async def test_a_conflict_is_enqueued_with_the_verdict_hidden(self, builtin: Clients) -> None:
        """No grants: HUMAN_REVIEW is taken, a case is enqueued, the run waits for reviewers."""
        report = await run(builtin, Settings(SUBJECT, PREDICATE, tenant="t"))
        assert report.stop_reason is StopReason.AWAITING_REVIEW
        (case_id,) = report.pending_cases
        acquisition = report.steps[0].acquisition
        assert acquisition is not None
        assert acquisition.outcome is Outcome.CASE_ENQUEUED
        assert acquisition.declared_latency == "HOURS"
        operator = await builtin.adjudication.get_case(adj.GetCaseRequest(case_id=case_id))
        assert operator.case.local_verdict.string_value == "idempotency-key"
        assert sorted(operator.case.evidence_refs) == ["spec-idem", "trace-idem"]
        # The claims behind it, as the resolver weighed them, for calibration later.
        assert sorted(c.claim_id for c in operator.case.claims) == ["spec-idem", "trace-idem"]
        assert all(c.source_kind and 0 < c.confidence <= 1 for c in operator.case.claims)
        assert operator.case.spot_check_rate == 0

    async def test_rerunning_before_the_freeze_waits_and_enqueues_nothing_new(
        self, builtin: Clients
    ) -> None:
        """A known case without a gold label: AWAITING_REVIEW, and still one case in the queue."""
        first = await run(builtin, Settings(SUBJECT, PREDICATE, tenant="t"))
        case_id = first.pending_cases[0]
        again = await run(builtin, Settings(SUBJECT, PREDICATE, tenant="t", cases=(case_id,)))
        assert again.stop_reason is StopReason.AWAITING_REVIEW
        assert again.collected[0].outcome is Outcome.AWAITING_REVIEW
        await builtin.adjudication.add_reviewer("r-x", "MECHANISM_TEST_FIXTURE")
        assert [c.case_id async for c in builtin.adjudication.queue("r-x")] == [case_id]

    async def test_a_human_gold_label_returns_as_human_review_and_resolves(
        self, builtin: Clients
    ) -> None:
        """HUMAN reviewers: the label comes back from the human_review source and settles it."""
        first = await run(builtin, Settings(SUBJECT, PREDICATE))
        case_id = first.pending_cases[0]
        await review_and_freeze(builtin.adjudication, case_id, "HUMAN")
        report = await run(builtin, Settings(SUBJECT, PREDICATE, cases=(case_id,)))
        assert report.collected[0].outcome is Outcome.GOLD_LABEL_RETURNED
        gold = [c for c in report.evidence.claims if c.id.startswith("gold:")]
        assert [c.source for c in gold] == ["human_review"]
        assert report.stop_reason is StopReason.RESOLVED
        assert report.final_leader == '"idempotency-key"'
        # Feeding the output evidence back with the same case counts the label once.
        again = await run(builtin, Settings(SUBJECT, PREDICATE, cases=(case_id,)), report.evidence)
        assert [c.id for c in again.evidence.claims].count(gold[0].id) == 1
        assert again.stop_reason is StopReason.RESOLVED

    async def test_a_resolved_semantic_is_spot_checked_at_the_rate_asked(
        self, builtin: Clients
    ) -> None:
        """Once the semantic resolves, a run asked to spot-check every resolved semantic
        sends it to review anyway, marked with its rate and carrying its claims; one asked
        for none sends nothing."""
        first = await run(builtin, Settings(SUBJECT, PREDICATE))
        case_id = first.pending_cases[0]
        await review_and_freeze(builtin.adjudication, case_id, "HUMAN")
        settings = Settings(SUBJECT, PREDICATE, cases=(case_id,), spot_check_rate=1.0)
        sampled = await run(builtin, settings)
        assert sampled.stop_reason is StopReason.RESOLVED
        assert sampled.spot_check_case
        stored = await builtin.adjudication.get_case(
            adj.GetCaseRequest(case_id=sampled.spot_check_case)
        )
        assert stored.case.spot_check_rate == 1.0
        assert "spec-idem" in {c.claim_id for c in stored.case.claims}
        unsampled = await run(builtin, Settings(SUBJECT, PREDICATE, cases=(case_id,)))
        assert unsampled.spot_check_case == ""

    async def test_a_sampled_conflict_is_marked_as_a_spot_check(self, builtin: Clients) -> None:
        """A sampled run whose semantic is in conflict enqueues its case marked with the
        rate: spot-checks sample every semantic, not only those that resolve."""
        report = await run(builtin, Settings(SUBJECT, PREDICATE, spot_check_rate=1.0))
        (case_id,) = report.pending_cases
        stored = await builtin.adjudication.get_case(adj.GetCaseRequest(case_id=case_id))
        assert stored.case.spot_check_rate == 1.0

    async def test_a_fixture_label_is_refused_by_the_builtin_table(self, builtin: Clients) -> None:
        """Fixture reviewers: the label is never passed off as human_review; the builtin table
        has no kind for it, so it does not count and the conflict stays."""
        first = await run(builtin, Settings(SUBJECT, PREDICATE))
        case_id = first.pending_cases[0]
        await review_and_freeze(builtin.adjudication, case_id, "MECHANISM_TEST_FIXTURE")
        report = await run(builtin, Settings(SUBJECT, PREDICATE, cases=(case_id,)))
        assert report.collected[0].outcome is Outcome.SOURCE_NOT_ACCEPTED
        assert not any(c.source == "human_review" for c in report.evidence.claims)
        assert report.final_status == "CONFLICTED"

    async def test_a_fixture_label_counts_only_as_a_fixture(
        self, with_fixture_kind: Clients
    ) -> None:
        """With the demo's table the fixture label counts at its low reliability, as itself."""
        first = await run(with_fixture_kind, Settings(SUBJECT, PREDICATE))
        case_id = first.pending_cases[0]
        await review_and_freeze(with_fixture_kind.adjudication, case_id, "MECHANISM_TEST_FIXTURE")
        report = await run(with_fixture_kind, Settings(SUBJECT, PREDICATE, cases=(case_id,)))
        gold = [c for c in report.evidence.claims if c.id.startswith("gold:")]
        assert [c.source for c in gold] == ["mechanism_test_fixture"]
        assert "synthetic_mechanism_test" in gold[0].method
        assert report.stop_reason is StopReason.RESOLVED


def claim(
    cid: str, subject: str, predicate: str, value: Any, source: str, conf: float
) -> dict[str, Any]:
    return {
        "id": cid,
        "subject": subject,
        "predicate": predicate,
        "value": value,
        "source": source,
        "confidence": conf,
        "correlationGroup": cid,
    }


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=15
    )
    return done.stdout.strip()


class TestLocalProbes:
    async def test_vcs_inspection_runs_when_granted_and_settles_the_head(
        self, builtin: Clients, tmp_path: Path
    ) -> None:
        """FILESYSTEM_READ + VCS_READ granted: INSPECT_VCS_STATE runs and its claim resolves."""
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        git(
            repo,
            "-c",
            "user.email=t@e.org",
            "-c",
            "user.name=T",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        )
        head = git(repo, "rev-parse", "HEAD")
        evidence = as_evidence(
            [
                claim("doc", "repo:r", "vcs.head", "aaaa", "documentation", 0.6),
                claim("llm", "repo:r", "vcs.head", "bbbb", "llm_inference", 0.9),
            ]
        )
        services = Services(builtin.services.resolver, builtin.services.planner, None)
        settings = Settings(
            "repo:r",
            "vcs.head",
            granted=frozenset({"FILESYSTEM_READ", "VCS_READ"}),
            probes=ProbeSetup(repo=repo),
        )
        report = await run(services, settings, evidence)
        acquisition = report.steps[0].acquisition
        assert acquisition is not None
        assert acquisition.probe == "INSPECT_VCS_STATE"
        assert acquisition.approved_grants == ()
        assert acquisition.within_declared_latency is True
        assert report.stop_reason is StopReason.RESOLVED
        assert report.final_leader == f'"{head}"'

    async def test_rerun_test_needs_approval_and_records_it(
        self, builtin: Clients, tmp_path: Path
    ) -> None:
        """Nothing granted: RERUN_TEST runs only with --approve RERUN_TEST, which is recorded."""
        evidence = as_evidence(
            [
                claim("doc", "suite:unit", "tests.pass", True, "documentation", 0.6),
                claim("llm", "suite:unit", "tests.pass", False, "llm_inference", 0.9),
            ]
        )
        services = Services(builtin.services.resolver, builtin.services.planner, None)
        setup = ProbeSetup(
            test_command=(sys.executable, "-c", "pass"), worktree=tmp_path, test_timeout=30
        )
        refused = await run(services, Settings("suite:unit", "tests.pass", probes=setup), evidence)
        assert refused.stop_reason is StopReason.NO_ACTIONABLE_CANDIDATE
        reasons = {s.candidate_id: s.reason for s in refused.steps[0].skipped}
        assert reasons["rerun_test/process_result"] == "NEEDS_APPROVAL"
        approved = Settings(
            "suite:unit", "tests.pass", approvals=frozenset({"RERUN_TEST"}), probes=setup
        )
        report = await run(services, approved, evidence)
        acquisition = report.steps[0].acquisition
        assert acquisition is not None
        assert acquisition.probe == "RERUN_TEST"
        assert set(acquisition.approved_grants) == {
            "FILESYSTEM_READ",
            "FILESYSTEM_WRITE_WORKTREE",
            "PROCESS_SPAWN",
        }
        assert report.approvals_used
        assert report.stop_reason is StopReason.RESOLVED
        assert report.final_leader == "true"

    async def test_the_iteration_bound_stops_a_run(self, builtin: Clients, tmp_path: Path) -> None:
        """A probe that cannot observe leaves the conflict; the run stops at its bound."""
        evidence = as_evidence(
            [
                claim("doc", "artifact:a", "artifact.sha256", "sha256:aa", "documentation", 0.6),
                claim("llm", "artifact:a", "artifact.sha256", "sha256:bb", "llm_inference", 0.9),
            ]
        )
        services = Services(builtin.services.resolver, builtin.services.planner, None)
        settings = Settings(
            "artifact:a",
            "artifact.sha256",
            granted=frozenset({"FILESYSTEM_READ"}),
            max_iterations=1,
            probes=ProbeSetup(artifact=tmp_path / "missing.bin"),
        )
        report = await run(services, settings, evidence)
        assert report.steps[0].acquisition is not None
        assert report.steps[0].acquisition.outcome is Outcome.FAILED
        assert report.stop_reason is StopReason.ITERATION_LIMIT
        assert report.final_status == "CONFLICTED"
        assert isinstance(report.evidence, claim_pb2.Evidence)


class TestFailures:
    async def test_adjudication_unreachable_fails_the_acquisition_not_the_run(
        self, builtin: Clients
    ) -> None:
        """An enqueue that cannot reach adjudication is a FAILED acquisition; the run goes on
        and stops when nothing else may be acted on."""
        from tests.support.processes import free_port

        async with AsyncAdjudicationClient(f"127.0.0.1:{free_port()}", timeout=2) as dead:
            services = Services(builtin.services.resolver, builtin.services.planner, dead)
            report = await run(services, Settings(SUBJECT, PREDICATE))
        acquisition = report.steps[0].acquisition
        assert acquisition is not None
        assert acquisition.probe == "HUMAN_REVIEW"
        assert acquisition.outcome is Outcome.FAILED
        assert "UNAVAILABLE" in acquisition.detail
        assert report.stop_reason is StopReason.NO_ACTIONABLE_CANDIDATE
        assert report.pending_cases == []


@contextlib.asynccontextmanager
async def secured_services(stack: SecureStack, name: str) -> AsyncIterator[Services]:
    """The three clients over TLS, each carrying principal ``name``'s token."""
    creds = Credentials.from_folder(stack.creds.root, name)
    async with (
        AsyncResolverClient(stack.targets.resolver, timeout=10, credentials=creds) as resolver,
        AsyncPlannerClient(stack.targets.planner, timeout=10, credentials=creds) as planner,
        AsyncAdjudicationClient(
            stack.targets.adjudication, timeout=10, credentials=creds
        ) as adjudication,
    ):
        yield Services(resolver, planner, adjudication)


class TestWithCredentials:
    async def test_the_executor_acts_as_the_principal_its_clients_carry(
        self, tmp_path: Path
    ) -> None:
        """Over TLS with the operator's token, the run resolves, plans and enqueues a case,
        recorded as the operator's; with alice's (reader, reviewer) the reads pass and the
        enqueue is refused as PERMISSION_DENIED, a failed acquisition, not a crashed run."""
        async with secure_stack(tmp_path) as stack:
            settings = Settings(SUBJECT, PREDICATE, tenant="acme")
            async with secured_services(stack, "operator") as services:
                report = await run(services, settings)
                assert report.stop_reason is StopReason.AWAITING_REVIEW
                assert services.adjudication is not None
                events = [e async for e in services.adjudication.audit_events()]
            assert [e.actor.subject for e in events] == ["operator"]
            async with secured_services(stack, "alice") as services:
                refused = await run(services, settings)
        acquisition = refused.steps[0].acquisition
        assert acquisition is not None
        assert acquisition.outcome is Outcome.FAILED
        assert "PERMISSION_DENIED" in acquisition.detail
        assert refused.pending_cases == []
