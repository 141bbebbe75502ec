"""The probe catalogue, and which probes answer which gap and which signal class.

Probes are a closed set, each with a real referent: something an executor
could do that yields claims of a known source kind (a key of the resolver's
reliability table). Cost and latency are authored constants, not measurements:
the planner has no telemetry about how long a real test rerun takes.

Only process results, tool traces and tool-result payloads have automated
probes; every other class falls back to HUMAN_REVIEW alone, because nothing in
Assay can observe a final response or raw reasoning independently. HUMAN_REVIEW
needs no side effect and is not gated by what the runtime can observe, which is
what guarantees every gap a reachable candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from assay.services.planner.domain.model import (
    ActionRisk,
    CostBand,
    GapKind,
    LatencyBand,
    PrivacyExposure,
    Probe,
    ProbeKind,
    Recency,
    SideEffect,
    SignalClass,
)

# Every class a person can be asked about: all of them.
ALL_CLASSES: tuple[SignalClass, ...] = tuple(c for c in SignalClass if c is not c.UNSPECIFIED)

# The classes automated probes can observe; the rest map to HUMAN_REVIEW only.
AUTOMATABLE_CLASSES: frozenset[SignalClass] = frozenset(
    {SignalClass.PROCESS_RESULT, SignalClass.TOOL_TRACE, SignalClass.TOOL_RESULT_PAYLOAD}
)

_AUTHORED: Mapping[ProbeKind, Probe] = MappingProxyType(
    {
        probe.kind: probe
        for probe in (
            Probe(
                kind=ProbeKind.RERUN_TEST,
                targets=(SignalClass.PROCESS_RESULT,),
                side_effects=(
                    SideEffect.FILESYSTEM_READ,
                    SideEffect.FILESYSTEM_WRITE_WORKTREE,
                    SideEffect.PROCESS_SPAWN,
                ),
                expected_source="test_result",
                cost=CostBand.MEDIUM,
                latency=LatencyBand.MINUTES,
                privacy=PrivacyExposure.LOCAL_ONLY,
                recency=Recency.FRESH_OBSERVATION,
                needs_egress=False,
                needs_cloud_sync=False,
                observes_via_runtime=True,
                description="Run the relevant tests again in the worktree and record the result.",
            ),
            Probe(
                kind=ProbeKind.INSPECT_VCS_STATE,
                targets=(SignalClass.TOOL_RESULT_PAYLOAD,),
                side_effects=(SideEffect.FILESYSTEM_READ, SideEffect.VCS_READ),
                expected_source="vcs_state",
                cost=CostBand.LOW,
                latency=LatencyBand.SECONDS,
                privacy=PrivacyExposure.LOCAL_ONLY,
                recency=Recency.FRESH_OBSERVATION,
                needs_egress=False,
                needs_cloud_sync=False,
                observes_via_runtime=True,
                description="Read the repository's status, refs and history for what changed.",
            ),
            Probe(
                kind=ProbeKind.QUERY_CI_STATUS,
                targets=(SignalClass.PROCESS_RESULT,),
                side_effects=(SideEffect.NETWORK_CALL,),
                expected_source="ci_status",
                cost=CostBand.LOW,
                latency=LatencyBand.SECONDS,
                privacy=PrivacyExposure.EXTERNAL_SERVICE,
                recency=Recency.FRESH_OBSERVATION,
                needs_egress=True,
                needs_cloud_sync=True,
                observes_via_runtime=True,
                description="Ask the hosted CI service for the status of the matching run.",
            ),
            Probe(
                kind=ProbeKind.VERIFY_ARTIFACT_HASH,
                targets=(SignalClass.TOOL_RESULT_PAYLOAD,),
                side_effects=(SideEffect.FILESYSTEM_READ,),
                expected_source="artifact_hash",
                cost=CostBand.LOW,
                latency=LatencyBand.SECONDS,
                privacy=PrivacyExposure.LOCAL_ONLY,
                recency=Recency.FRESH_OBSERVATION,
                needs_egress=False,
                needs_cloud_sync=False,
                observes_via_runtime=True,
                description="Recompute an artifact's content hash and compare it with the record.",
            ),
            Probe(
                kind=ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
                targets=(SignalClass.TOOL_TRACE,),
                side_effects=(
                    SideEffect.FILESYSTEM_WRITE_WORKTREE,
                    SideEffect.PROCESS_SPAWN,
                    SideEffect.NETWORK_CALL,
                ),
                expected_source="replay_experiment",
                cost=CostBand.HIGH,
                latency=LatencyBand.MINUTES,
                privacy=PrivacyExposure.EXTERNAL_SERVICE,
                recency=Recency.FRESH_OBSERVATION,
                needs_egress=True,
                needs_cloud_sync=False,
                observes_via_runtime=True,
                description="Replay the recorded tool calls, bounded in steps and time, and trace.",
            ),
            Probe(
                kind=ProbeKind.HUMAN_REVIEW,
                targets=ALL_CLASSES,
                side_effects=(),
                expected_source="human_review",
                cost=CostBand.HIGH,
                latency=LatencyBand.HOURS,
                privacy=PrivacyExposure.HUMAN_REVIEWER,
                recency=Recency.REVIEW_OF_RECORDED,
                needs_egress=False,
                needs_cloud_sync=False,
                observes_via_runtime=False,
                description="Enqueue a blinded adjudication case; its label returns as a claim.",
            ),
        )
    }
)

# Which probes can address a gap found in the resolution. Authored: each
# answers the gap's question with a different kind of evidence.
_RESOLUTION_GAP_PROBES: Mapping[GapKind, tuple[ProbeKind, ...]] = MappingProxyType(
    {
        # Any fresh, independent observation can settle a disagreement.
        GapKind.UNRESOLVED_CONFLICT: (
            ProbeKind.RERUN_TEST,
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.QUERY_CI_STATUS,
            ProbeKind.VERIFY_ARTIFACT_HASH,
            ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
            ProbeKind.HUMAN_REVIEW,
        ),
        # Weak sources need a strong one: executed checks, hashes, a person.
        GapKind.ALL_SUPPORT_DISCOUNTED: (
            ProbeKind.RERUN_TEST,
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.QUERY_CI_STATUS,
            ProbeKind.VERIFY_ARTIFACT_HASH,
            ProbeKind.HUMAN_REVIEW,
        ),
        # One source saying it many times, or one claim alone, needs a second, different
        # source: any probe whose source kind was not counted yet. The cheap local ones
        # (a VCS read, a hash check) are such sources, of high reliability.
        GapKind.SINGLE_SOURCE_CORROBORATION: (
            ProbeKind.RERUN_TEST,
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.QUERY_CI_STATUS,
            ProbeKind.VERIFY_ARTIFACT_HASH,
            ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
            ProbeKind.HUMAN_REVIEW,
        ),
        GapKind.UNCORROBORATED: (
            ProbeKind.RERUN_TEST,
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.QUERY_CI_STATUS,
            ProbeKind.VERIFY_ARTIFACT_HASH,
            ProbeKind.BOUNDED_REPLAY_EXPERIMENT,
            ProbeKind.HUMAN_REVIEW,
        ),
        # Whether sources are really independent is a provenance question.
        GapKind.INDEPENDENCE_UNVERIFIED: (
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.VERIFY_ARTIFACT_HASH,
            ProbeKind.HUMAN_REVIEW,
        ),
        # Old support needs a fresh look, or a check of what changed since.
        GapKind.STALE_SUPPORT: (
            ProbeKind.RERUN_TEST,
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.QUERY_CI_STATUS,
            ProbeKind.VERIFY_ARTIFACT_HASH,
            ProbeKind.HUMAN_REVIEW,
        ),
        # Claims existed but none survived review or supersession: look again.
        GapKind.NO_ACTIVE_CLAIMS: (
            ProbeKind.RERUN_TEST,
            ProbeKind.INSPECT_VCS_STATE,
            ProbeKind.QUERY_CI_STATUS,
            ProbeKind.HUMAN_REVIEW,
        ),
        # Nobody looked at all: every probe is a first look.
        GapKind.NO_EVIDENCE_AT_ALL: tuple(_AUTHORED),
    }
)

Catalogue = Mapping[ProbeKind, Probe]
"""The probes a planner plans with: the built-in ones, or those with an operator's file."""


