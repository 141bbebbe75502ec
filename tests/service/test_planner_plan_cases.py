"""Plans for known cases, each through a real planner and a real resolver on loopback: what
a probe's outcome means, recency, a person first on safety, approvals, coverage, operator
probes, and reflection."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from assay.runtime.server import ServiceSpec, serving
from assay.services.planner.adapters.probe_file import load_probes
from assay.services.planner.adapters.resolver_client import ResolverClient
from assay.services.planner.adapters.servicer import PlannerServicer
from assay.services.planner.service import SERVICE_DESCRIPTOR
from assay.v1 import plan_pb2 as P
from assay.v1 import planner_service_pb2 as pb
from assay.v1 import planner_service_pb2_grpc as pb_grpc
from tests.service.planner_harness import FAST_STOP, both, resolver_spec

SUBJECT, SAFE, UNSAFE = "api:payments.create", "http.method", "idempotency.mode"
DEFAULT_POLICY: dict[str, Any] = {}  # egress and cloud sync off, nothing granted


def claim(cid: str, value: str, source: str, confidence: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": cid,
        "subject": SUBJECT,
        "predicate": extra.pop("predicate", UNSAFE),
        "value": value,
        "source": source,
        "sourceRef": extra.pop("ref", f"{source}-ref"),
        "confidence": confidence,
        **extra,
    }


def request(claims: list[dict[str, Any]], predicate: str = UNSAFE, **more: Any) -> Any:
    body = {"subject": SUBJECT, "predicate": predicate, "evidence": {"claims": claims}, **more}
    return json_format.ParseDict(body, pb.PlanEvidenceRequest())


async def plan(req: Any) -> Any:
    async with both() as (stub, _):
        return await stub.PlanEvidence(req, timeout=10)


def by_probe(reply: Any) -> dict[int, Any]:
    return {c.probe: c for c in [*reply.plan.candidates, *reply.plan.unavailable]}


def order(reply: Any) -> list[int]:
    return [c.probe for c in reply.plan.candidates]


SAFETY_CONFLICT = [
    claim("h1", "idempotent", "human_review", 0.95),
    claim("t1", "non_idempotent", "test_result", 0.9),
]


class TestOutcomesNotAnOutcome:
    async def test_a_rerun_that_comes_back_idempotent_is_high_and_above_ci(self) -> None:
        """CONFLICTED 0.95 vs 0.765; a re-run saying "idempotent" resolves it, so
        RERUN_TEST is HIGH and ranked above QUERY_CI_STATUS."""
        reply = await plan(request(SAFETY_CONFLICT, policy=DEFAULT_POLICY))
        supports = {v.value_key: round(v.support, 3) for v in reply.resolution.values}
        assert supports == {'"idempotent"': 0.95, '"non_idempotent"': 0.765}
        rerun = by_probe(reply)[P.PROBE_KIND_RERUN_TEST]
        assert rerun.discrimination == P.DISCRIMINATION_HIGH
        assert rerun.outcome_value_key == '"idempotent"'
        ranked = order(reply)
        assert ranked.index(P.PROBE_KIND_RERUN_TEST) < ranked.index(P.PROBE_KIND_QUERY_CI_STATUS)

    async def test_a_lone_claim_can_be_contradicted(self) -> None:
        """One contradicting 0.9 test_result makes a lone 0.9 human_review
        CONFLICTED, so a re-run is HIGH, not LOW."""
        reply = await plan(request([claim("h1", "idempotent", "human_review", 0.9)]))
        assert by_probe(reply)[P.PROBE_KIND_RERUN_TEST].discrimination == P.DISCRIMINATION_HIGH

    async def test_not_every_probe_is_high_on_a_strong_resolution(self) -> None:
        """At the other end: with strong, corroborated support a weak source's
        outcomes flip nothing plausible, so discrimination is not uniformly HIGH."""
        claims = [
            claim("a", "POST", "human_review", 1.0, predicate=SAFE, correlationGroup="g1"),
            claim("b", "POST", "artifact_hash", 1.0, predicate=SAFE, correlationGroup="g2"),
        ]
        reply = await plan(request(claims, predicate=SAFE))
        kinds = {c.discrimination for c in by_probe(reply).values()}
        assert kinds != {P.DISCRIMINATION_HIGH}


class TestRecency:
    async def test_a_fresh_rerun_of_a_stale_test_discriminates(self) -> None:
        """STALE_SUPPORT on an equal-weight test_result in a declared group: the
        re-run supersedes the stale run, so RERUN_TEST is HIGH."""
        stale = claim(
            "t-old",
            "non_idempotent",
            "test_result",
            0.9,
            correlationGroup="suite",
            observeTime="2026-01-01T00:00:00Z",
        )
        reply = await plan(
            request([stale], asOf="2026-06-01T00:00:00Z", staleAfter=f"{86400 * 30}s")
        )
        assert "stale_support" in {g.gap_id for g in reply.plan.gaps}
        rerun = by_probe(reply)[P.PROBE_KIND_RERUN_TEST]
        assert rerun.discrimination == P.DISCRIMINATION_HIGH


class TestPersonFirst:
    async def test_human_review_is_first_on_a_conflicted_safety_predicate(self) -> None:
        """Under an empty policy, with review required, HUMAN_REVIEW is first."""
        reply = await plan(request(SAFETY_CONFLICT))
        assert reply.plan.requires_review
        assert order(reply)[0] == P.PROBE_KIND_HUMAN_REVIEW


class TestApproval:
    async def test_ci_names_the_grant_and_both_policy_switches(self) -> None:
        """Under the default policy QUERY_CI_STATUS stays REQUIRES_APPROVAL (the
        fixed order) naming NETWORK_CALL, and its blocking reasons also name egress and
        cloud sync, which would still block it once NETWORK_CALL is granted."""
        reply = await plan(request(SAFETY_CONFLICT, policy=DEFAULT_POLICY))
        ci = by_probe(reply)[P.PROBE_KIND_QUERY_CI_STATUS]
        assert ci in reply.plan.candidates
        assert ci.availability == P.AVAILABILITY_REQUIRES_APPROVAL
        assert ci.availability_reason == P.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED
        assert list(ci.missing_grants) == [P.SIDE_EFFECT_CLASS_NETWORK_CALL]
        assert list(ci.blocking_reasons) == [
            P.AVAILABILITY_REASON_SIDE_EFFECT_NOT_GRANTED,
            P.AVAILABILITY_REASON_EGRESS_NOT_ALLOWED,
            P.AVAILABILITY_REASON_CLOUD_SYNC_NOT_ALLOWED,
        ]

    async def test_granting_what_it_named_leaves_the_switches(self) -> None:
        """Granting NETWORK_CALL alone moves it to UNAVAILABLE for egress, as its blocking
        reasons said; granting everything they named makes it AVAILABLE with none."""
        granted = {"grantedSideEffects": ["SIDE_EFFECT_CLASS_NETWORK_CALL"]}
        reply = await plan(request(SAFETY_CONFLICT, policy=granted))
        ci = by_probe(reply)[P.PROBE_KIND_QUERY_CI_STATUS]
        assert ci in reply.plan.unavailable
        assert ci.availability_reason == P.AVAILABILITY_REASON_EGRESS_NOT_ALLOWED
        assert list(ci.blocking_reasons) == [
            P.AVAILABILITY_REASON_EGRESS_NOT_ALLOWED,
            P.AVAILABILITY_REASON_CLOUD_SYNC_NOT_ALLOWED,
        ]
        everything = granted | {"egressAllowed": True, "cloudSyncAllowed": True}
        reply = await plan(request(SAFETY_CONFLICT, policy=everything))
        ci = by_probe(reply)[P.PROBE_KIND_QUERY_CI_STATUS]
        assert ci.availability == P.AVAILABILITY_AVAILABLE
        assert list(ci.blocking_reasons) == []


class TestCoverage:
    @pytest.mark.parametrize(
        "probe", [P.PROBE_KIND_INSPECT_VCS_STATE, P.PROBE_KIND_VERIFY_ARTIFACT_HASH]
    )
    async def test_cheap_probes_address_uncorroborated(self, probe: int) -> None:
        """A single claim's UNCORROBORATED gap is addressed by the cheap probes."""
        reply = await plan(request([claim("a", "POST", "api_spec", 0.9, predicate=SAFE)], SAFE))
        assert "uncorroborated" in by_probe(reply)[probe].addresses_gap_ids


