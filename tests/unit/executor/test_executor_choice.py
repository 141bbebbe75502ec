"""Policy gating: which ranked candidate the executor may act on, and why others are skipped."""

from __future__ import annotations

import pytest

from assay.client.builders import to_value
from assay.executor.choice import choose
from assay.executor.model import Settings, SkipReason
from assay.executor.review import case_request
from assay.v1 import plan_pb2, resolution_pb2

AVAILABLE = plan_pb2.AVAILABILITY_AVAILABLE
NEEDS = plan_pb2.AVAILABILITY_REQUIRES_APPROVAL
E = plan_pb2


def candidate(
    probe: int, availability: int, effects: tuple[int, ...] = ()
) -> plan_pb2.AcquisitionCandidate:
    name = plan_pb2.ProbeKind.Name(probe).removeprefix("PROBE_KIND_").lower()  # type: ignore[arg-type]
    return plan_pb2.AcquisitionCandidate(
        candidate_id=f"{name}/x",
        probe=probe,  # type: ignore[arg-type]
        availability=availability,  # type: ignore[arg-type]
        required_side_effects=effects,  # type: ignore[arg-type]
    )


VCS = candidate(
    E.PROBE_KIND_INSPECT_VCS_STATE,
    NEEDS,
    (E.SIDE_EFFECT_CLASS_FILESYSTEM_READ, E.SIDE_EFFECT_CLASS_VCS_READ),
)
VCS_AVAILABLE = candidate(
    E.PROBE_KIND_INSPECT_VCS_STATE,
    AVAILABLE,
    (E.SIDE_EFFECT_CLASS_FILESYSTEM_READ, E.SIDE_EFFECT_CLASS_VCS_READ),
)
CI = candidate(E.PROBE_KIND_QUERY_CI_STATUS, NEEDS, (E.SIDE_EFFECT_CLASS_NETWORK_CALL,))
HUMAN = candidate(E.PROBE_KIND_HUMAN_REVIEW, AVAILABLE)


def everything(_probe: str) -> bool:
    return True


class TestChoose:
    def test_requires_approval_is_skipped_without_approve(self) -> None:
        """Without --approve, a REQUIRES_APPROVAL candidate is passed over for an available one."""
        choice = choose([VCS, HUMAN], Settings("s", "p"), set(), everything)
        assert choice.candidate is HUMAN
        assert [(s.candidate_id, s.reason) for s in choice.skipped] == [
            ("inspect_vcs_state/x", SkipReason.NEEDS_APPROVAL)
        ]
        assert choice.approved_grants == ()

    def test_approval_runs_it_and_records_the_grants_it_stood_in_for(self) -> None:
        """With --approve INSPECT_VCS_STATE the candidate runs; the missing grants are recorded."""
        settings = Settings(
            "s",
            "p",
            granted=frozenset({"FILESYSTEM_READ"}),
            approvals=frozenset({"INSPECT_VCS_STATE"}),
        )
        choice = choose([VCS, HUMAN], settings, set(), everything)
        assert choice.candidate is VCS
        assert choice.approved_grants == ("VCS_READ",)

    def test_available_in_the_plan_but_not_granted_here_is_not_run(self) -> None:
        """The executor re-checks the grants itself instead of trusting the plan's verdict."""
        choice = choose([VCS_AVAILABLE, HUMAN], Settings("s", "p"), set(), everything)
        assert choice.candidate is HUMAN
        assert choice.skipped[0].reason is SkipReason.NOT_GRANTED

    def test_granted_available_candidate_runs_without_approval(self) -> None:
        """Every side effect granted: the candidate runs, no approval recorded."""
        settings = Settings("s", "p", granted=frozenset({"FILESYSTEM_READ", "VCS_READ"}))
        choice = choose([VCS_AVAILABLE], settings, set(), everything)
        assert choice.candidate is VCS_AVAILABLE
        assert choice.approved_grants == ()

    @pytest.mark.parametrize(
        ("tried", "configured", "expected"),
        [
            ({"human_review/x"}, everything, SkipReason.ALREADY_TRIED),
            (set(), lambda probe: probe != "HUMAN_REVIEW", SkipReason.NOT_CONFIGURED),
        ],
    )
    def test_tried_or_unconfigured_candidates_are_skipped(
        self, tried: set[str], configured: object, expected: SkipReason
    ) -> None:
        """A candidate already tried this run, or lacking its setup, is not taken."""
        choice = choose([HUMAN], Settings("s", "p"), tried, configured)  # type: ignore[arg-type]
        assert choice.candidate is None
        assert choice.skipped[0].reason is expected

    def test_with_an_approval_service_it_is_taken_to_be_asked_for(self) -> None:
        """An approval service at hand: the REQUIRES_APPROVAL candidate is taken, marked to be
        asked for first; an AVAILABLE one granted here is never asked for."""
        choice = choose([VCS, HUMAN], Settings("s", "p"), set(), everything, can_ask=True)
        assert (choice.candidate, choice.ask) == (VCS, True)
        assert choice.approved_grants == ("FILESYSTEM_READ", "VCS_READ")
        assert choose([HUMAN], Settings("s", "p"), set(), everything, can_ask=True).ask is False

    def test_asking_does_not_make_an_unconfigured_or_unimplemented_probe_runnable(self) -> None:
        """Only a candidate the executor could otherwise run is asked for."""
        unconfigured = choose([VCS], Settings("s", "p"), set(), lambda _p: False, can_ask=True)
        assert unconfigured.skipped[0].reason is SkipReason.NOT_CONFIGURED
        ci = choose([CI], Settings("s", "p"), set(), everything, can_ask=True)
        assert ci.skipped[0].reason is SkipReason.NOT_IMPLEMENTED

    def test_unimplemented_probes_never_run_even_when_approved(self) -> None:
        """QUERY_CI_STATUS has no implementation here: approval does not change that."""
        settings = Settings("s", "p", approvals=frozenset({"QUERY_CI_STATUS"}))
        choice = choose([CI], settings, set(), everything)
        assert choice.candidate is None
        assert choice.skipped[0].reason is SkipReason.NOT_IMPLEMENTED


