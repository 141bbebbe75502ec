"""Case assignment's pure rules: the distribution rules, the changes a case's assignment is
made of, the request checks, SubmitReview's rule, and the ledger commitment of a change."""

from __future__ import annotations

import pytest

from assay.errors import FailedPrecondition, Violations
from assay.services.adjudication.domain import records
from assay.services.adjudication.domain.assignment import (
    AssignmentChange,
    AssignmentRule,
    check_may_review,
    commitment,
    current,
    distribute,
    new_change,
    payload,
)
from assay.services.adjudication.domain.assignment_requests import (
    AssignRequest,
    UnassignRequest,
    validate_assign,
    validate_unassign,
)
from assay.services.adjudication.domain.model import AuditEventType


def change(n: int, added: tuple[str, ...] = (), removed: tuple[str, ...] = ()) -> AssignmentChange:
    return AssignmentChange("c1", "t", n, added, removed)


class TestDistribute:
    def test_each_gives_every_case_the_pool(self) -> None:
        """EACH ignores counts: every case, every reviewer."""
        got = distribute(AssignmentRule.EACH, ["x", "y"], ["a", "b"], {}, {}, {})
        assert got == {"x": ["a", "b"], "y": ["a", "b"]}

    @pytest.mark.parametrize(
        ("per", "expected"),
        [
            (1, [["a"], ["b"], ["c"], ["a"]]),
            (2, [["a", "b"], ["c", "a"], ["b", "c"], ["a", "b"]]),
            (3, [["a", "b", "c"]] * 4),
        ],
    )
    def test_round_robin_goes_on_where_the_last_case_stopped(
        self, per: int, expected: list[list[str]]
    ) -> None:
        """Each case takes the next ``per`` of the pool, wrapping around."""
        cases = ["w", "x", "y", "z"]
        got = distribute(
            AssignmentRule.ROUND_ROBIN, cases, ["a", "b", "c"], dict.fromkeys(cases, per), {}, {}
        )
        assert [got[c] for c in cases] == expected

    def test_least_loaded_counts_its_own_choices_and_breaks_ties_by_id(self) -> None:
        """Loads a=2, b=0, c=0: b (tie by id), c, then b and c again (1 each, below a)."""
        cases = ["v", "w", "x", "y"]
        got = distribute(
            AssignmentRule.LEAST_LOADED,
            cases,
            ["c", "b", "a"],
            dict.fromkeys(cases, 1),
            {"a": 2},
            {},
        )
        assert [got[c] for c in cases] == [["b"], ["c"], ["b"], ["c"]]

    def test_least_loaded_does_not_count_a_case_a_reviewer_holds(self) -> None:
        """A reviewer chosen for a case they already hold gains no load."""
        got = distribute(
            AssignmentRule.LEAST_LOADED,
            ["x", "y"],
            ["a", "b"],
            {"x": 1, "y": 1},
            {},
            {"x": ["a"]},
        )
        assert got == {"x": ["a"], "y": ["a"]}


class TestChanges:
    def test_current_is_what_the_changes_leave(self) -> None:
        """Added, removed, replaced: the latest change wins for each reviewer."""
        changes = [change(1, ("a", "b")), change(2, removed=("a",)), change(3, ("c",), ("b",))]
        assert current(changes) == ("c",)

    def test_a_change_that_changes_nothing_is_none(self) -> None:
        """Adding reviewers the case has already is a no-op."""
        assert new_change("c1", "t", [change(1, ("a",))], {"a"}, set()) is None

    def test_the_next_change_is_numbered_and_keeps_only_what_is_new(self) -> None:
        earlier = [change(1, ("a",))]
        assert new_change("c1", "t", earlier, {"a", "b"}, set()) == change(2, ("b",))

    @pytest.mark.parametrize(
        ("value", "event_type"),
        [
            (change(1, ("a",)), AuditEventType.CASE_ASSIGNED),
            (change(1, removed=("a",)), AuditEventType.CASE_UNASSIGNED),
            (change(1, ("b",), ("a",)), AuditEventType.CASE_REASSIGNED),
        ],
    )
    def test_the_event_type_follows_the_change(
        self, value: AssignmentChange, event_type: AuditEventType
    ) -> None:
        assert value.event_type is event_type

    def test_an_unassignment_does_not_match_an_assignment_event(self) -> None:
        """The same ids either way: the event's type is part of what is compared."""
        assigned, unassigned = change(1, ("a",)), change(1, removed=("a",))
        recorded = records.committed("CASE_ASSIGNED", payload(assigned))
        assert records.mismatch(commitment(assigned), recorded) == ""
        assert "event_type" in records.mismatch(commitment(unassigned), recorded)


class TestRequests:
    def test_every_assign_field_is_named(self) -> None:
        found = Violations()
        validate_assign(AssignRequest(("c", "c"), ("a", "a", "B!"), None, -1), found)
        assert sorted(v.field for v in found.kept) == [
            "case_ids",
            "case_ids[1]",
            "reviewer_ids[1]",
            "reviewer_ids[2]",
            "reviewers_per_case",
            "rule",
        ]

    def test_a_replacement_cannot_also_be_removed(self) -> None:
        found = Violations()
        validate_unassign(UnassignRequest("c", ("a",), ("b", "a")), found)
        assert [v.field for v in found.kept] == ["to_reviewer_ids[1]"]


class TestMayReview:
    @pytest.mark.parametrize(
        ("assigned", "open_tenant", "allowed"),
        [
            ((), True, True),
            ((), False, False),
            (("ann",), False, True),
            (("bob",), True, False),
        ],
    )
    def test_who_may_review(
        self, assigned: tuple[str, ...], open_tenant: bool, allowed: bool
    ) -> None:
        """ann may review her own case, or an unassigned one where the tenant allows it."""
        if allowed:
            check_may_review(assigned, "ann", open_tenant)
        else:
            with pytest.raises(FailedPrecondition):
                check_may_review(assigned, "ann", open_tenant)