class TestOperatorProbes:
    async def test_a_definition_writing_outside_the_worktree_is_forbidden(
        self, tmp_path: Path
    ) -> None:
        """A real operator definition makes FORBIDDEN observable."""
        path = tmp_path / "probes.json"
        path.write_text(
            json.dumps(
                {
                    "probe": [
                        {
                            "kind": "PROBE_KIND_RERUN_TEST",
                            "targets": ["SIGNAL_CLASS_PROCESS_RESULT"],
                            "side_effects": [
                                "SIDE_EFFECT_CLASS_PROCESS_SPAWN",
                                "SIDE_EFFECT_CLASS_FILESYSTEM_WRITE_OUTSIDE_WORKTREE",
                            ],
                            "gaps": ["GAP_KIND_UNRESOLVED_CONFLICT"],
                            "expected_source": "test_result",
                            "cost": "COST_BAND_MEDIUM",
                            "latency": "LATENCY_BAND_MINUTES",
                            "privacy": "PRIVACY_EXPOSURE_LOCAL_ONLY",
                        }
                    ]
                }
            )
        )
        catalogue = load_probes(path)
        async with serving([resolver_spec()], FAST_STOP) as resolvers:
            spec = ServiceSpec(
                name="planner",
                descriptor=SERVICE_DESCRIPTOR,
                servicer=PlannerServicer(ResolverClient(resolvers[0].address, 4 << 20), catalogue),
                port=0,
            )
            async with (
                serving([spec], FAST_STOP) as planners,
                grpc.aio.insecure_channel(planners[0].address) as channel,
            ):
                reply = await pb_grpc.PlannerServiceStub(channel).PlanEvidence(
                    request(SAFETY_CONFLICT), timeout=10
                )
        rerun = by_probe(reply)[P.PROBE_KIND_RERUN_TEST]
        assert rerun.availability == P.AVAILABILITY_FORBIDDEN
        assert list(rerun.forbidden_side_effects) == [
            P.SIDE_EFFECT_CLASS_FILESYSTEM_WRITE_OUTSIDE_WORKTREE
        ]


GRPCURL = Path(sys.executable).parent / "grpcurl"


class TestReflection:
    @pytest.mark.skipif(not GRPCURL.exists(), reason="grpcurl is not installed in the venv")
    async def test_error_reason_is_described_through_every_service(self) -> None:
        """Grpcurl describes assay.v1.ErrorReason (and google.rpc.ErrorInfo,
        which carries it) through the resolver's and the planner's reflection."""
        from assay.services.planner.service import build_spec
        from assay.services.registry import ServeOptions

        async with both() as (_, resolver):
            spec = await build_spec(ServeOptions(port=0, resolver_target=resolver.address))
            async with serving([spec], FAST_STOP) as planners:
                for address in (resolver.address, planners[0].address):
                    for symbol in ("assay.v1.ErrorReason", "google.rpc.ErrorInfo"):
                        proc = await asyncio.create_subprocess_exec(
                            str(GRPCURL),
                            "-plaintext",
                            address,
                            "describe",
                            symbol,
                            stdout=asyncio.subprocess.PIPE,
                            stderr=asyncio.subprocess.PIPE,
                        )
                        out, err = await asyncio.wait_for(proc.communicate(), 20)
                        assert proc.returncode == 0, err.decode()
                        assert symbol in out.decode()
