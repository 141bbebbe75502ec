"""Gap derivation: why more evidence would help, from three sources plus one.

1. The resolution: CONFLICTED is an unresolved conflict, and each rationale flag the
   resolver raised on the leader is its own gap. A RESOLVED, unflagged leader resting on
   fewer than two *declared* independent groups is UNCORROBORATED: without it, "no gap"
   would be reachable by a single claim, which is not what corroboration means.
2. Missing-signal notes whose availability is concerning (anything but AVAILABLE):
   somebody looked for the class and did not get it.
3. Capabilities: a class this runtime reports it cannot fully observe is a gap even when
   nobody noted it missing; otherwise the planner would only see gaps already written down.

Plus: INSUFFICIENT with nothing excluded and no concerning note is NO_EVIDENCE_AT_ALL
("nobody looked"), kept distinct from a MISSING_SIGNAL gap ("somebody looked and it was not
there"); INSUFFICIENT because every claim was reviewed out or superseded is
NO_ACTIVE_CLAIMS. So an empty gap list means exactly DESIGN's NO_GAP_IDENTIFIED condition.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from assay.services.planner.domain.model import (
    Gap,
    GapKind,
    GapSource,
    MissingSignalNote,
    PlanInput,
    RationaleFlag,
    Resolution,
    ResolutionStatus,
    SignalAvailability,
    SignalClass,
)

FLAG_GAPS: Mapping[RationaleFlag, GapKind] = {
    RationaleFlag.ALL_SUPPORT_DISCOUNTED: GapKind.ALL_SUPPORT_DISCOUNTED,
    RationaleFlag.SINGLE_SOURCE_CORROBORATION: GapKind.SINGLE_SOURCE_CORROBORATION,
    RationaleFlag.INDEPENDENCE_UNVERIFIED: GapKind.INDEPENDENCE_UNVERIFIED,
    RationaleFlag.STALE_SUPPORT: GapKind.STALE_SUPPORT,
}

# Most restrictive first: when several notes disagree about one class, the
# gap reports the state that blocks most (an operator's DISABLED outranks a
# transient COLLECTION_FAILED).
SEVERITY: tuple[SignalAvailability, ...] = (
    SignalAvailability.DISABLED,
    SignalAvailability.UNSUPPORTED,
    SignalAvailability.UNAVAILABLE,
    SignalAvailability.REDACTED,
    SignalAvailability.COLLECTION_FAILED,
)

# Declared independent groups needed before a resolved leader counts as corroborated.
MIN_DECLARED_GROUPS = 2


def is_concerning(state: SignalAvailability) -> bool:
    """Every known state except AVAILABLE means the class was not (fully) observed."""
    return state in SEVERITY


def most_restrictive(states: Iterable[SignalAvailability]) -> SignalAvailability:
    """The most restrictive concerning state among ``states`` (AVAILABLE if none is)."""
    present = set(states)
    for state in SEVERITY:
        if state in present:
            return state
    return SignalAvailability.AVAILABLE


def declared_leader_groups(resolution: Resolution) -> int:
    """How many distinct declared correlation groups back the leader."""
    leader = resolution.leader
    if leader is None:
        return 0
    return len({c.correlation_group for c in leader.counted if c.declared})


def resolution_gaps(resolution: Resolution, notes: tuple[MissingSignalNote, ...]) -> list[Gap]:
    """Gaps read from the resolution (source 1), plus the empty-evidence gap."""
    gaps: list[Gap] = []
    if resolution.status is ResolutionStatus.INSUFFICIENT:
        if resolution.excluded_count > 0:
            gaps.append(Gap(GapKind.NO_ACTIVE_CLAIMS, GapSource.RESOLUTION))
        elif not any(is_concerning(n.availability) for n in notes):
            gaps.append(Gap(GapKind.NO_EVIDENCE_AT_ALL, GapSource.EMPTY_EVIDENCE))
        return gaps
    if resolution.status is ResolutionStatus.CONFLICTED:
        gaps.append(Gap(GapKind.UNRESOLVED_CONFLICT, GapSource.RESOLUTION))
    for flag in sorted(resolution.flags):
        kind = FLAG_GAPS.get(flag)
        if kind is not None:
            gaps.append(Gap(kind, GapSource.RESOLUTION))
    if (
        resolution.status is ResolutionStatus.RESOLVED
        and not resolution.flags
        and declared_leader_groups(resolution) < MIN_DECLARED_GROUPS
    ):
        gaps.append(Gap(GapKind.UNCORROBORATED, GapSource.RESOLUTION))
    return gaps


def note_gaps(notes: tuple[MissingSignalNote, ...]) -> list[Gap]:
    """One MISSING_SIGNAL gap per class with a concerning note (source 2)."""
    states: dict[SignalClass, list[SignalAvailability]] = defaultdict(list)
    texts: dict[SignalClass, set[str]] = defaultdict(set)
    for note in notes:
        if not is_concerning(note.availability):
            continue
        states[note.signal_class].append(note.availability)
        if note.note:
            texts[note.signal_class].add(note.note)
    return [
        Gap(
            GapKind.MISSING_SIGNAL,
            GapSource.MISSING_SIGNAL_NOTE,
            signal_class=cls,
            signal_availability=most_restrictive(states[cls]),
            notes=tuple(sorted(texts[cls])),
        )
        for cls in sorted(states)
    ]


def capability_gaps(capabilities: Mapping[SignalClass, SignalAvailability]) -> list[Gap]:
    """One UNOBSERVABLE_SIGNAL gap per class the runtime reports not observing (source 3)."""
    return [
        Gap(
            GapKind.UNOBSERVABLE_SIGNAL,
            GapSource.CAPABILITIES,
            signal_class=cls,
            signal_availability=state,
        )
        for cls, state in sorted(capabilities.items())
        if is_concerning(state)
    ]


def derive_gaps(plan_input: PlanInput) -> tuple[Gap, ...]:
    """Every gap, ordered by kind then signal class (so by ``gap_id`` within a kind)."""
    gaps = [
        *resolution_gaps(plan_input.resolution, plan_input.notes),
        *note_gaps(plan_input.notes),
        *capability_gaps(plan_input.capabilities),
    ]
    return tuple(sorted(gaps, key=lambda g: (g.kind, g.signal_class)))
