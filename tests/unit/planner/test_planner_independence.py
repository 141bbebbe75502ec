"""Independence of a candidate's source from the claims the resolver counted."""

from __future__ import annotations

import pytest

from assay.services.planner.domain.independence import (
    counted_by_source,
    independence_of,
    shared_group,
)
from assay.services.planner.domain.model import CountedClaim, Independence
from tests.unit.planner.planner_factories import conflicted, counted, insufficient, resolved


class TestIndependenceOf:
    @pytest.mark.parametrize(
        ("claims", "expected"),
        [
            ((counted("api_spec", "g1"),), Independence.INDEPENDENT_OF_COUNTED),
            ((counted("test_result"),), Independence.UNVERIFIED),
            ((counted("test_result", "ci-run-7"),), Independence.SAME_SOURCE_AS_COUNTED),
            (
                (counted("test_result"), counted("test_result", "ci-run-7")),
                Independence.SAME_SOURCE_AS_COUNTED,
            ),
        ],
        ids=["never-counted", "counted-defaulted", "counted-declared", "both-ways"],
    )
    def test_reads_counted_claims(
        self, claims: tuple[CountedClaim, ...], expected: Independence
    ) -> None:
        """Never counted → independent; defaulted → unverified; declared → same source."""
        assert (
            independence_of("test_result", counted_by_source(resolved(claims=claims))) is expected
        )

    def test_counted_claims_of_the_runner_up_count_too(self) -> None:
        """A source counted for a competing value is not independent either."""
        res = conflicted(runner_up=("none", 0.7, (counted("test_result", "g9"),)))
        assert (
            independence_of("test_result", counted_by_source(res))
            is Independence.SAME_SOURCE_AS_COUNTED
        )

    def test_nothing_counted_is_independent(self) -> None:
        """With no counted claim every source is independent."""
        assert (
            independence_of("human_review", counted_by_source(insufficient()))
            is Independence.INDEPENDENT_OF_COUNTED
        )


class TestSharedGroup:
    def test_prefers_declared_then_name(self) -> None:
        """The group a new claim would join: declared first, then by name."""
        res = resolved(
            claims=(
                counted("test_result"),
                counted("test_result", "z"),
                counted("test_result", "a"),
            )
        )
        group = shared_group("test_result", counted_by_source(res))
        assert group is not None
        assert (group.correlation_group, group.declared) == ("a", True)

    def test_none_when_never_counted(self) -> None:
        """No shared group for a source that was never counted."""
        assert shared_group("vcs_state", counted_by_source(resolved())) is None
