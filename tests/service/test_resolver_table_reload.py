"""A served resolver re-reads its table file when it changes, and names the table it used.

Through a real grpc.aio server on loopback, started as ``assay serve`` starts it
(``build_spec`` with ``--reliability-table``): the file is replaced while it serves, and
GetResolverPolicy and every resolving RPC move to the new table without a restart, as
does the resolution a plan passes on.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.reliability_table import table_digest
from assay.runtime.server import serving
from assay.services.registry import ServeOptions
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from assay.services.resolver.service import build_spec
from assay.v1 import claim_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc
from tests.service.planner_harness import FAST_STOP, example, planner_for
from tests.support.eventually import eventually_async
from tests.unit.resolver.columnar_support import stream, to_table

TIMEOUT = 10.0
SUBJECT = "api:payments.create"
PREDICATE = "idempotency.mode"
# api_spec 0.9 x 0.8 against documentation 0.9 x 0.6 is within the conflict margin;
# with api_spec at 0.99 it is not.
BEFORE = dict(DEFAULT_RELIABILITY)
AFTER = {**DEFAULT_RELIABILITY, "api_spec": 0.99}
CONFLICTED = resolution_pb2.RESOLUTION_STATUS_CONFLICTED
RESOLVED = resolution_pb2.RESOLUTION_STATUS_RESOLVED
# What ``named`` calls: every resolving RPC (Reconcile's before and after, ResolveHypotheses'
# base and hypotheses), ResolveSemantic at both details.
RPCS = (
    "ResolveSemantic",
    "ResolveSemantic SUMMARY",
    "ResolveEvidence",
    "ResolveHypotheses",
    "Reconcile",
    "ResolveColumns",
)
ROWS: list[dict[str, Any]] = [
    {"id": "a", "value": '"key"', "source": "api_spec"},
    {"id": "b", "value": '"none"', "source": "documentation"},
]


def claims() -> list[claim_pb2.Claim]:
    out = []
    for row in ROWS:
        claim = claim_pb2.Claim(
            id=row["id"], subject=SUBJECT, predicate=PREDICATE, source=row["source"], confidence=0.9
        )
        claim.value.string_value = json.loads(row["value"])
        out.append(claim)
    return out


def write(path: Path, text: str) -> None:
    """Replace the file as docs/deploy.md says to: a new file renamed over the old."""
    fresh = path.with_suffix(".tmp")
    fresh.write_text(text)
    os.replace(fresh, path)


def table_text(table: dict[str, float]) -> str:
    return json.dumps({"sources": table})


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "reliability.json"
    write(path, table_text(BEFORE))
    return path


@pytest.fixture
async def stub(table: Path) -> AsyncIterator[pb_grpc.ResolverServiceStub]:
    spec = await build_spec(ServeOptions(port=0, reliability_table=str(table)))
    async with (
        serving([spec]) as running,
        grpc.aio.insecure_channel(running[0].address) as channel,
    ):
        yield pb_grpc.ResolverServiceStub(channel)


async def policy(stub: pb_grpc.ResolverServiceStub) -> pb.GetResolverPolicyResponse:
    response: pb.GetResolverPolicyResponse = await stub.GetResolverPolicy(
        pb.GetResolverPolicyRequest(), timeout=TIMEOUT
    )
    return response


async def named(stub: pb_grpc.ResolverServiceStub) -> dict[str, set[str]]:
    """The digests each resolving RPC names for the same evidence, by RPC."""
    evidence = claim_pb2.Evidence(claims=claims())
    semantic = await stub.ResolveSemantic(
        pb.ResolveSemanticRequest(evidence=evidence, subject=SUBJECT, predicate=PREDICATE),
        timeout=TIMEOUT,
    )
    summary = await stub.ResolveSemantic(
        pb.ResolveSemanticRequest(
            evidence=evidence,
            subject=SUBJECT,
            predicate=PREDICATE,
            detail=pb.RESOLUTION_DETAIL_SUMMARY,
        ),
        timeout=TIMEOUT,
    )
    every = await stub.ResolveEvidence(
        pb.ResolveEvidenceRequest(evidence=evidence), timeout=TIMEOUT
    )
    hypotheses = pb.ResolveHypothesesRequest(
        evidence=evidence, subject=SUBJECT, predicate=PREDICATE
    )
    hypotheses.hypotheses.add(label="none", claims=[])
    layered = await stub.ResolveHypotheses(hypotheses, timeout=TIMEOUT)
    proposal = claim_pb2.Claim(
        id="p", subject=SUBJECT, predicate=PREDICATE, source="ci_status", confidence=0.5
    )
    proposal.value.string_value = "key"
    reconciled = await stub.Reconcile(
        pb.ReconcileRequest(evidence=evidence, proposals=[proposal]), timeout=TIMEOUT
    )
    rows = [{**row, "subject": SUBJECT, "predicate": PREDICATE, "confidence": 0.9} for row in ROWS]
    columns = await stub.ResolveColumns(
        pb.ResolveColumnsRequest(claims_arrow=stream(to_table(rows))), timeout=TIMEOUT
    )
    return {
        "ResolveSemantic": {semantic.resolution.reliability_table_digest},
        "ResolveSemantic SUMMARY": {summary.resolution.reliability_table_digest},
        "ResolveEvidence": {r.reliability_table_digest for r in every.resolutions},
        "ResolveHypotheses": {layered.base.reliability_table_digest}
        | {h.resolution.reliability_table_digest for h in layered.hypotheses},
        "Reconcile": {
            r.reliability_table_digest
            for outcome in reconciled.outcomes
            for r in (outcome.before, outcome.after)
        },
        "ResolveColumns": {columns.reliability_table_digest},
    }


async def status(stub: pb_grpc.ResolverServiceStub) -> tuple[int, str]:
    """The target's status, and the table its resolution names."""
    response = await stub.ResolveSemantic(
        pb.ResolveSemanticRequest(
            evidence=claim_pb2.Evidence(claims=claims()), subject=SUBJECT, predicate=PREDICATE
        ),
        timeout=TIMEOUT,
    )
    return response.resolution.status, response.resolution.reliability_table_digest


