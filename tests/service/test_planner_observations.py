"""Measured costs through real servers: the planner reading an observations file, switching
from declared to observed at the minimum without a restart, flagging a disagreeing band and
reporting its judgement; and the executor recording what it did against the real services."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc

from assay.client import AsyncAdjudicationClient, AsyncPlannerClient, AsyncResolverClient
from assay.client.builders import as_evidence
from assay.client.evidence import load_json_file
from assay.executor import observations
from assay.executor.loop import Executor, Services
from assay.executor.model import Acquisition, Outcome, ProbeSetup, Settings, StopReason
from assay.executor.stack import local_stack
from assay.runtime.server import serving
from assay.services.planner.domain.measured import MINIMUM_ACQUISITIONS
from assay.services.planner.service import build_spec
from assay.services.registry import ServeOptions
from assay.v1 import plan_pb2, planner_service_pb2
from assay.v1 import planner_service_pb2_grpc as pb_grpc
from tests.service.planner_harness import FAST_STOP, ROOT, example, resolver_spec
from tests.service.test_executor_loop import review_and_freeze
from tests.support.eventually import eventually_async

P = plan_pb2
HASH = "VERIFY_ARTIFACT_HASH"
CONFLICT = as_evidence(load_json_file(ROOT / "examples/executor/idempotency-conflict.json"))
SUBJECT, PREDICATE = "api:checkout.submit", "idempotency.mode"


@asynccontextmanager
async def planner_reading(path: Path | None) -> AsyncIterator[pb_grpc.PlannerServiceStub]:
    """A real resolver and a real planner reading ``path`` (``--observations``)."""
    async with serving([resolver_spec()], FAST_STOP) as resolvers:
        options = ServeOptions(port=0, resolver_target=resolvers[0].address, observations_file=path)
        spec = await build_spec(options)
        async with (
            serving([spec], FAST_STOP) as running,
            grpc.aio.insecure_channel(running[0].address) as channel,
        ):
            yield pb_grpc.PlannerServiceStub(channel)


def acquisition(
    probe: str = HASH, latency: float = 0.2, outcome: Outcome = Outcome.OBSERVED
) -> Acquisition:
    return Acquisition(probe, f"{probe.lower()}/x", outcome, "", latency, "SECONDS")


def record(path: Path, count: int, changed: bool = True, **fields: object) -> None:
    """``count`` lines as the executor writes them, each a HIGH prediction."""
    before = observations.Decision("CONFLICTED", '"a"')
    after = observations.Decision("RESOLVED", '"a"') if changed else before
    for _ in range(count):
        line = observations.record(acquisition(**fields), "HIGH", before, after)  # type: ignore[arg-type]
        observations.append(path, line)


async def probes_of(stub: pb_grpc.PlannerServiceStub) -> dict[str, plan_pb2.ProbeSpec]:
    reply = await stub.ListProbes(planner_service_pb2.ListProbesRequest(), timeout=5)
    return {P.ProbeKind.Name(p.kind).removeprefix("PROBE_KIND_"): p for p in reply.probes}


async def candidates_of(stub: pb_grpc.PlannerServiceStub) -> dict[str, P.AcquisitionCandidate]:
    reply = await stub.PlanEvidence(example("capability-gap.json"), timeout=10)
    return {c.candidate_id: c for c in reply.plan.candidates}


class TestDeclaredUntilMeasured:
    async def test_without_a_file_nothing_is_added(self) -> None:
        """No --observations: no figures in the catalogue, no basis on candidates."""
        async with planner_reading(None) as stub:
            probes = await probes_of(stub)
            candidates = await candidates_of(stub)
        assert not any(
            p.HasField("observed_cost") or p.discrimination_checks for p in probes.values()
        )
        assert {c.measurement_basis for c in candidates.values()} == {
            P.MEASUREMENT_BASIS_UNSPECIFIED
        }

    async def test_observed_after_the_minimum_without_a_restart(self, tmp_path: Path) -> None:
        """One short of the minimum: counted, DECLARED. The lines that reach it are read
        while the planner runs: OBSERVED, the slow p90's band flagged against SECONDS,
        and a hash check that never yields a claim drops below the VCS inspection."""
        path = tmp_path / "obs.jsonl"
        record(path, MINIMUM_ACQUISITIONS - 1, latency=90.0, outcome=Outcome.FAILED)
        async with planner_reading(path) as stub:
            cost = (await probes_of(stub))[HASH].observed_cost
            assert (cost.acquisitions, cost.measured) == (MINIMUM_ACQUISITIONS - 1, False)
            assert not cost.HasField("p90_latency")
            assert not cost.HasField("success_rate")
            before = await candidates_of(stub)
            hash_check = before["verify_artifact_hash/tool_result_payload"]
            assert hash_check.measurement_basis == P.MEASUREMENT_BASIS_DECLARED
            assert next(iter(before)) == "verify_artifact_hash/tool_result_payload"

            record(path, 1, latency=90.0, outcome=Outcome.FAILED)

            async def measured() -> plan_pb2.ObservedCost | None:
                found = (await probes_of(stub))[HASH].observed_cost
                return found if found.measured else None

            cost = await eventually_async(measured, message="the planner re-reads the file")
            after = await candidates_of(stub)
        assert cost.acquisitions == MINIMUM_ACQUISITIONS
        assert cost.p90_latency.seconds == 90
        assert cost.median_latency.seconds == 90
        assert cost.success_rate == 0.0
        assert cost.declared_latency == P.LATENCY_BAND_SECONDS
        assert cost.observed_latency == P.LATENCY_BAND_MINUTES
        assert cost.latency_disagrees
        hash_check = after["verify_artifact_hash/tool_result_payload"]
        assert hash_check.measurement_basis == P.MEASUREMENT_BASIS_OBSERVED
        assert hash_check.observed_latency == P.LATENCY_BAND_MINUTES
        assert hash_check.latency_disagrees
        assert hash_check.latency == P.LATENCY_BAND_SECONDS  # the declared band, as before
        assert next(iter(after)) == "inspect_vcs_state/tool_result_payload"
        vcs = after["inspect_vcs_state/tool_result_payload"]
        assert (vcs.measurement_basis, vcs.latency_disagrees) == (
            P.MEASUREMENT_BASIS_DECLARED,
            False,
        )

    async def test_an_agreeing_band_is_not_flagged(self, tmp_path: Path) -> None:
        """Measured and under a minute against a declared SECONDS: no flag, full success."""
        path = tmp_path / "obs.jsonl"
        record(path, MINIMUM_ACQUISITIONS, latency=0.5)
        async with planner_reading(path) as stub:
            cost = (await probes_of(stub))[HASH].observed_cost
        assert cost.measured
        assert cost.success_rate == 1.0
        assert cost.observed_latency == P.LATENCY_BAND_SECONDS
        assert not cost.latency_disagrees


class TestJudgement:
    async def test_rates_at_the_minimum_counts_below_it(self, tmp_path: Path) -> None:
        """Twenty HIGH predictions of which five changed the decision: 25 %; three LOW-free
        rows of another kind stay counts without a rate."""
        path = tmp_path / "obs.jsonl"
        record(path, 5, changed=True)
        record(path, MINIMUM_ACQUISITIONS - 5, changed=False)
        record(path, 3, probe="INSPECT_VCS_STATE")
        async with planner_reading(path) as stub:
            probes = await probes_of(stub)
        high = probes[HASH].discrimination_checks[0]
        assert high.predicted == P.DISCRIMINATION_HIGH
        assert (high.acquisitions, high.decision_changes) == (MINIMUM_ACQUISITIONS, 5)
        assert high.decision_change_rate == 5 / MINIMUM_ACQUISITIONS
        vcs = probes["INSPECT_VCS_STATE"].discrimination_checks[0]
        assert (vcs.acquisitions, vcs.decision_changes) == (3, 3)
        assert not vcs.HasField("decision_change_rate")
        assert [c.predicted for c in probes["RERUN_TEST"].discrimination_checks] == [
            P.DISCRIMINATION_HIGH,
            P.DISCRIMINATION_MEDIUM,
            P.DISCRIMINATION_LOW,
        ]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=15
    )
    return done.stdout.strip()


class TestTheExecutorRecords:
    async def test_a_run_records_what_it_did_and_the_planner_reads_it(self, tmp_path: Path) -> None:
        """A VCS inspection settles a conflicted head: one line, INSPECT_VCS_STATE, OBSERVED,
        the plan's predicted discrimination, CONFLICTED before and RESOLVED after (the
        loop's own next resolution), and the planner of the same stack counts it."""
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        git(repo, "-c", "user.email=t@e.org", "-c", "user.name=T", "commit", "-q",
            "--allow-empty", "-m", "x")  # fmt: skip
        claims = [
            {"id": cid, "subject": "repo:r", "predicate": "vcs.head", "value": value,
             "source": source, "confidence": conf, "correlationGroup": cid}
            for cid, value, source, conf in (
                ("doc", "aaaa", "documentation", 0.6),
                ("llm", "bbbb", "llm_inference", 0.9),
            )
        ]  # fmt: skip
        path = tmp_path / "obs.jsonl"
        async with (
            local_stack(tmp_path / "a.db", observations_file=path) as stack,
            AsyncResolverClient(stack.resolver, timeout=10) as resolver,
            AsyncPlannerClient(stack.planner, timeout=10) as planner,
        ):
            settings = Settings(
                "repo:r",
                "vcs.head",
                granted=frozenset({"FILESYSTEM_READ", "VCS_READ"}),
                probes=ProbeSetup(repo=repo),
                observations=path,
            )
            report = await Executor(Services(resolver, planner), settings).run(as_evidence(claims))
            assert report.stop_reason is StopReason.RESOLVED

            async def counted() -> int:
                reply = await planner.list_probes()
                (vcs,) = [p for p in reply.probes if p.kind == P.PROBE_KIND_INSPECT_VCS_STATE]
                return vcs.observed_cost.acquisitions

            assert await eventually_async(counted, message="the planner counts the run") == 1
        assert path.stat().st_mode & 0o777 == 0o600
        (line,) = path.read_text().splitlines()
        data = json.loads(line)
        step = report.steps[0].acquisition
        assert step is not None
        assert data["probe"] == "INSPECT_VCS_STATE"
        assert data["outcome"] == "OBSERVED"
        assert data["latencySeconds"] == round(step.latency_seconds, 6)
        assert data["predicted"] == "HIGH"
        assert (data["statusBefore"], data["statusAfter"]) == ("CONFLICTED", "RESOLVED")
        assert data["decisionChanged"] is True
        assert "repo:r" not in line
        assert git(repo, "rev-parse", "HEAD") not in line

    async def test_a_collected_gold_label_is_judged_against_its_enqueue(
        self, tmp_path: Path
    ) -> None:
        """Run one enqueues a review (CASE_ENQUEUED: pending, with the plan's prediction and
        a one-way case reference); people freeze a label; run two collects it: judged
        against that prediction, CONFLICTED before it and RESOLVED after, changed."""
        path = tmp_path / "obs.jsonl"
        async with (
            local_stack(tmp_path / "a.db", observations_file=path) as stack,
            AsyncResolverClient(stack.resolver, timeout=10) as resolver,
            AsyncPlannerClient(stack.planner, timeout=10) as planner,
            AsyncAdjudicationClient(stack.adjudication, timeout=10) as adjudication,
        ):
            services = Services(resolver, planner, adjudication)
            settings = Settings(SUBJECT, PREDICATE, observations=path)
            first = await Executor(services, settings).run(CONFLICT)
            (case_id,) = first.pending_cases
            await review_and_freeze(adjudication, case_id, "HUMAN")
            again = dataclasses.replace(settings, cases=(case_id,))
            second = await Executor(services, again).run(first.evidence)
            assert second.stop_reason is StopReason.RESOLVED

            async def judged() -> plan_pb2.DiscriminationCheck | None:
                reply = await planner.list_probes()
                (review,) = [p for p in reply.probes if p.kind == P.PROBE_KIND_HUMAN_REVIEW]
                checks = [c for c in review.discrimination_checks if c.acquisitions]
                return checks[0] if checks else None

            check = await eventually_async(judged, message="the planner reads the judged label")
        enqueued, collected = (json.loads(line) for line in path.read_text().splitlines())
        assert enqueued["outcome"] == "CASE_ENQUEUED"
        assert enqueued["decisionChanged"] is False
        assert enqueued["case"] == observations.case_ref(case_id) != case_id
        assert collected["outcome"] == "GOLD_LABEL_RETURNED"
        assert collected["case"] == enqueued["case"]
        assert collected["predicted"] == enqueued["predicted"] == "HIGH"
        assert (collected["statusBefore"], collected["statusAfter"]) == ("CONFLICTED", "RESOLVED")
        assert collected["decisionChanged"] is True
        assert (check.predicted, check.acquisitions, check.decision_changes) == (
            P.DISCRIMINATION_HIGH,
            1,
            1,
        )