def conflicted() -> resolution_pb2.SemanticResolution:
    resolution = resolution_pb2.SemanticResolution(
        subject="api:x",
        predicate="idempotency.mode",
        status=resolution_pb2.RESOLUTION_STATUS_CONFLICTED,
    )
    for value, refs in (("idempotency-key", ["spec-1"]), ("none", ["trace-1", "trace-2"])):
        support = resolution.values.add(value=to_value(value))
        for ref in refs:
            kind = "api_spec" if ref.startswith("spec") else "runtime_trace"
            support.claims.add(
                claim_ref=ref,
                source=kind,
                reliability=0.8,
                effective_weight=0.6,
                correlation_group=f"group-{ref}",
            )
    resolution.leader.value.CopyFrom(to_value("none"))
    resolution.leader.value_key = '"none"'
    return resolution


class TestCaseRequest:
    def test_the_case_carries_values_refs_and_the_hidden_verdict(self) -> None:
        """Competing values and claim refs go to reviewers; the leader goes to local_verdict."""
        request = case_request(conflicted(), Settings("api:x", "idempotency.mode"), "plan:h")
        assert request is not None
        case = request.case
        assert [v.string_value for v in case.candidate_values] == ["idempotency-key", "none"]
        assert list(case.evidence_refs) == ["spec-1", "trace-1", "trace-2"]
        assert case.local_verdict.string_value == "none"
        assert case.lineage.origin == "executor"

    def test_the_case_keeps_the_claims_as_the_resolver_weighed_them(self) -> None:
        """Each claim behind each value, its confidence recovered from weight / reliability
        (0.6 / 0.8), for calibration against the label reviewers give."""
        request = case_request(conflicted(), Settings("api:x", "idempotency.mode"), "plan:h")
        assert request is not None
        found = [
            (c.claim_id, c.source_kind, c.value.string_value, round(c.confidence, 9))
            for c in request.case.claims
        ]
        assert found == [
            ("spec-1", "api_spec", "idempotency-key", 0.75),
            ("trace-1", "runtime_trace", "none", 0.75),
            ("trace-2", "runtime_trace", "none", 0.75),
        ]
        assert request.case.claims[0].correlation_group == "group-spec-1"

    def test_the_context_shown_to_reviewers_names_no_value(self) -> None:
        """The context cannot leak the verdict: it names no candidate value at all."""
        request = case_request(conflicted(), Settings("api:x", "idempotency.mode"), "plan:h")
        assert request is not None
        assert "none" not in request.case.context
        assert "idempotency-key" not in request.case.context

    def test_the_same_conflict_gets_the_same_request_id(self) -> None:
        """Re-running on the same conflict reuses the retry key, so one case is enqueued."""
        settings = Settings("api:x", "idempotency.mode")
        first = case_request(conflicted(), settings, "plan:a")
        second = case_request(conflicted(), settings, "plan:a")
        assert first is not None
        assert second is not None
        assert first.request_id == second.request_id
        assert first.request_id.startswith("executor-")

    def test_no_values_no_case(self) -> None:
        """Nothing to choose between: no case."""
        empty = resolution_pb2.SemanticResolution(subject="api:x", predicate="p")
        assert case_request(empty, Settings("api:x", "p"), "plan:a") is None
