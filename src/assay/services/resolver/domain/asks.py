"""What each resolver RPC asks and answers, as domain values.

``wire.asks`` reads a request once into an ask (claims as intakes, the staleness horizon
and every claim's observe time as seconds since the epoch), collecting every violation
on the way; the use cases (``use_cases.resolve``) take an ask and return resolutions;
``wire.answers`` writes them into the response. Nothing here points back at a message.

``full`` is the detail the caller asked for (False: RESOLUTION_DETAIL_SUMMARY). The
resolution is the same either way; only how much of it is written changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from assay.services.resolver.domain.model import Intake, Resolution, SemKey, Staleness
from assay.services.resolver.domain.validation import Violation


@dataclass(frozen=True, slots=True)
class SemanticAsk:
    """ResolveSemantic: one semantic over the evidence."""

    sem: SemKey
    base: Intake
    staleness: Staleness | None
    full: bool


@dataclass(frozen=True, slots=True)
class EvidenceAsk:
    """ResolveEvidence: every semantic of the evidence."""

    base: Intake
    staleness: Staleness | None
    full: bool


@dataclass(frozen=True, slots=True)
class EvidenceAnswer:
    """ResolveEvidence's answer: one resolution per semantic, sorted, and what they add up to."""

    resolutions: list[Resolution]
    conflicted_safety: list[SemKey]
    coverage: float


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """Claims added to the base evidence, under the caller's label."""

    label: str
    claims: Intake


@dataclass(frozen=True, slots=True)
class HypothesesAsk:
    """ResolveHypotheses: one semantic over the base, then over the base plus each hypothesis.

    ``base_full`` is the detail of the base's resolution alone (a caller that echoes the
    base asks FULL for it and SUMMARY for the rest)."""

    sem: SemKey
    base: Intake
    hypotheses: tuple[Hypothesis, ...]
    staleness: Staleness | None
    full: bool
    base_full: bool


@dataclass(frozen=True, slots=True)
class HypothesesAnswer:
    """The base's resolution, then each hypothesis's (label, resolution) as it is resolved:
    lazily, so a response that outgrows its budget stops the work where it passes it."""

    base: Resolution
    hypotheses: Iterator[tuple[str, Resolution]]


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposed claim (``claims`` holds it alone) and the semantic it is about."""

    claim_ref: str
    sem: SemKey
    claims: Intake


@dataclass(frozen=True, slots=True)
class ReconcileAsk:
    """Reconcile: each proposal judged against the evidence."""

    base: Intake
    proposals: tuple[Proposal, ...]


@dataclass(frozen=True, slots=True)
class ColumnsAsk:
    """ResolveColumns apart from its stream: the horizon (``as_of - stale_after``, seconds
    since the epoch) when staleness is asked for, and the violations found in the other
    fields, reported with the stream's."""

    horizon: float | None
    full: bool
    problems: list[Violation]
