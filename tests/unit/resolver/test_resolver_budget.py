"""The caps on what one request may cost, and the stop that ends work for a caller gone."""

from __future__ import annotations

import pytest

from assay.errors import InvalidArgument, Reason
from assay.protowire import tag_of
from assay.runtime.response_budget import (
    RESPONSE_FLOOR_BYTES,
    RESPONSE_RATIO,
    ResponseBudget,
    response_limit,
)
from assay.services.resolver.domain.request_cost import MAX_CLAIM_RESOLUTIONS, charge
from assay.services.resolver.use_cases.stop import NEVER, Abandoned, Stop
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb

MIB = 1 << 20


class TestResponseLimit:
    @pytest.mark.parametrize(
        ("request_bytes", "limit"),
        [
            (0, RESPONSE_FLOOR_BYTES),
            (100, RESPONSE_FLOOR_BYTES),
            (1_000, RESPONSE_RATIO * 1_000),
            (MIB // 2, RESPONSE_RATIO * MIB // 2),
            (MIB, 64 * MIB),
        ],
    )
    def test_a_hundred_times_the_request_within_the_floor_and_the_message_limit(
        self, request_bytes: int, limit: int
    ) -> None:
        """100x the request, at least 64 KiB, at most the message limit."""
        assert response_limit(request_bytes, 64 * MIB) == limit


class TestResponseBudget:
    def test_counts_elements_exactly_as_serialized(self) -> None:
        """Elements counted one by one add up to the message's serialized size, whatever
        the width of their lengths (one to three bytes)."""
        response = pb.ResolveHypothesesResponse()
        budget = ResponseBudget(64 * MIB, 0, lambda: 0, "hypotheses", "")
        for size in (0, 10, 200, 20_000):
            out = response.hypotheses.add(label="x" * size)
            budget.element(tag_of(pb.ResolveHypothesesResponse, "hypotheses"), out.ByteSize())
        response.base.CopyFrom(resolution_pb2.SemanticResolution(subject="s"))
        budget.element(tag_of(pb.ResolveHypothesesResponse, "base"), response.base.ByteSize())
        assert budget.used == response.ByteSize()

    def test_measures_the_request_only_when_the_lower_bound_is_not_enough(self) -> None:
        """The exact request size is computed once, and only past what the bound allows."""
        asked: list[int] = []

        def request_bytes() -> int:
            asked.append(1)
            return 10_000

        budget = ResponseBudget(64 * MIB, 100, request_bytes, "hypotheses", "")
        budget.add(RESPONSE_FLOOR_BYTES)
        assert asked == []
        budget.add(RESPONSE_RATIO * 10_000 - RESPONSE_FLOOR_BYTES)
        budget.add(0)
        assert asked == [1]

    def test_refuses_past_the_budget_naming_the_field(self) -> None:
        """RESPONSE_TOO_LARGE names the field, says what to do, and gives the limit."""
        budget = ResponseBudget(64 * MIB, 0, lambda: 1_000, "proposals", "send fewer")
        budget.add(RESPONSE_RATIO * 1_000)
        with pytest.raises(InvalidArgument) as caught:
            budget.add(1)
        error = caught.value
        assert error.reason is Reason.RESPONSE_TOO_LARGE
        assert [v.field for v in error.violations] == ["proposals"]
        assert "send fewer" in error.violations[0].description
        assert error.metadata == {"limit_bytes": str(RESPONSE_RATIO * 1_000)}

    def test_never_past_the_message_limit(self) -> None:
        """However large the request, the response stays within the message limit."""
        budget = ResponseBudget(MIB, 10 * MIB, lambda: 10 * MIB, "evidence.claims", "")
        budget.add(MIB)
        with pytest.raises(InvalidArgument):
            budget.add(1)


class TestCharge:
    def test_the_cap_itself_is_allowed(self) -> None:
        """Exactly MAX_CLAIM_RESOLUTIONS passes."""
        charge(MAX_CLAIM_RESOLUTIONS, "hypotheses", "n")

    def test_one_more_is_too_expensive(self) -> None:
        """One more is REQUEST_TOO_EXPENSIVE, with how it was counted and the numbers."""
        with pytest.raises(InvalidArgument) as caught:
            charge(MAX_CLAIM_RESOLUTIONS + 1, "hypotheses", "(3 hypotheses + 1) x 9")
        error = caught.value
        assert error.reason is Reason.REQUEST_TOO_EXPENSIVE
        assert [v.field for v in error.violations] == ["hypotheses"]
        assert "(3 hypotheses + 1) x 9" in error.violations[0].description
        assert error.metadata == {
            "limit": str(MAX_CLAIM_RESOLUTIONS),
            "requested": str(MAX_CLAIM_RESOLUTIONS + 1),
        }


class TestStop:
    def test_carries_on_until_cancelled(self) -> None:
        """A stop without a deadline checks clean until cancelled, then always raises."""
        stop = Stop(None)
        stop.check()
        stop.cancel()
        for _ in range(2):
            with pytest.raises(Abandoned):
                stop.check()
        assert stop.reason == "cancelled"

    def test_a_passed_deadline_stops(self) -> None:
        """A deadline already passed stops the work, for the deadline."""
        stop = Stop(-1.0)
        with pytest.raises(Abandoned):
            stop.check()
        assert stop.reason == "deadline"

    def test_cancelled_after_the_deadline_counts_as_the_deadline(self) -> None:
        """grpc cancels at the deadline: the stop then dates from the deadline itself."""
        stop = Stop(-1.0)
        stop.cancel()
        assert stop.reason == "deadline"
        assert stop.since == stop.deadline

    def test_never_stops_work_on_the_loop(self) -> None:
        """The stop of inline work never raises."""
        NEVER.check()
        assert NEVER.reason == ""
