"""The ranking heuristic's invariants: what must always outrank what."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from assay.services.planner.domain.model import (
    Availability,
    AvailabilityReason,
    CostBand,
    Discrimination,
    Independence,
    LatencyBand,
    PrivacyExposure,
    Probe,
    ProbeKind,
    Recency,
    SideEffect,
)
from assay.services.planner.domain.ranking import (
    PENALTY_CAP,
    RankContext,
    cost_points,
    penalty,
    rank,
    score,
    worth_acquiring,
)
from tests.unit.planner.planner_factories import candidate, probe

probes = st.builds(
    probe,
    kind=st.sampled_from([k for k in ProbeKind if k is not ProbeKind.UNSPECIFIED]),
    side_effects=st.lists(
        st.sampled_from([e for e in SideEffect if e is not SideEffect.UNSPECIFIED]),
        unique=True,
        max_size=4,
    ).map(tuple),
    cost=st.sampled_from([c for c in CostBand if c is not CostBand.UNSPECIFIED]),
    latency=st.sampled_from([c for c in LatencyBand if c is not LatencyBand.UNSPECIFIED]),
    privacy=st.sampled_from([c for c in PrivacyExposure if c is not PrivacyExposure.UNSPECIFIED]),
    recency=st.sampled_from([c for c in Recency if c is not Recency.UNSPECIFIED]),
)
discriminations = st.sampled_from(
    [d for d in Discrimination if d is not Discrimination.UNSPECIFIED]
)
availabilities = st.sampled_from([Availability.AVAILABLE, Availability.REQUIRES_APPROVAL])
gap_lists = st.lists(st.sampled_from(["a", "b", "c", "d", "stale"]), min_size=1, unique=True).map(
    tuple
)


class TestInvariants:
    @given(probes, discriminations, availabilities, gap_lists)
    def test_same_source_never_outranks_an_identical_independent_one(
        self,
        the_probe: Probe,
        discrimination: Discrimination,
        availability: Availability,
        gaps: tuple[str, ...],
    ) -> None:
        """Only independence differs: the independent candidate comes first, always."""
        same, unverified, independent = (
            candidate(the_probe, independence, discrimination, availability, gaps)
            for independence in (
                Independence.SAME_SOURCE_AS_COUNTED,
                Independence.UNVERIFIED,
                Independence.INDEPENDENT_OF_COUNTED,
            )
        )
        context = RankContext(frozenset({"stale"}), requires_review=True)
        assert rank([same, unverified, independent], context) == [independent, unverified, same]

    @given(probes, availabilities, gap_lists, st.sampled_from(list(Independence)[1:]))
    def test_could_flip_ranks_above_could_not(
        self,
        the_probe: Probe,
        availability: Availability,
        gaps: tuple[str, ...],
        independence: Independence,
    ) -> None:
        """Only discrimination differs: HIGH before MEDIUM before LOW."""
        high, medium, low = (
            candidate(the_probe, independence, discrimination, availability, gaps)
            for discrimination in (Discrimination.HIGH, Discrimination.MEDIUM, Discrimination.LOW)
        )
        assert rank([low, medium, high]) == [high, medium, low]

    @given(
        st.lists(
            st.tuples(probes, discriminations, availabilities),
            min_size=2,
            max_size=6,
            unique_by=lambda row: row[0].kind,
        )
    )
    def test_order_does_not_depend_on_input_order(
        self, rows: list[tuple[Probe, Discrimination, Availability]]
    ) -> None:
        """Candidates are unique per probe, so the order is total: input order never matters."""
        cands = [candidate(p, discrimination=d, availability=a) for p, d, a in rows]
        assert rank(cands) == rank(list(reversed(cands)))

    @given(probes, discriminations, availabilities, gap_lists)
    def test_penalty_is_capped_and_value_dominates(
        self,
        the_probe: Probe,
        discrimination: Discrimination,
        availability: Availability,
        gaps: tuple[str, ...],
    ) -> None:
        """The penalty never exceeds its cap, and more EVSI never scores less."""
        c = candidate(
            the_probe,
            discrimination=discrimination,
            availability=availability,
            gap_ids=gaps,
        )
        assert penalty(c) <= PENALTY_CAP
        assert score(dataclasses.replace(c, evsi=0.5)) > score(c)

    @given(
        probes,
        probes,
        st.floats(0, 1),
        st.floats(0, 1),
        st.floats(0, 1),
    )
    def test_more_value_never_ranks_later(
        self, first: Probe, second: Probe, a: float, b: float, more: float
    ) -> None:
        """Raising one candidate's EVSI never moves it behind a candidate it was ahead of."""
        if first.kind is second.kind:
            return
        x, y = candidate(first, evsi=a), candidate(second, evsi=b)
        if rank([x, y]) == [x, y]:
            raised = dataclasses.replace(x, evsi=a + more)
            assert rank([y, raised]) == [raised, y]


