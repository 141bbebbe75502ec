"""The likelihood model, discrimination over every plausible outcome, and EVSI."""

from __future__ import annotations

import dataclasses
import math

import pytest

from assay.services.planner.domain.discrimination import PLAUSIBLE, discrimination_of, support_band
from assay.services.planner.domain.independence import counted_by_source
from assay.services.planner.domain.model import (
    Discrimination,
    DiscriminationBasis,
    OutcomeAssumption,
    ProbeKind,
    Resolution,
    ResolutionStatus,
    SupportBand,
    ValueView,
)
from assay.services.planner.domain.outcomes import (
    OUTCOME_GROUP_PREFIX,
    UNCLAIMED_KEY,
    beliefs,
    enumerate_outcomes,
    report_probabilities,
)
from assay.services.planner.domain.probes import CATALOGUE
from assay.services.planner.domain.value import DECIDED_SUPPORT, evsi
from tests.unit.planner.planner_factories import conflicted, counted, insufficient, key, resolved

RERUN = CATALOGUE[ProbeKind.RERUN_TEST]
REVIEW = CATALOGUE[ProbeKind.HUMAN_REVIEW]


class TestLikelihoodModel:
    def test_beliefs_follow_support_and_the_unclaimed_rest(self) -> None:
        """Claimed values weigh their support; "none of them" weighs prod(1 - s)."""
        b = beliefs(resolved(support=0.9))
        assert b[key("key")] == pytest.approx(0.9)
        assert b[UNCLAIMED_KEY] == pytest.approx(0.1)

    def test_nothing_claimed_means_the_truth_is_unclaimed(self) -> None:
        """With no value, the truth is an unclaimed value for certain."""
        assert beliefs(insufficient()) == {UNCLAIMED_KEY: 1.0}

    def test_report_probabilities_sum_to_one(self) -> None:
        """Each probe reports exactly one of its outcomes."""
        b = beliefs(conflicted())
        for reportable in ((key("key"), key("none")), (key("key"), key("none"), UNCLAIMED_KEY)):
            probs = report_probabilities(b, reportable, 0.85)
            assert math.fsum(probs.values()) == pytest.approx(1.0)

    def test_a_perfect_source_reports_the_belief(self) -> None:
        """With reliability 1, P(report v) is the belief in v (for reportable truths)."""
        b = beliefs(conflicted())
        probs = report_probabilities(b, (key("key"), key("none"), UNCLAIMED_KEY), 1.0)
        assert probs[key("key")] == pytest.approx(b[key("key")])


class TestOutcomes:
    def test_fresh_probe_reports_leader_competitor_or_an_unclaimed_value(self) -> None:
        """A fresh observation has every claimed value and an unclaimed one as outcomes."""
        res = conflicted()
        outcomes = enumerate_outcomes(RERUN, res, counted_by_source(res), 0.85)
        assert {o.assumption for o in outcomes} == {
            OutcomeAssumption.CORROBORATE_LEADER,
            OutcomeAssumption.RUNNER_UP,
            OutcomeAssumption.FIRST_OBSERVATION,
        }
        assert math.fsum(o.likelihood for o in outcomes) == pytest.approx(1.0)
        assert [o.likelihood for o in outcomes] == sorted(
            (o.likelihood for o in outcomes), reverse=True
        )

    def test_review_judges_only_recorded_values(self) -> None:
        """HUMAN_REVIEW has no unclaimed-value outcome when values exist."""
        res = conflicted()
        outcomes = enumerate_outcomes(REVIEW, res, counted_by_source(res), 1.0)
        assert UNCLAIMED_KEY not in {o.value_key for o in outcomes}

    def test_new_source_gets_a_fresh_declared_group(self) -> None:
        """A source never counted brings its own declared group."""
        res = resolved(claims=(counted("api_spec", "g1"),))
        outcome = enumerate_outcomes(RERUN, res, counted_by_source(res), 0.85)[0]
        assert (outcome.correlation_group, outcome.declared) == (
            OUTCOME_GROUP_PREFIX + "rerun_test",
            True,
        )

    def test_fresh_run_supersedes_the_stale_run_of_its_group(self) -> None:
        """A re-run replaces the stale claims of the same source and group, not others."""
        res = dataclasses.replace(
            resolved(claims=(counted("test_result", "g2"),)),
            members={("test_result", "g2"): ("old", "recent")},
        )
        outcome = enumerate_outcomes(RERUN, res, counted_by_source(res), 0.85, frozenset({"old"}))[
            0
        ]
        assert (outcome.correlation_group, outcome.supersedes) == ("g2", ("old",))


