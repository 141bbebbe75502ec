"""Whether a probe may be acquired here: four checks in a fixed order, first failure decides.

1. A probe needing FILESYSTEM_WRITE_OUTSIDE_WORKTREE is FORBIDDEN, whatever the policy
   grants: forbidden is a stronger refusal than "not granted", so it comes before the grants.
2. A probe that observes through the runtime is UNAVAILABLE when the runtime cannot observe
   its target class (the state is reported). HUMAN_REVIEW does not observe through the
   runtime, which keeps it reachable for every gap.
3. A side effect the policy does not grant makes it REQUIRES_APPROVAL, naming exactly the
   missing grants, never a bare "denied".
4. A network probe without ``egress_allowed``, or a hosted-service probe without
   ``cloud_sync_allowed``, is UNAVAILABLE with that reason.

Every later check that also fails is kept (``AvailabilityVerdict.blocking_reasons``), so a
REQUIRES_APPROVAL network probe names egress and cloud sync beside its missing grants: one
approval can ask for everything between the candidate and AVAILABLE.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.services.planner.domain.gaps import is_concerning, most_restrictive
from assay.services.planner.domain.model import (
    AcquisitionPolicy,
    Availability,
    AvailabilityReason,
    AvailabilityVerdict,
    MissingSignalNote,
    Probe,
    SideEffect,
    SignalAvailability,
    SignalClass,
)

# Side effects this planner never approves, whatever a policy says.
NEVER_APPROVABLE: frozenset[SideEffect] = frozenset({SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE})

# States in which a probe cannot observe the class through the runtime.
# COLLECTION_FAILED is deliberately absent: a failed collection is exactly what
# a fresh probe retries, so it is a gap but not a block.
NOT_OBSERVABLE: frozenset[SignalAvailability] = frozenset(
    {
        SignalAvailability.UNSUPPORTED,
        SignalAvailability.UNAVAILABLE,
        SignalAvailability.REDACTED,
        SignalAvailability.DISABLED,
    }
)


def runtime_state(
    signal_class: SignalClass,
    capabilities: Mapping[SignalClass, SignalAvailability],
    notes: tuple[MissingSignalNote, ...],
) -> SignalAvailability:
    """What this runtime can observe of a class.

    The capabilities decide when they list the class. Otherwise the most
    restrictive concerning note for it does, and with neither the class is
    taken as AVAILABLE: the planner does not invent blocks it was not told of.
    """
    listed = capabilities.get(signal_class)
    if listed is not None:
        return listed
    noted = [n.availability for n in notes if n.signal_class == signal_class]
    if any(is_concerning(s) for s in noted):
        return most_restrictive(noted)
    return SignalAvailability.AVAILABLE


def classify_availability(
    probe: Probe,
    target: SignalClass,
    policy: AcquisitionPolicy,
    state: SignalAvailability,
) -> AvailabilityVerdict:
    """Run the four checks for ``probe`` aimed at ``target`` whose runtime state is ``state``.

    The first failing check decides the availability and its reason; the verdict also
    records every later check that fails (``blocking_reasons``), so a caller sees all
    that stands in the way, not only the first."""
    forbidden = tuple(sorted(set(probe.side_effects) & NEVER_APPROVABLE))
    unobservable = probe.observes_via_runtime and state in NOT_OBSERVABLE
    missing = tuple(sorted(set(probe.side_effects) - policy.granted - NEVER_APPROVABLE))
    switches = policy_switches_off(probe, policy)
    failing = (
        *([AvailabilityReason.SIDE_EFFECT_FORBIDDEN] if forbidden else []),
        *([AvailabilityReason.SIGNAL_NOT_OBSERVABLE] if unobservable else []),
        *([AvailabilityReason.SIDE_EFFECT_NOT_GRANTED] if missing else []),
        *switches,
    )
    if not failing:
        return AvailabilityVerdict(Availability.AVAILABLE, AvailabilityReason.ALL_REQUIREMENTS_MET)
    first, later = failing[0], tuple(failing[1:])
    if forbidden:
        return AvailabilityVerdict(
            Availability.FORBIDDEN, first, forbidden=forbidden, also_blocking=later
        )
    if unobservable:
        return AvailabilityVerdict(
            Availability.UNAVAILABLE, first, signal_availability=state, also_blocking=later
        )
    if missing:
        return AvailabilityVerdict(
            Availability.REQUIRES_APPROVAL, first, missing_grants=missing, also_blocking=later
        )
    return AvailabilityVerdict(Availability.UNAVAILABLE, first, also_blocking=later)


def policy_switches_off(probe: Probe, policy: AcquisitionPolicy) -> tuple[AvailabilityReason, ...]:
    """The policy switches the probe needs and the policy has off, in check-4 order."""
    off = []
    if probe.needs_egress and not policy.egress_allowed:
        off.append(AvailabilityReason.EGRESS_NOT_ALLOWED)
    if probe.needs_cloud_sync and not policy.cloud_sync_allowed:
        off.append(AvailabilityReason.CLOUD_SYNC_NOT_ALLOWED)
    return tuple(off)
