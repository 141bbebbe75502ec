"""The resolver client's deadline arithmetic and retry budget (no network needed)."""

from __future__ import annotations

import time

import pytest
from google.protobuf import json_format

from assay.services.planner.adapters import resolver_client as rc
from assay.services.planner.adapters.resolver_client import Deadline, next_backoff
from assay.v1 import resolution_pb2


class TestDeadline:
    def test_no_caller_deadline_uses_the_default_timeout(self) -> None:
        """A caller without a deadline still bounds each resolver call."""
        assert Deadline.after(None).call_timeout() == rc.DEFAULT_CALL_TIMEOUT_SECONDS

    def test_keeps_a_margin_back(self) -> None:
        """The resolver gets the caller's remaining time minus the margin."""
        timeout = Deadline.after(2.0).call_timeout()
        assert 2.0 - rc.DEADLINE_MARGIN_SECONDS - 0.05 < timeout <= 2.0 - rc.DEADLINE_MARGIN_SECONDS

    def test_spent_deadline_leaves_no_time(self) -> None:
        """A deadline already (almost) over gives a non-positive timeout: fail, do not call."""
        assert Deadline.after(rc.DEADLINE_MARGIN_SECONDS / 2).call_timeout() <= 0


class TestRetryBudget:
    def test_backoffs_follow_the_schedule(self) -> None:
        """Early retries use the named backoff schedule."""
        now = time.monotonic()
        assert next_backoff(0, now, Deadline.after(None)) == rc.RETRY_BACKOFF_SECONDS[0]

    def test_no_retry_past_the_schedule(self) -> None:
        """After the last scheduled backoff there is no further retry."""
        assert next_backoff(len(rc.RETRY_BACKOFF_SECONDS), time.monotonic(), Deadline(None)) is None

    def test_no_retry_past_the_budget(self) -> None:
        """Retrying stops once the budget is spent, even with time left on the deadline."""
        started = time.monotonic() - rc.RETRY_BUDGET_SECONDS
        assert next_backoff(0, started, Deadline.after(60)) is None

    @pytest.mark.parametrize("remaining", [0.0, 0.08])
    def test_no_retry_that_would_outlive_the_deadline(self, remaining: float) -> None:
        """A backoff that does not fit before the caller's deadline is not taken."""
        assert next_backoff(1, time.monotonic(), Deadline.after(remaining)) is None

    def test_backoffs_fit_the_budget(self) -> None:
        """The whole schedule fits in the retry budget: a down resolver fails within it."""
        assert sum(rc.RETRY_BACKOFF_SECONDS) <= rc.RETRY_BUDGET_SECONDS


class TestSummaryOf:
    def full(self) -> resolution_pb2.SemanticResolution:
        return json_format.ParseDict(
            {
                "subject": "s",
                "predicate": "p",
                "status": "RESOLUTION_STATUS_CONFLICTED",
                "leader": {"value": "a", "valueKey": '"a"', "support": 0.7},
                "confidence": 0.7,
                "values": [
                    {
                        "value": "a",
                        "valueKey": '"a"',
                        "support": 0.7,
                        "claims": [{"claimRef": "c1", "counted": True}],
                        "groups": [{"correlationGroup": "g", "countedClaimRef": "c1"}],
                        "countedClaimRefs": ["c1"],
                    }
                ],
                "rationale": ["RATIONALE_FLAG_ALL_SUPPORT_DISCOUNTED"],
                "excluded": [
                    {
                        "claimRef": "c2",
                        "reason": "EXCLUSION_REASON_SUPERSEDED",
                        "supersededBy": ["c3"],
                        "claim": {"id": "c2", "subject": "s", "predicate": "p"},
                    }
                ],
                "warnings": [{"code": "WARNING_CODE_RELIABILITY_CAPPED", "claimRef": "c1"}],
            },
            resolution_pb2.SemanticResolution(),
        )

    def test_clears_exactly_what_summary_omits(self) -> None:
        """Claim weights, groups, counted refs, excluded bodies and warnings go; the rest
        (including each exclusion's reference, reason and superseders) stays."""
        full = self.full()
        got = rc.summary_of(full)
        value = got.values[0]
        assert (value.value_key, value.support) == ('"a"', 0.7)
        assert not value.claims
        assert not value.groups
        assert not value.counted_claim_refs
        excluded = got.excluded[0]
        assert (excluded.claim_ref, list(excluded.superseded_by)) == ("c2", ["c3"])
        assert not excluded.HasField("claim")
        assert not got.warnings
        assert (got.status, got.leader, list(got.rationale)) == (
            full.status,
            full.leader,
            list(full.rationale),
        )

    def test_leaves_its_argument_alone(self) -> None:
        """The full resolution is still returned to the planner's caller: not mutated."""
        full = self.full()
        rc.summary_of(full)
        assert full == self.full()