def _with_gaps(probe: Probe) -> Probe:
    kinds = frozenset(g for g, probes in _RESOLUTION_GAP_PROBES.items() if probe.kind in probes)
    return replace(probe, gaps=kinds)


CATALOGUE: Catalogue = MappingProxyType({k: _with_gaps(p) for k, p in _AUTHORED.items()})
"""The built-in catalogue: each probe with the resolution gaps it can close."""

SIGNAL_GAP_KINDS: frozenset[GapKind] = frozenset(
    {GapKind.MISSING_SIGNAL, GapKind.UNOBSERVABLE_SIGNAL}
)


def primary_target(probe: Probe) -> SignalClass:
    """The class a probe observes when it answers a gap that names no class."""
    if probe.kind is ProbeKind.HUMAN_REVIEW:
        return SignalClass.HUMAN_JUDGEMENT
    return probe.targets[0]


def probes_for_class(
    signal_class: SignalClass, catalogue: Catalogue = CATALOGUE
) -> tuple[Probe, ...]:
    """The probes that observe ``signal_class``, in ProbeKind order (HUMAN_REVIEW last)."""
    return tuple(catalogue[k] for k in sorted(catalogue) if signal_class in catalogue[k].targets)


def probes_for_gap(
    kind: GapKind,
    signal_class: SignalClass = SignalClass.UNSPECIFIED,
    catalogue: Catalogue = CATALOGUE,
) -> tuple[tuple[Probe, SignalClass], ...]:
    """(probe, the class it would observe) for each probe that addresses the gap."""
    if kind in SIGNAL_GAP_KINDS:
        return tuple((p, signal_class) for p in probes_for_class(signal_class, catalogue))
    return tuple(
        (catalogue[k], primary_target(catalogue[k]))
        for k in sorted(catalogue)
        if kind in catalogue[k].gaps
    )


def action_risk(probe: Probe) -> ActionRisk:
    """The worst effect among a probe's side effects."""
    effects = set(probe.side_effects)
    if effects & {SideEffect.NETWORK_CALL, SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE}:
        return ActionRisk.EXTERNAL_EFFECTS
    if effects & {SideEffect.PROCESS_SPAWN, SideEffect.FILESYSTEM_WRITE_WORKTREE}:
        return ActionRisk.LOCAL_EFFECTS
    if effects:
        return ActionRisk.READ_ONLY
    return ActionRisk.NONE