class TestDiscrimination:
    @pytest.mark.parametrize(
        ("support", "band"),
        [(None, SupportBand.NONE), (0.49, SupportBand.WEAK), (0.5, SupportBand.MODERATE)],
    )
    def test_support_bands(self, support: float | None, band: SupportBand) -> None:
        """Bands have inclusive lower bounds."""
        assert support_band(support) is band

    def test_a_plausible_flip_is_high_and_is_the_reported_outcome(self) -> None:
        """Any outcome of likelihood >= PLAUSIBLE that flips the status makes it HIGH."""
        base = conflicted()
        outcomes = enumerate_outcomes(RERUN, base, counted_by_source(base), 0.85)
        flipped = dataclasses.replace(base, status=ResolutionStatus.RESOLVED)
        answers = [flipped if o.value_key == key("key") else base for o in outcomes]
        d, basis, reported = discrimination_of(base, outcomes, answers)
        assert (d, basis, reported.value_key) == (
            Discrimination.HIGH,
            DiscriminationBasis.STATUS_CHANGED,
            key("key"),
        )

    def test_an_implausible_flip_does_not_count(self) -> None:
        """A flip only by an outcome below PLAUSIBLE leaves it LOW."""
        base = resolved(support=0.99)
        outcomes = enumerate_outcomes(REVIEW, base, counted_by_source(base), 1.0)
        rare = [dataclasses.replace(o, likelihood=PLAUSIBLE / 2) for o in outcomes]
        flipped = dataclasses.replace(base, status=ResolutionStatus.CONFLICTED)
        d, _, _ = discrimination_of(base, rare, [flipped] * len(rare))
        assert d is Discrimination.LOW


class TestValue:
    def test_resolving_a_conflict_toward_the_likely_truth_has_value(self) -> None:
        """EVSI is positive when an outcome resolves a conflict, zero when nothing changes."""
        base = conflicted()
        outcomes = enumerate_outcomes(RERUN, base, counted_by_source(base), 0.85)
        resolves = [strongly_resolved(base, o.value_key) for o in outcomes]
        assert evsi(base, beliefs(base), outcomes, resolves, 0.85) > 0
        assert evsi(base, beliefs(base), outcomes, [base] * len(outcomes), 0.85) == 0

    def test_only_a_strong_resolution_is_acted_on(self) -> None:
        """Resolving to a leader below the STRONG band is not yet a decision: no value."""
        base = conflicted()
        outcomes = enumerate_outcomes(RERUN, base, counted_by_source(base), 0.85)
        weak = [
            dataclasses.replace(base, status=ResolutionStatus.RESOLVED, leader_key=o.value_key)
            for o in outcomes
        ]
        assert all(v.support < DECIDED_SUPPORT for v in base.values)
        assert evsi(base, beliefs(base), outcomes, weak, 0.85) == 0


def strongly_resolved(base: Resolution, leader_key: str) -> Resolution:
    """``base`` RESOLVED to ``leader_key`` with STRONG support (a fresh value if unclaimed)."""
    views = [v for v in base.values if v.value_key != leader_key]
    views.insert(0, ValueView(leader_key, leader_key, 0.9, ()))
    return dataclasses.replace(
        base, status=ResolutionStatus.RESOLVED, leader_key=leader_key, values=tuple(views)
    )