class TestCostAware:
    def test_value_per_cost_orders_those_worth_acquiring(self) -> None:
        """Two probes both worth their cost: the one settling more per unit of cost first,
        though the other's expected gain is larger."""
        cheap = candidate(probe(kind=ProbeKind.VERIFY_ARTIFACT_HASH), evsi=0.3)
        dear = candidate(
            probe(kind=ProbeKind.HUMAN_REVIEW, cost=CostBand.HIGH, latency=LatencyBand.HOURS),
            evsi=0.6,
        )
        assert worth_acquiring(cheap)
        assert worth_acquiring(dear)
        assert rank([dear, cheap]) == [cheap, dear]

    def test_a_probe_not_worth_its_cost_follows_one_that_is(self) -> None:
        """Expected gain below expected cost: ranked after every probe whose gain pays."""
        small = candidate(probe(kind=ProbeKind.VERIFY_ARTIFACT_HASH), evsi=0.05)
        dear = candidate(
            probe(
                kind=ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
                cost=CostBand.HIGH,
                latency=LatencyBand.HOURS,
                privacy=PrivacyExposure.EXTERNAL_SERVICE,
            ),
            discrimination=Discrimination.HIGH,
            evsi=0.3,
        )
        assert cost_points(dear) > 30
        assert worth_acquiring(small)
        assert not worth_acquiring(dear)
        assert rank([dear, small]) == [small, dear]


class TestExamples:
    def test_cheap_independent_beats_expensive_correlated(self) -> None:
        """Equal discrimination: cheap and independent ranks above expensive and correlated."""
        cheap = candidate(
            the_probe=probe(kind=ProbeKind.INSPECT_VCS_STATE, side_effects=(SideEffect.VCS_READ,)),
            independence=Independence.INDEPENDENT_OF_COUNTED,
        )
        expensive = candidate(
            the_probe=probe(
                kind=ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
                side_effects=(SideEffect.PROCESS_SPAWN, SideEffect.NETWORK_CALL),
                cost=CostBand.HIGH,
                latency=LatencyBand.MINUTES,
                privacy=PrivacyExposure.EXTERNAL_SERVICE,
            ),
            independence=Independence.SAME_SOURCE_AS_COUNTED,
        )
        assert rank([expensive, cheap]) == [cheap, expensive]
        assert score(cheap) > score(expensive)

    def test_approval_needed_ranks_below_an_identical_available_one(self) -> None:
        """REQUIRES_APPROVAL carries a penalty and loses ties to AVAILABLE."""
        available = candidate(availability=Availability.AVAILABLE)
        approval = candidate(availability=Availability.REQUIRES_APPROVAL)
        assert rank([approval, available]) == [available, approval]

    def test_fresh_observation_is_preferred_for_stale_support(self) -> None:
        """Answering a STALE_SUPPORT gap with a fresh observation earns the staleness bonus."""
        c = candidate(gap_ids=("stale_support",))
        assert score(c, RankContext(stale_gap_ids=frozenset({"stale_support"}))) > score(c)

    def test_required_review_puts_human_review_first(self) -> None:
        """When a person must decide, HUMAN_REVIEW is first whatever the others score."""
        human = candidate(
            probe(kind=ProbeKind.HUMAN_REVIEW, cost=CostBand.HIGH),
            independence=Independence.UNVERIFIED,
        )
        rerun = candidate(probe(kind=ProbeKind.RERUN_TEST), evsi=0.9)
        assert rank([rerun, human]) == [rerun, human]
        assert rank([rerun, human], RankContext(requires_review=True)) == [human, rerun]

    def test_each_outstanding_approval_costs(self) -> None:
        """A candidate also blocked by egress after its grants ranks below one that is not."""
        plain = candidate(availability=Availability.REQUIRES_APPROVAL)
        blocked = dataclasses.replace(
            plain,
            verdict=dataclasses.replace(
                plain.verdict, also_blocking=(AvailabilityReason.EGRESS_NOT_ALLOWED,)
            ),
        )
        assert penalty(blocked) > penalty(plain)
