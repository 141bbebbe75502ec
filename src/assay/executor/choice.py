"""Which ranked candidate the executor may act on: the gate between a plan and an action.

The planner ranks; it never executes. The executor walks the ranking best
first and takes the first candidate that passes every check here, recording
why each better-ranked one was skipped. The checks do not trust the plan
blindly: a candidate the plan calls AVAILABLE still runs only if this run's
own policy grants every side effect it needs (the plan may have been computed
under another policy). A REQUIRES_APPROVAL candidate is taken only when it
can be approved: through the approval service (``ask``: the loop then asks
people and acts only on a consumed grant), or, in dev mode, when whoever runs
the executor approved its probe kind locally (``--approve PROBE_KIND``). Either
way the grants the approval stands in for are recorded in the report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from assay.executor.model import IMPLEMENTED_PROBES, Settings, Skip, SkipReason
from assay.v1 import plan_pb2


def short_name(wrapper: object, number: int, prefix: str) -> str:
    """An enum value's name without its prefix, e.g. ``HUMAN_REVIEW``."""
    name: str = wrapper.Name(number)  # type: ignore[attr-defined]
    return name.removeprefix(prefix)


def probe_name(candidate: plan_pb2.AcquisitionCandidate) -> str:
    return short_name(plan_pb2.ProbeKind, candidate.probe, "PROBE_KIND_")


def side_effects(numbers: Iterable[int]) -> list[str]:
    return [short_name(plan_pb2.SideEffectClass, n, "SIDE_EFFECT_CLASS_") for n in numbers]


@dataclass(frozen=True)
class Choice:
    """The candidate to act on (if any), the ones skipped before it, and approvals used.
    ``ask``: the candidate needs the approval service's consumed grant before it runs."""

    candidate: plan_pb2.AcquisitionCandidate | None
    skipped: tuple[Skip, ...]
    approved_grants: tuple[str, ...] = ()
    ask: bool = False


def choose(
    candidates: Sequence[plan_pb2.AcquisitionCandidate],
    settings: Settings,
    tried: set[str],
    configured: Callable[[str], bool],
    can_ask: bool = False,
) -> Choice:
    """The best-ranked candidate this run may act on, with a reason for every one passed over.
    ``can_ask``: an approval service is at hand, so REQUIRES_APPROVAL candidates are taken
    (to be asked for) and local approvals do not apply."""
    skipped: list[Skip] = []
    for candidate in candidates:
        probe = probe_name(candidate)
        required = set(side_effects(candidate.required_side_effects))
        missing = sorted(required - settings.granted)
        reason: SkipReason | None = None
        if candidate.candidate_id in tried:
            reason = SkipReason.ALREADY_TRIED
        elif probe not in IMPLEMENTED_PROBES:
            reason = SkipReason.NOT_IMPLEMENTED
        elif candidate.availability == plan_pb2.AVAILABILITY_AVAILABLE:
            reason = SkipReason.NOT_GRANTED if missing else None
        elif candidate.availability == plan_pb2.AVAILABILITY_REQUIRES_APPROVAL:
            approvable = can_ask or probe in settings.approvals
            reason = None if approvable else SkipReason.NEEDS_APPROVAL
        else:  # UNAVAILABLE / FORBIDDEN are never ranked; never act on one if they were
            reason = SkipReason.NOT_GRANTED
        if reason is None and not configured(probe):
            reason = SkipReason.NOT_CONFIGURED
        if reason is not None:
            skipped.append(Skip(candidate.candidate_id, reason))
            continue
        approved = tuple(missing) if missing else ()
        asks = can_ask and candidate.availability == plan_pb2.AVAILABILITY_REQUIRES_APPROVAL
        return Choice(candidate, tuple(skipped), approved, asks)
    return Choice(None, tuple(skipped))
