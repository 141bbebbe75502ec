"""Bad input always gets a deliverable INVALID_ARGUMENT, and every timestamp is checked.

Hostile-input probes, through real servers: 60 claims with a mistyped source kind,
one 6,000-character source string and 100 invalid ``missing_signals`` once
pushed the status details past gRPC's metadata limit, so callers got
``RESOURCE_EXHAUSTED`` with no details (and ``INTERNAL`` through the planner).
Each client here uses a channel with default options (the 16 KiB metadata
limit, refusing at random from about 8 KiB), so an oversized trailer would show
as ``RESOURCE_EXHAUSTED``; each test also reads the ``grpc-status-details-bin``
trailer itself and holds every service's worst case under 8 KiB.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from assay.errors import Reason
from assay.prototime import MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS
from assay.runtime.server import serving
from assay.runtime.status import (
    MAX_VIOLATIONS,
    DecodedError,
    decode_rpc_error,
    message_wire_bytes,
)
from assay.services.registry import ServeOptions
from assay.services.resolver.service import build_spec
from assay.v1 import adjudication_service_pb2 as apb
from assay.v1 import adjudication_service_pb2_grpc as apb_grpc
from assay.v1 import claim_pb2, plan_pb2
from assay.v1 import planner_service_pb2 as ppb
from assay.v1 import planner_service_pb2_grpc as ppb_grpc
from assay.v1 import resolver_service_pb2 as rpb
from assay.v1 import resolver_service_pb2_grpc as rpb_grpc
from tests.service.adjudication_support import adjudication_server, case_message, rid
from tests.service.planner_harness import both

TIMEOUT = 20.0
DETAILS_KEY = "grpc-status-details-bin"
EIGHT_KIB = 8192
LONG = 6000
# Timestamps (seconds, nanos) that are not valid, and what each is.
BAD_TIMESTAMPS = {
    "negative nanos": (1_700_000_000, -1),
    "nanos of a whole second": (1_700_000_000, 1_000_000_000),
    "after year 9999": (MAX_TIMESTAMP_SECONDS + 1, 0),
    "before year 1": (MIN_TIMESTAMP_SECONDS - 1, 0),
}


def claim(source: str = "test_result", **fields: Any) -> claim_pb2.Claim:
    base: dict[str, Any] = {"subject": "s", "predicate": "p", "source": source, "confidence": 0.5}
    base.update(fields)
    out = claim_pb2.Claim(**base)
    if not out.HasField("value"):
        out.value.string_value = "v"
    return out


def quoting_claim() -> claim_pb2.Claim:
    """A claim whose first violation quotes 64 four-byte characters: the longest message."""
    return claim("😀" * LONG, id="%" * 100)


def hostile_claim(i: int) -> claim_pb2.Claim:
    """A claim with as many long, non-ASCII problems as one claim can have."""
    out = claim("😀" * LONG, id="😀" * 1000, subject="", confidence=float("nan"))
    out.value.struct_value.fields["%" * LONG].number_value = float("inf")
    out.observe_time.nanos = -1 - i
    return out


def evidence(claims: list[claim_pb2.Claim]) -> claim_pb2.Evidence:
    return claim_pb2.Evidence(claims=claims)


def metadata_bytes(error: grpc.aio.AioRpcError) -> int:
    """The error's response metadata as grpc-core measures it against its limits: key +
    value + 32 per entry, grpc-message percent-encoded, plus :status, content-type and
    grpc-status (42 + 60 + 44 bytes, as grpc's own RESOURCE_EXHAUSTED message lists them)."""
    entries = [(k, v) for k, v in error.trailing_metadata() or ()]
    size = sum(len(k) + len(v if isinstance(v, bytes) else v.encode()) + 32 for k, v in entries)
    return size + len("grpc-message") + 32 + message_wire_bytes(error.details() or "") + 146


async def rejected(call: Awaitable[Any]) -> tuple[DecodedError, int]:
    """The decoded error of a call that must fail, and its status-details trailer size."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    error = caught.value
    size = sum(len(v) for k, v in error.trailing_metadata() or () if k == DETAILS_KEY)
    decoded = decode_rpc_error(error)
    assert decoded.code == grpc.StatusCode.INVALID_ARGUMENT, (decoded.code, decoded.message)
    assert 0 < size < EIGHT_KIB
    assert metadata_bytes(error) < EIGHT_KIB  # below even the soft limit: never dropped
    assert decoded.violations, "a BadRequest naming the fields"
    return decoded, size


def fields(error: DecodedError) -> list[str]:
    return [v.field for v in error.violations]


def assert_capped(error: DecodedError, first_fields: list[str], more: str) -> None:
    """The first fields are listed in order and the last entry counts the rest."""
    assert len(error.violations) <= MAX_VIOLATIONS
    assert fields(error)[: len(first_fields)] == first_fields
    assert error.violations[-1].description == more


@pytest.fixture
async def resolver() -> AsyncIterator[rpb_grpc.ResolverServiceStub]:
    spec = await build_spec(ServeOptions(port=0))
    async with serving([spec]) as running, grpc.aio.insecure_channel(running[0].address) as chan:
        yield rpb_grpc.ResolverServiceStub(chan)


@pytest.fixture
async def planner() -> AsyncIterator[ppb_grpc.PlannerServiceStub]:
    async with both() as (stub, _):
        yield stub


@pytest.fixture
async def adjudication(tmp_path: Path) -> AsyncIterator[apb_grpc.AdjudicationServiceStub]:
    async with adjudication_server(tmp_path / "bounded.db") as server:
        yield server.stub


def plan_request(claims: list[claim_pb2.Claim], **fields: Any) -> ppb.PlanEvidenceRequest:
    return ppb.PlanEvidenceRequest(subject="s", predicate="p", evidence=evidence(claims), **fields)


class TestResolver:
    async def test_sixty_mistyped_source_kinds(
        self, resolver: rpb_grpc.ResolverServiceStub
    ) -> None:
        """60 × `runtime-trace`: 49 paths, "11 more", and the known kinds once, in metadata."""
        request = rpb.ResolveEvidenceRequest(evidence=evidence([claim("runtime-trace")] * 60))
        error, _ = await rejected(resolver.ResolveEvidence(request, timeout=TIMEOUT))
        assert error.reason == Reason.UNKNOWN_SOURCE
        assert_capped(
            error,
            [f"evidence.claims[{i}].source" for i in range(MAX_VIOLATIONS)],
            "11 more violations not shown",
        )
        assert "runtime_trace" in error.metadata["known_sources"].split(",")
        assert all("runtime_trace" not in v.description for v in error.violations)

    async def test_one_six_thousand_character_source(
        self, resolver: rpb_grpc.ResolverServiceStub
    ) -> None:
        """The source is quoted by a 64-character prefix and its length, never whole."""
        request = rpb.ResolveEvidenceRequest(evidence=evidence([claim("x" * LONG)]))
        error, _ = await rejected(resolver.ResolveEvidence(request, timeout=TIMEOUT))
        (violation,) = error.violations
        assert violation.field == "evidence.claims[0].source"
        assert "x" * 64 in violation.description
        assert "x" * 65 not in violation.description
        assert f"({LONG} characters)" in violation.description
        assert "x" * 65 not in error.message

    async def test_worst_case_evidence(self, resolver: rpb_grpc.ResolverServiceStub) -> None:
        """Long non-ASCII sources, ids, value keys and bad times on every claim: still < 8 KiB."""
        claims = [quoting_claim()] + [hostile_claim(i) for i in range(60)]
        request = rpb.ResolveEvidenceRequest(evidence=evidence(claims))
        error, _ = await rejected(resolver.ResolveEvidence(request, timeout=TIMEOUT))
        assert fields(error)[:2] == ["evidence.claims[0].source", "evidence.claims[1].subject"]
        assert error.violations[-1].description.startswith("at least ")

    async def test_worst_case_hypotheses(self, resolver: rpb_grpc.ResolverServiceStub) -> None:
        """1,025 hypotheses (one too many) of hostile claims: bounded work, bounded error."""
        request = rpb.ResolveHypothesesRequest(subject="s", predicate="p")
        request.hypotheses.add(claims=[quoting_claim()])
        for i in range(1024):
            request.hypotheses.add(label="h" * 100).claims.append(hostile_claim(i))
        error, _ = await rejected(resolver.ResolveHypotheses(request, timeout=TIMEOUT))
        assert fields(error)[:2] == ["hypotheses", "hypotheses[0].claims[0].source"]


class TestPlanner:
    async def test_hundred_invalid_missing_signals(
        self, planner: ppb_grpc.PlannerServiceStub
    ) -> None:
        """100 bad notes (two bad fields each): 49 listed, then "151 more"."""
        request = plan_request([claim()])
        for _ in range(100):
            request.missing_signals.add(signal_class=999, availability=999)
        error, _ = await rejected(planner.PlanEvidence(request, timeout=TIMEOUT))
        assert error.reason == Reason.INVALID_FIELD
        assert_capped(
            error,
            ["missing_signals[0].signal_class", "missing_signals[0].availability"],
            "151 more violations not shown",
        )

    async def test_a_hundred_thousand_invalid_missing_signals(
        self, planner: ppb_grpc.PlannerServiceStub
    ) -> None:
        """The planner keeps 100 and counts the rest; the count stays exact."""
        request = plan_request([claim()])
        note = plan_pb2.MissingSignalNote(signal_class=999, availability=999)  # type: ignore[arg-type]
        request.missing_signals.extend([note] * 100_000)
        error, _ = await rejected(planner.PlanEvidence(request, timeout=TIMEOUT))
        assert error.violations[-1].description == "199951 more violations not shown"

    async def test_resolver_errors_are_relayed_with_the_callers_paths(
        self, planner: ppb_grpc.PlannerServiceStub
    ) -> None:
        """60 mistyped sources through the planner: INVALID_ARGUMENT with paths, not INTERNAL."""
        request = plan_request([claim("runtime-trace")] * 60)
        error, _ = await rejected(planner.PlanEvidence(request, timeout=TIMEOUT))
        assert error.reason == Reason.UNKNOWN_SOURCE
        assert_capped(
            error,
            [f"evidence.claims[{i}].source" for i in range(MAX_VIOLATIONS)],
            "11 more violations not shown",
        )
        assert "runtime_trace" in error.metadata["known_sources"].split(",")

    async def test_long_source_through_the_planner(
        self, planner: ppb_grpc.PlannerServiceStub
    ) -> None:
        """The 6,000-character source is quoted by its prefix through the planner too."""
        error, _ = await rejected(
            planner.PlanEvidence(plan_request([claim("x" * LONG)]), timeout=TIMEOUT)
        )
        assert fields(error) == ["evidence.claims[0].source"]
        assert "x" * 65 not in error.violations[0].description

    async def test_worst_case_evidence_through_the_planner(
        self, planner: ppb_grpc.PlannerServiceStub
    ) -> None:
        """The resolver's worst case, relayed: still INVALID_ARGUMENT under 8 KiB."""
        request = plan_request([quoting_claim()] + [hostile_claim(i) for i in range(60)])
        error, _ = await rejected(planner.PlanEvidence(request, timeout=TIMEOUT))
        assert fields(error)[:2] == ["evidence.claims[0].source", "evidence.claims[1].subject"]


class TestAdjudication:
    async def test_many_duplicate_huge_candidate_values(
        self, adjudication: apb_grpc.AdjudicationServiceStub
    ) -> None:
        """64 copies of a 100,000-character candidate: every duplicate named by position (as
        far as the status's 50 violations go, the last counting the rest), never quoted."""
        case = case_message()
        del case.candidate_values[:]
        for _ in range(64):
            case.candidate_values.add().string_value = "c" * 100_000
        request = apb.EnqueueCaseRequest(request_id=rid(), case=case)
        error, _ = await rejected(adjudication.EnqueueCase(request, timeout=TIMEOUT))
        named = fields(error)
        assert named[:49] == [f"case.candidate_values[{i}]" for i in range(1, 50)]
        assert len(named) == 50
        assert "14 more" in error.violations[-1].description
        for violation in error.violations[:49]:
            assert violation.description == "duplicates case.candidate_values[0]"

    @pytest.mark.parametrize(
        ("field", "path"),
        [
            ("subject", "case.subject"),
            ("context", "case.context"),
            ("origin_ref", "case.lineage.origin_ref"),
        ],
    )
    async def test_a_huge_field(
        self, adjudication: apb_grpc.AdjudicationServiceStub, field: str, path: str
    ) -> None:
        """A 1,000,000-character field is named with its length, not echoed."""
        case = case_message()
        if field == "origin_ref":
            case.lineage.origin_ref = "😀" * 1_000_000
        else:
            setattr(case, field, "😀" * 1_000_000)
        request = apb.EnqueueCaseRequest(request_id=rid(), case=case)
        error, size = await rejected(adjudication.EnqueueCase(request, timeout=TIMEOUT))
        assert fields(error) == [path]
        assert "(it has 1000000)" in error.violations[0].description
        assert size < 1024

    @pytest.mark.parametrize(
        "call",
        [
            lambda stub: stub.GetCase(apb.GetCaseRequest(case_id="😀" * 100_000)),
            lambda stub: stub.EnqueueCase(
                apb.EnqueueCaseRequest(request_id="%" * 100_000, case=case_message())
            ),
            lambda stub: stub.ListQueue(apb.ListQueueRequest(reviewer_id="R" * 100_000)),
            lambda stub: stub.SubmitReview(
                apb.SubmitReviewRequest(
                    case_id="c",
                    reviewer_id="r",
                    outcome=apb.REVIEW_OUTCOME_UNRESOLVED,
                    reason="😀" * 100_000,
                )
            ),
        ],
        ids=["case_id", "request_id", "reviewer_id", "reason"],
    )
    async def test_huge_ids_and_texts(
        self,
        adjudication: apb_grpc.AdjudicationServiceStub,
        call: Callable[[apb_grpc.AdjudicationServiceStub], Awaitable[Any]],
    ) -> None:
        """Huge ids, retry keys and reasons: INVALID_ARGUMENT, small, nothing echoed."""
        error, size = await rejected(call(adjudication))
        assert size < 1024
        assert "😀" * 2 not in error.message
        assert "%%" not in error.message


class TestTimestamps:
    @pytest.mark.parametrize("bad", BAD_TIMESTAMPS.values(), ids=BAD_TIMESTAMPS.keys())
    @pytest.mark.parametrize("method", ["ResolveSemantic", "ResolveEvidence", "ResolveHypotheses"])
    async def test_resolver_as_of(
        self, resolver: rpb_grpc.ResolverServiceStub, method: str, bad: tuple[int, int]
    ) -> None:
        """A malformed as_of is INVALID_FIELD at `as_of` on each RPC that takes it."""
        request = getattr(rpb, f"{method}Request")(evidence=evidence([claim()]))
        if method != "ResolveEvidence":
            request.subject, request.predicate = "s", "p"
        request.as_of.seconds, request.as_of.nanos = bad
        request.stale_after.seconds = 60
        error, _ = await rejected(getattr(resolver, method)(request, timeout=TIMEOUT))
        assert error.reason == Reason.INVALID_FIELD
        assert fields(error) == ["as_of"]

    @pytest.mark.parametrize("bad", [(60, -1), (-60, 1), (0, 1_000_000_000), (315_576_000_001, 0)])
    async def test_resolver_stale_after(
        self, resolver: rpb_grpc.ResolverServiceStub, bad: tuple[int, int]
    ) -> None:
        """A malformed stale_after Duration is INVALID_FIELD at `stale_after`."""
        request = rpb.ResolveEvidenceRequest(evidence=evidence([claim()]))
        request.as_of.seconds = 1_700_000_000
        request.stale_after.seconds, request.stale_after.nanos = bad
        error, _ = await rejected(resolver.ResolveEvidence(request, timeout=TIMEOUT))
        assert fields(error) == ["stale_after"]

    @pytest.mark.parametrize("bad", BAD_TIMESTAMPS.values(), ids=BAD_TIMESTAMPS.keys())
    async def test_resolver_observe_time_in_every_claim_list(
        self, resolver: rpb_grpc.ResolverServiceStub, bad: tuple[int, int]
    ) -> None:
        """Evidence, hypothesis and proposal claims: the claim's observe_time is named."""
        wrong = claim()
        wrong.observe_time.seconds, wrong.observe_time.nanos = bad
        evidence_call = resolver.ResolveEvidence(
            rpb.ResolveEvidenceRequest(evidence=evidence([claim(), wrong])), timeout=TIMEOUT
        )
        hypotheses = rpb.ResolveHypothesesRequest(subject="s", predicate="p")
        hypotheses.hypotheses.add(claims=[wrong])
        reconcile = rpb.ReconcileRequest(proposals=[claim(), wrong])
        for call, path in [
            (evidence_call, "evidence.claims[1].observe_time"),
            (
                resolver.ResolveHypotheses(hypotheses, timeout=TIMEOUT),
                "hypotheses[0].claims[0].observe_time",
            ),
            (resolver.Reconcile(reconcile, timeout=TIMEOUT), "proposals[1].observe_time"),
        ]:
            error, _ = await rejected(call)
            assert error.reason == Reason.INVALID_CLAIM
            assert fields(error) == [path]

    @pytest.mark.parametrize(
        ("field", "bad"),
        [
            ("as_of", (1_700_000_000, -1)),
            ("as_of", (MAX_TIMESTAMP_SECONDS + 1, 0)),
            ("stale_after", (60, -1)),
            ("stale_after", (0, 1_000_000_000)),
        ],
    )
    async def test_planner_as_of_and_stale_after(
        self, planner: ppb_grpc.PlannerServiceStub, field: str, bad: tuple[int, int]
    ) -> None:
        """The planner names its own as_of / stale_after."""
        request = plan_request([claim()])
        request.as_of.seconds = 1_700_000_000
        request.stale_after.seconds = 60
        getattr(request, field).seconds, getattr(request, field).nanos = bad
        error, _ = await rejected(planner.PlanEvidence(request, timeout=TIMEOUT))
        assert error.reason == Reason.INVALID_FIELD
        assert fields(error) == [field]

    @pytest.mark.parametrize("bad", BAD_TIMESTAMPS.values(), ids=BAD_TIMESTAMPS.keys())
    async def test_planner_evidence_observe_time(
        self, planner: ppb_grpc.PlannerServiceStub, bad: tuple[int, int]
    ) -> None:
        """A claim's observe_time in the planner's evidence is named at the caller's path."""
        wrong = claim()
        wrong.observe_time.seconds, wrong.observe_time.nanos = bad
        error, _ = await rejected(
            planner.PlanEvidence(plan_request([claim(), wrong]), timeout=TIMEOUT)
        )
        assert error.reason == Reason.INVALID_CLAIM
        assert fields(error) == ["evidence.claims[1].observe_time"]

    @pytest.mark.parametrize("bad", BAD_TIMESTAMPS.values(), ids=BAD_TIMESTAMPS.keys())
    async def test_adjudication_expire_time(
        self, adjudication: apb_grpc.AdjudicationServiceStub, bad: tuple[int, int]
    ) -> None:
        """A malformed case.expire_time is INVALID_ARGUMENT at `case.expire_time`."""
        case = case_message()
        case.expire_time.seconds, case.expire_time.nanos = bad
        request = apb.EnqueueCaseRequest(request_id=rid(), case=case)
        error, _ = await rejected(adjudication.EnqueueCase(request, timeout=TIMEOUT))
        assert fields(error) == ["case.expire_time"]

    async def test_a_valid_expire_time_is_accepted(
        self, adjudication: apb_grpc.AdjudicationServiceStub
    ) -> None:
        """The check refuses only malformed times: a near-future expiry with nanos is kept."""
        case = case_message()
        in_a_month = int(time.time()) + 30 * 86_400
        case.expire_time.seconds, case.expire_time.nanos = in_a_month, 999_999_999
        request = apb.EnqueueCaseRequest(request_id=rid(), case=case)
        reply = await adjudication.EnqueueCase(request, timeout=TIMEOUT)
        assert reply.case.expire_time.seconds == in_a_month
