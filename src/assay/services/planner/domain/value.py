"""The expected value of sample information of a probe: what ranks candidates, inside only.

The decision is the resolver's: a RESOLVED semantic whose leader has STRONG support
(``DECIDED_SUPPORT``) is acted on as its leader; a weaker, CONFLICTED or INSUFFICIENT one is
not acted on yet, since its gaps still call for evidence. Against a truth ``t`` that decision
is worth ``RIGHT_RESOLUTION`` when RESOLVED to ``t``, ``-WRONG_RESOLUTION`` when RESOLVED to
anything else, and nothing when undecided: a wrong resolution costs more than none.

Acquiring a probe turns the current state into the state its outcome ``o`` would give (the
resolver's answer to that hypothesis). Its value is the expected change of the decision's
worth, over the truth and the outcome together (the likelihood model of ``outcomes``)::

    EVSI = sum_o sum_t P(t) P(o | t) (U(state_o, t) - U(state_now, t))

The figure orders candidates (``ranking``) and is then discarded: it never crosses the wire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from assay.services.planner.domain.discrimination import STRONG_FROM
from assay.services.planner.domain.model import Outcome, Resolution, ResolutionStatus

# A resolution is acted on from this leader support on (the STRONG band).
DECIDED_SUPPORT = STRONG_FROM

RIGHT_RESOLUTION = 1.0
WRONG_RESOLUTION = 2.0


def utility(resolution: Resolution, truth: str) -> float:
    """What the resolver's decision is worth if ``truth`` is the true value key."""
    leader = resolution.leader
    if resolution.status is not ResolutionStatus.RESOLVED or leader is None:
        return 0.0
    if leader.support < DECIDED_SUPPORT:
        return 0.0
    return RIGHT_RESOLUTION if resolution.leader_key == truth else -WRONG_RESOLUTION


def report_given_truth(
    report: str, truth: str, reportable: Sequence[str], reliability: float
) -> float:
    """``P(o | t)`` of the likelihood model (``outcomes`` module docstring)."""
    n = len(reportable)
    if n == 1:
        return 1.0
    if truth not in reportable:
        return 1.0 / n
    return reliability if report == truth else (1.0 - reliability) / (n - 1)


def evsi(
    base: Resolution,
    belief: Mapping[str, float],
    outcomes: Sequence[Outcome],
    hypothetical: Sequence[Resolution],
    reliability: float,
) -> float:
    """The expected change in the decision's worth from acquiring the probe (module
    docstring). Outcomes that leave the state as it is contribute nothing; one that
    resolves a conflict to the likely truth contributes a lot; one that would resolve to a
    likely-wrong value contributes a negative amount."""
    reportable = [o.value_key for o in outcomes]
    total = 0.0
    for outcome, after in zip(outcomes, hypothetical, strict=True):
        for truth, p in belief.items():
            likelihood = report_given_truth(outcome.value_key, truth, reportable, reliability)
            total += p * likelihood * (utility(after, truth) - utility(base, truth))
    return total
