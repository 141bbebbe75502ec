"""The resolver's policy: one reliability table, the conflict margin, the safety predicates.

Every computation reads the same ``Policy`` object, and ``GetResolverPolicy`` serves it, so
what a client sees is what fusion used (rule 1). The table can be replaced by a JSON file
``{"sources": {"kind": reliability, ...}}``; a bad file is an error that names the file and
the offending entry, never a half-loaded table. A policy's ``digest`` names its table by
content alone (``table_digest``), so a resolution can say which table it was computed with.
The default reliabilities (``DEFAULT_RELIABILITY``) follow the trust class, not the
artifact, one line of reasoning each.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from assay.reliability_table import read_table, table_digest

# Default reliabilities, one line of reasoning each (the trust class, not the artifact, decides):
# - human_review 1.0: an adjudicated human decision is the gold standard.
# - artifact_hash 0.95: a content hash either matches or it does not.
# - vcs_state 0.9: the repository is the record of what the code is.
# - runtime_trace 0.9: observed behaviour, though only of the paths exercised.
# - test_result 0.85 / ci_status 0.85: executed checks; flaky at the margins.
# - api_spec 0.8: authored intent, may drift from the implementation.
# - replay_experiment 0.8: a bounded replay; faithful only to what it replays.
# - static_analysis 0.7: sound-ish inference over code, blind to runtime config.
# - documentation 0.6: prose drifts.
# - llm_inference 0.4: plausible, unverified.
# - generated_mock 0.3: fabricated to look real; never enough on its own.
DEFAULT_RELIABILITY: Mapping[str, float] = MappingProxyType(
    {
        "human_review": 1.0,
        "artifact_hash": 0.95,
        "vcs_state": 0.9,
        "runtime_trace": 0.9,
        "test_result": 0.85,
        "ci_status": 0.85,
        "api_spec": 0.8,
        "replay_experiment": 0.8,
        "static_analysis": 0.7,
        "documentation": 0.6,
        "llm_inference": 0.4,
        "generated_mock": 0.3,
    }
)

# A competing value within this much support of the leader makes the semantic
# CONFLICTED: a bare number would hide that two sources disagree.
CONFLICT_MARGIN = 0.2
# Noisy-OR arithmetic is not exact; without a tolerance a gap that is 0.2 on
# paper (0.7 - 0.5) could land either side of the margin.
MARGIN_TOLERANCE = 1e-9
# Below this reliability a source is "discounted" (RATIONALE_FLAG_ALL_SUPPORT_DISCOUNTED).
DISCOUNTED_BELOW = 0.5

SAFETY_SENSITIVE_PREDICATES: frozenset[str] = frozenset(
    {
        "idempotency.mode",
        "effect.stateImpact",
        "auth.principal",
        "confirmation.required",
        "retries.mode",
    }
)

BUILTIN_ORIGIN = "builtin"
TABLE_ENV = "ASSAY_RELIABILITY_TABLE"


@dataclass(frozen=True)
class Policy:
    """Everything fusion is parameterised by; one instance per table a service loads.
    ``digest`` names the table (``table_digest``); it is derived, never passed."""

    reliability: Mapping[str, float] = field(default_factory=lambda: DEFAULT_RELIABILITY)
    origin: str = BUILTIN_ORIGIN
    conflict_margin: float = CONFLICT_MARGIN
    margin_tolerance: float = MARGIN_TOLERANCE
    safety_sensitive: frozenset[str] = SAFETY_SENSITIVE_PREDICATES
    digest: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # Computed once here, never per request: every resolution carries it.
        object.__setattr__(self, "digest", table_digest(self.reliability))

    def sorted_table(self) -> list[tuple[str, float]]:
        """The table ordered by source kind, as served."""
        return sorted(self.reliability.items())


DEFAULT_POLICY = Policy()


def chosen_table(path: str | None) -> str | None:
    """The table file to use: ``path``, else ``$ASSAY_RELIABILITY_TABLE``; None for builtin."""
    return path if path is not None else (os.environ.get(TABLE_ENV) or None)


def load_policy(path: str | None) -> Policy:
    """The policy with the table from ``path`` (or ``$ASSAY_RELIABILITY_TABLE``), else builtin."""
    chosen = chosen_table(path)
    return DEFAULT_POLICY if chosen is None else read_policy(chosen)


def read_policy(path: str) -> Policy:
    """The policy with the table of the file at ``path``; TableError naming file and entry."""
    return Policy(reliability=MappingProxyType(read_table(path)), origin=path)
