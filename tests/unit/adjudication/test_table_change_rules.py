"""A reliability table change as an approval's action: checked as the resolver checks a
table file, named by the resolver's digest, stored as a candidate and read back the same,
covered by the content digest; its quorum from the policy (two unless set)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.reliability_table import table_digest
from assay.services.adjudication.domain import approvals
from assay.services.adjudication.domain.approval_policy import parse_approval_policy
from assay.services.adjudication.domain.approvals import Approval
from assay.services.adjudication.domain.model import Actor
from assay.services.adjudication.domain.table_changes import (
    TableChange,
    as_candidate,
    problems,
    stored_change,
)
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TABLE = {**DEFAULT_RELIABILITY, "ci_status": 0.7}


def change(table: dict[str, float] = TABLE, digest: str = "", tree_size: int = 7) -> TableChange:
    return TableChange.of(digest or table_digest(table), table, tree_size)


def fields(found: TableChange) -> list[str]:
    return [v.field for v in problems(found)]


class TestChecks:
    def test_a_table_the_resolver_loads_with_its_digest_passes(self) -> None:
        assert problems(change()) == []

    @pytest.mark.parametrize(
        ("given", "field"),
        [
            (change(digest=table_digest(DEFAULT_RELIABILITY)), "table_change.table_digest"),
            (change({**TABLE, "ci_status": 1.5}, digest="sha256:x"), "table_change.sources"),
            (change({**TABLE, "ci_status": float("nan")}, digest="x"), "table_change.sources"),
            (change({" ": 0.5}, digest="sha256:x"), "table_change.sources"),
            (change({}, digest="sha256:x"), "table_change.sources"),
            (change(tree_size=-1), "table_change.tree_size"),
        ],
    )
    def test_each_problem_is_named(self, given: TableChange, field: str) -> None:
        assert fields(given) == [field]


class TestStored:
    @given(
        st.dictionaries(
            st.text(min_size=1).filter(str.strip),
            st.floats(min_value=0.0, max_value=1.0),
            min_size=1,
            max_size=8,
        ),
        st.integers(min_value=0, max_value=2**40),
    )
    def test_a_change_reads_back_as_it_was_stored(
        self, table: dict[str, float], tree_size: int
    ) -> None:
        stored = as_candidate(change(table, tree_size=tree_size))
        assert stored.candidate_digest == table_digest(table)
        assert stored_change(stored) == change(table, tree_size=tree_size)
        assert as_candidate(stored_change(stored) or change()).detail == stored.detail

    def test_an_acquisition_candidate_is_no_table_change(self) -> None:
        stored = as_candidate(change())
        assert stored_change(replace(stored, probe="QUERY_CI_STATUS")) is None


def test_the_content_digest_covers_the_table() -> None:
    approval = Approval(
        approval_id="approval_1",
        tenant="acme",
        subject="",
        predicate="",
        candidate=as_candidate(change()),
        requester=Actor("https://idp", "operator"),
        reason="calibrated",
        request_time=T0,
        expire_time=T0 + timedelta(hours=1),
        grant_lifetime=timedelta(minutes=15),
        quorum=2,
        deny_ends=True,
    )
    edited = replace(approval, candidate=as_candidate(change({**TABLE, "ci_status": 0.95})))
    assert approvals.approval_digest(edited) != approvals.approval_digest(approval)


class TestQuorum:
    def test_two_unless_the_policy_says(self) -> None:
        assert parse_approval_policy({}).table_change_quorum == 2
        assert parse_approval_policy({"table_change_quorum": 3}).table_change_quorum == 3

    def test_a_bad_quorum_is_named(self) -> None:
        with pytest.raises(ValueError, match=r"approvals\.table_change_quorum"):
            parse_approval_policy({"table_change_quorum": 0})