async def reloaded(stub: pb_grpc.ResolverServiceStub, digest: str) -> pb.GetResolverPolicyResponse:
    async def there() -> pb.GetResolverPolicyResponse | None:
        found = await policy(stub)
        return found if found.reliability_table_digest == digest else None

    found: pb.GetResolverPolicyResponse = await eventually_async(
        there, message=f"GetResolverPolicy naming {digest}"
    )
    return found


class TestTableReload:
    async def test_a_changed_file_is_used_without_a_restart(
        self, stub: pb_grpc.ResolverServiceStub, table: Path
    ) -> None:
        """New digest and load time in GetResolverPolicy, and resolutions that follow the
        new reliabilities and name the new table."""
        first = await policy(stub)
        assert first.reliability_table_digest == table_digest(BEFORE)
        assert first.reliability_table_origin == str(table)
        assert first.HasField("reliability_table_load_time")
        assert await status(stub) == (CONFLICTED, table_digest(BEFORE))
        write(table, table_text(AFTER))
        now = await reloaded(stub, table_digest(AFTER))
        assert dict((r.source, r.reliability) for r in now.reliability_table)["api_spec"] == 0.99
        assert now.reliability_table_origin == str(table)
        assert now.reliability_table_load_time.ToNanoseconds() > (
            first.reliability_table_load_time.ToNanoseconds()
        )
        assert await status(stub) == (RESOLVED, table_digest(AFTER))

    async def test_every_resolving_rpc_names_the_table_in_force(
        self, stub: pb_grpc.ResolverServiceStub, table: Path
    ) -> None:
        """ResolveSemantic (both details), ResolveEvidence, ResolveHypotheses, Reconcile and
        ResolveColumns name GetResolverPolicy's digest, before and after a reload."""
        for entries in (BEFORE, AFTER):
            write(table, table_text(entries))
            digest = (await reloaded(stub, table_digest(entries))).reliability_table_digest
            assert await named(stub) == {rpc: {digest} for rpc in RPCS}

    async def test_a_broken_file_keeps_the_table_until_fixed(
        self, stub: pb_grpc.ResolverServiceStub, table: Path, log_stream: io.StringIO
    ) -> None:
        """A version that fails validation is refused with one warning naming the file and
        the entry; the table in force serves on; the fixed version is then picked up."""
        before = await policy(stub)
        write(table, json.dumps({"sources": {**AFTER, "api_spec": 1.5}}))

        async def refused() -> dict[str, Any] | None:
            await policy(stub)  # the file is looked at when a call comes
            for raw in log_stream.getvalue().splitlines():
                line = json.loads(raw)
                if line.get("event") == "reliability_table_refused":
                    return dict(line)
            return None

        warning = await eventually_async(refused, message="the refusal's warning")
        assert warning["path"] == str(table)
        assert "sources.api_spec" in warning["why"]
        assert warning["kept"] == table_digest(BEFORE)
        assert await policy(stub) == before
        assert await status(stub) == (CONFLICTED, table_digest(BEFORE))
        write(table, table_text(AFTER))
        await reloaded(stub, table_digest(AFTER))
        assert await status(stub) == (RESOLVED, table_digest(AFTER))
        warnings = [line for line in log_stream.getvalue().splitlines() if "refused" in line]
        assert len(warnings) == 1


class TestThroughThePlanner:
    async def test_a_plans_resolution_names_the_table_the_resolver_used(self, table: Path) -> None:
        """The planner passes the resolver's resolution on, digest included, and a plan
        made after a reload names the new table."""
        spec = await build_spec(ServeOptions(port=0, reliability_table=str(table)))
        request = example("safety-conflict-read-only.json")
        async with (
            serving([spec], FAST_STOP) as resolvers,
            planner_for(resolvers[0].address) as planner,
            grpc.aio.insecure_channel(resolvers[0].address) as channel,
        ):
            reply = await planner.PlanEvidence(request, timeout=TIMEOUT)
            assert reply.resolution.reliability_table_digest == table_digest(BEFORE)
            write(table, table_text(AFTER))
            await reloaded(pb_grpc.ResolverServiceStub(channel), table_digest(AFTER))
            reply = await planner.PlanEvidence(request, timeout=TIMEOUT)
            assert reply.resolution.reliability_table_digest == table_digest(AFTER)
