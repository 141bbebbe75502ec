"""The reference executor's loop: resolve -> plan -> act within policy -> add claims -> again.

One run, for one target (subject, predicate): gold labels of the cases it is given come back
as claims (``review.py``); then each iteration resolves the evidence and, unless RESOLVED,
asks the planner, takes the best candidate it may act on (``choice.py``), performs it and
adds the claims it yielded. A REQUIRES_APPROVAL candidate is first asked for through the
approval service (``approval.py``) and performed only on a consumed grant. With
``Settings.observations`` each acquisition is recorded once the next resolution shows
whether it changed the decision (``recording``).

It stops when the predicate resolves, a human-review case waits for reviewers, no ranked
candidate may be acted on, an approval ends without a grant to use (APPROVAL_*), or after
``max_iterations``. Local probes block (files, ``git``, a test command), so they run in a
worker thread: the demo hosts the services on this same event loop, and a blocking probe
must not stall them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from assay.client.adjudication_async import AsyncAdjudicationClient
from assay.client.approvals import AsyncApprovalClient
from assay.client.builders import acquisition_policy, plan_request
from assay.client.errors import AssayCallError
from assay.client.planner import AsyncPlannerClient
from assay.client.resolver import AsyncResolverClient
from assay.executor import local_probes, observations
from assay.executor.approval import Ask, approval_reason, ask_and_wait
from assay.executor.choice import Choice, choose, probe_name, short_name, side_effects
from assay.executor.model import (
    APPROVAL_STOPS,
    Acquisition,
    ApprovalAsked,
    ApprovalOutcome,
    ApprovalRecord,
    Outcome,
    ProbeResult,
    RunReport,
    Settings,
    Skip,
    Step,
    StopReason,
)
from assay.executor.recording import Recorder
from assay.executor.review import collect_gold_label, enqueue_review
from assay.v1 import claim_pb2, plan_pb2, planner_service_pb2, resolution_pb2

# Draws which resolved semantics are spot-checked: unpredictable to whoever writes evidence.
_SAMPLER = random.SystemRandom()

Listener = Callable[[Step | Acquisition | ApprovalAsked], None]


@dataclass
class Services:
    """The clients a run talks to; without adjudication, HUMAN_REVIEW is not configured;
    with ``approvals`` (the adjudication service's ApprovalService, as an authenticated
    principal), REQUIRES_APPROVAL candidates are asked for there."""

    resolver: AsyncResolverClient
    planner: AsyncPlannerClient
    adjudication: AsyncAdjudicationClient | None = None
    approvals: AsyncApprovalClient | None = None


def status_name(resolution: resolution_pb2.SemanticResolution) -> str:
    return short_name(resolution_pb2.ResolutionStatus, resolution.status, "RESOLUTION_STATUS_")


class Executor:
    """Runs the loop for one target; ``run`` returns the full report."""

    def __init__(
        self, services: Services, settings: Settings, on_event: Listener | None = None
    ) -> None:
        if services.approvals is not None and settings.approvals:
            # Never both: a local approval must not stand in for, or mix with, a recorded one.
            raise ValueError(
                "local approvals (--approve) cannot be combined with the approval service"
            )
        self.services = services
        self.settings = settings
        self.on_event = on_event or (lambda _event: None)
        self.tried: set[str] = set()
        self.run_tag = ""
        self.sampled = False
        self.recorder = Recorder(settings.observations)

    def configured(self, probe: str) -> bool:
        """Whether this run has what ``probe`` needs (a file, a repo, a command, a service)."""
        setup = self.settings.probes
        return {
            "HUMAN_REVIEW": self.services.adjudication is not None,
            "VERIFY_ARTIFACT_HASH": setup.artifact is not None,
            "INSPECT_VCS_STATE": setup.repo is not None,
            "RERUN_TEST": bool(setup.test_command),
        }.get(probe, False)

    async def run(self, evidence: claim_pb2.Evidence) -> RunReport:
        """Run the loop on a copy of ``evidence``; the report holds the evidence it ended with."""
        settings = self.settings
        report = RunReport(settings.subject, settings.predicate)
        self.tried = set()
        await self.recorder.start()
        # Claim ids must be unique within a request, and a run's output evidence may be fed
        # to a later run: a per-run tag keeps the new observations' ids from colliding.
        self.run_tag = uuid.uuid4().hex[:8]
        # One draw per run decides whether its semantic is a spot-check: whether it resolves
        # or goes to review as a conflict, so the spot-checks are a random sample of every
        # semantic decided, not only the easy ones.
        rate = settings.spot_check_rate
        self.sampled = rate > 0 and _SAMPLER.random() < rate
        working = claim_pb2.Evidence()
        working.CopyFrom(evidence)
        await self._collect(report, working)
        for iteration in range(1, settings.max_iterations + 1):
            resolution = await self.services.resolver.resolve(
                working, settings.subject, settings.predicate
            )
            await self.recorder.after(resolution)
            if resolution.status == resolution_pb2.RESOLUTION_STATUS_RESOLVED:
                report.stop_reason = StopReason.RESOLVED
                self._step(report, iteration, resolution)
                await self._spot_check(report, resolution)
                break
            if report.pending_cases:
                report.stop_reason = StopReason.AWAITING_REVIEW
                self._step(report, iteration, resolution)
                break
            plan = (await self.services.planner.plan_evidence(self._plan_request(working))).plan
            can_ask = self.services.approvals is not None
            choice = choose(plan.candidates, settings, self.tried, self.configured, can_ask)
            if choice.candidate is None:
                report.stop_reason = StopReason.NO_ACTIONABLE_CANDIDATE
                self._step(report, iteration, resolution, choice.skipped)
                break
            approval = await self._ask(choice, resolution) if choice.ask else None
            if approval is not None and approval.outcome is not ApprovalOutcome.CONSUMED:
                self.tried.add(choice.candidate.candidate_id)
                report.stop_reason = APPROVAL_STOPS[approval.outcome]
                self._step(report, iteration, resolution, choice.skipped, approval=approval)
                break
            acquisition, claims = await self._acquire(
                choice.candidate,
                resolution,
                choice.approved_grants,
                iteration,
                approval.approval_id if approval is not None else "",
            )
            working.claims.extend(claims)
            self.recorder.acted(acquisition, choice.candidate, resolution)
            self._step(report, iteration, resolution, choice.skipped, acquisition, approval)
            if acquisition.outcome is Outcome.CASE_ENQUEUED:
                report.pending_cases.append(acquisition.case_id)
                report.stop_reason = StopReason.AWAITING_REVIEW
                break
        final = await self.services.resolver.resolve(working, settings.subject, settings.predicate)
        await self.recorder.after(final)
        report.final_status = status_name(final)
        report.final_leader = final.leader.value_key
        report.final_support = final.leader.support
        report.evidence = working
        return report

    async def _spot_check(
        self, report: RunReport, resolution: resolution_pb2.SemanticResolution
    ) -> None:
        """A resolved semantic of a sampled run goes to review anyway, as a case marked with
        the rate (a sampled conflict's case is marked likewise): gold labels drawn at random,
        not only from conflicts, are what an unbiased calibration needs (docs/calibration.md)."""
        rate = self.settings.spot_check_rate
        adjudication = self.services.adjudication
        if adjudication is None or not self.sampled:
            return
        result = await enqueue_review(
            adjudication, resolution, self.settings, f"spot-check/{self.run_tag}", rate
        )
        report.spot_check_case = result.case_id

    def _plan_request(
        self, evidence: claim_pb2.Evidence
    ) -> planner_service_pb2.PlanEvidenceRequest:
        settings = self.settings
        return plan_request(
            evidence,
            settings.subject,
            settings.predicate,
            policy=acquisition_policy(
                sorted(settings.granted), settings.cloud_sync_allowed, settings.egress_allowed
            ),
        )

    def _step(
        self,
        report: RunReport,
        iteration: int,
        resolution: resolution_pb2.SemanticResolution,
        skipped: tuple[Skip, ...] = (),
        acquisition: Acquisition | None = None,
        approval: ApprovalRecord | None = None,
    ) -> None:
        step = Step(
            iteration=iteration,
            status=status_name(resolution),
            leader=resolution.leader.value_key,
            support=resolution.leader.support,
            skipped=skipped,
            acquisition=acquisition,
            approval=approval,
        )
        report.steps.append(step)
        if acquisition is not None and (acquisition.approved_grants or acquisition.approval_id):
            grants = ", ".join(acquisition.approved_grants) or "no missing grants"
            if acquisition.approval_id and approval is not None:
                by = ", ".join(approval.decided_by)
                used = f"approval {acquisition.approval_id} granted by {by}, consumed by this run"
            else:
                used = "local --approve (not recorded in the ledger)"
            report.approvals_used.append(f"{acquisition.probe}: {grants} — {used}")
        self.on_event(step)

    async def _ask(
        self, choice: Choice, resolution: resolution_pb2.SemanticResolution
    ) -> ApprovalRecord:
        """Ask the approval service for the chosen candidate and wait for a usable grant."""
        assert self.services.approvals is not None
        assert choice.candidate is not None
        candidate = choice.candidate
        probe = probe_name(candidate)
        missing = side_effects(candidate.missing_grants) or list(choice.approved_grants)
        reason = approval_reason(
            self.run_tag,
            self.settings,
            status_name(resolution),
            probe,
            candidate.candidate_id,
            missing,
        )
        # One key per run and candidate: a retried request is the same request, not a second.
        digest = candidate.candidate_digest.removeprefix("sha256:")[:32]
        request_id = f"executor-{self.run_tag}-{digest}"
        ask = Ask(candidate, probe, reason, request_id)
        return await ask_and_wait(self.services.approvals, self.settings, ask, self.on_event)

    async def _collect(self, report: RunReport, working: claim_pb2.Evidence) -> None:
        """Gold labels of the given cases, as claims, before the first resolution."""
        client = self.services.adjudication
        if not self.settings.cases:
            return
        if client is None:
            raise ValueError("collecting gold labels needs the adjudication service")
        accepted = set(await self.services.resolver.policy())
        fresh: list[tuple[Acquisition, list[claim_pb2.Claim]]] = []
        for case_id in self.settings.cases:
            result, latency = await collect_gold_label(client, case_id, self.settings, accepted)
            present = {c.id for c in working.claims} | {c.id for _, new in fresh for c in new}
            # A gold claim already in the evidence (from an earlier run's output) counts once.
            new = [c for c in result.claims if c.id not in present]
            if result.outcome is Outcome.AWAITING_REVIEW:
                report.pending_cases.append(case_id)
            acquisition = self._record(
                "HUMAN_REVIEW", f"case/{case_id}", "HOURS", result, latency, cost="HIGH"
            )
            report.collected.append(acquisition)
            if new:
                fresh.append((acquisition, new))
            else:
                await self.recorder.write(observations.record(acquisition))
            self.on_event(acquisition)
        settings = self.settings
        await self.recorder.collected(
            lambda evidence: self.services.resolver.resolve(
                evidence, settings.subject, settings.predicate
            ),
            working,
            fresh,
        )

    async def _acquire(
        self,
        candidate: plan_pb2.AcquisitionCandidate,
        resolution: resolution_pb2.SemanticResolution,
        approved_grants: tuple[str, ...],
        iteration: int,
        approval_id: str = "",
    ) -> tuple[Acquisition, tuple[claim_pb2.Claim, ...]]:
        probe = probe_name(candidate)
        self.tried.add(candidate.candidate_id)
        declared = short_name(plan_pb2.LatencyBand, candidate.latency, "LATENCY_BAND_")
        cost = short_name(plan_pb2.CostBand, candidate.cost, "COST_BAND_")
        started = time.monotonic()
        result = await self._perform(probe, candidate, resolution, iteration)
        latency = time.monotonic() - started
        acquisition = self._record(
            probe, candidate.candidate_id, declared, result, latency, approved_grants, cost
        )
        if approval_id:
            acquisition = dataclasses.replace(acquisition, approval_id=approval_id)
        return acquisition, result.claims

    async def _perform(
        self,
        probe: str,
        candidate: plan_pb2.AcquisitionCandidate,
        resolution: resolution_pb2.SemanticResolution,
        iteration: int,
    ) -> ProbeResult:
        settings, setup = self.settings, self.settings.probes
        claim_id = f"exec:{probe.lower()}:{self.run_tag}:{iteration}"
        target = (claim_id, settings.subject, settings.predicate)
        if probe == "HUMAN_REVIEW":
            assert self.services.adjudication is not None  # configured() checked it
            try:
                return await enqueue_review(
                    self.services.adjudication,
                    resolution,
                    settings,
                    f"plan:{candidate.candidate_id}",
                    settings.spot_check_rate if self.sampled else 0.0,
                )
            except AssayCallError as error:
                # The acquisition failed, not the run: record it and let the loop go on.
                return ProbeResult(Outcome.FAILED, f"adjudication refused the case: {error}")
        if probe == "VERIFY_ARTIFACT_HASH" and setup.artifact is not None:
            claimed = [v.value_key for v in resolution.values]
            return await asyncio.to_thread(
                local_probes.verify_artifact_hash, setup.artifact, claimed, *target
            )
        if probe == "INSPECT_VCS_STATE" and setup.repo is not None:
            return await asyncio.to_thread(
                local_probes.inspect_vcs_state, setup.repo, setup.vcs_field, *target
            )
        if probe == "RERUN_TEST" and setup.test_command:
            worktree = setup.worktree or Path.cwd()
            return await asyncio.to_thread(
                local_probes.rerun_test, setup.test_command, worktree, setup.test_timeout, *target
            )
        return ProbeResult(Outcome.FAILED, f"{probe} is not implemented or not configured")

    @staticmethod
    def _record(
        probe: str,
        candidate_id: str,
        declared: str,
        result: ProbeResult,
        latency: float,
        approved_grants: tuple[str, ...] = (),
        cost: str = "",
    ) -> Acquisition:
        return Acquisition(
            probe=probe,
            candidate_id=candidate_id,
            outcome=result.outcome,
            detail=result.detail,
            latency_seconds=latency,
            declared_latency=declared,
            declared_cost=cost,
            approved_grants=approved_grants,
            claim_ids=tuple(c.id for c in result.claims),
            case_id=result.case_id,
        )
