"""The resolver's policy: one reliability table, the conflict margin, the safety predicates.

Every computation reads the same ``Policy`` object, and ``GetResolverPolicy``
serves it, so what a client sees is what fusion used (rule 1). The table can
be replaced by a JSON file ``{"sources": {"kind": reliability, ...}}``; a bad
file is an error that names the file and the offending entry, never a
half-loaded table. A policy's ``digest`` names its table by content alone
(``table_digest``), so a resolution can say which table it was computed with.

Default reliabilities, one line of reasoning each (the trust class, not the
artifact, decides):

- ``human_review`` 1.0: an adjudicated human decision is the gold standard.
- ``artifact_hash`` 0.95: a content hash either matches or it does not.
- ``vcs_state`` 0.9: the repository is the record of what the code is.
- ``runtime_trace`` 0.9: observed behaviour, though only of the paths exercised.
- ``test_result`` 0.85 / ``ci_status`` 0.85: executed checks; flaky at the margins.
- ``api_spec`` 0.8: authored intent, may drift from the implementation.
- ``replay_experiment`` 0.8: a bounded replay; faithful only to what it replays.
- ``static_analysis`` 0.7: sound-ish inference over code, blind to runtime config.
- ``documentation`` 0.6: prose drifts.
- ``llm_inference`` 0.4: plausible, unverified.
- ``generated_mock`` 0.3: fabricated to look real; never enough on its own.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

# The project's one RFC 8785 (JCS) form: the digest of a table is reproducible with any
# JCS library and SHA-256 tool.
from assay.services.adjudication.domain.digests import jcs_digest

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


class PolicyError(ValueError):
    """A replacement reliability table could not be loaded; the message names file and entry."""


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


def table_digest(reliability: Mapping[str, float]) -> str:
    """``sha256:`` + hex SHA-256 of the RFC 8785 form of ``{"sources": reliability}``: the
    table's content alone, so a file's spelling (``1`` or ``1.0``, key order, spaces) and
    its other members (a proposal's ``calibration`` evidence) leave it unchanged."""
    return jcs_digest({"sources": dict(reliability)})


DEFAULT_POLICY = Policy()


def parse_table(data: object, origin: str) -> dict[str, float]:
    """Validate a decoded config document; every problem names ``origin`` and the entry."""
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict):
        raise PolicyError(f'{origin}: expected an object {{"sources": {{"kind": reliability}}}}')
    sources: dict[str, object] = data["sources"]
    if not sources:
        raise PolicyError(f"{origin}: sources: the table is empty")
    table: dict[str, float] = {}
    for name, raw in sources.items():
        if not name.strip():
            raise PolicyError(f"{origin}: sources: a source kind name is empty")
        # bool is an int subclass: reject it explicitly, "true" is not a reliability.
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise PolicyError(f"{origin}: sources.{name}: {raw!r} is not a number")
        value = float(raw)
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise PolicyError(f"{origin}: sources.{name}: {raw!r} is not a number in [0, 1]")
        table[name] = value
    return table


def chosen_table(path: str | None) -> str | None:
    """The table file to use: ``path``, else ``$ASSAY_RELIABILITY_TABLE``; None for builtin."""
    return path if path is not None else (os.environ.get(TABLE_ENV) or None)


def load_policy(path: str | None) -> Policy:
    """The policy with the table from ``path`` (or ``$ASSAY_RELIABILITY_TABLE``), else builtin."""
    chosen = chosen_table(path)
    return DEFAULT_POLICY if chosen is None else read_policy(chosen)


def read_policy(path: str) -> Policy:
    """The policy with the table of the file at ``path``; PolicyError naming file and entry."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise PolicyError(f"{path}: cannot read the reliability table: {reason}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, PolicyError, RecursionError) as error:
        raise PolicyError(f"{path}: not valid JSON: {error}") from None
    return Policy(reliability=MappingProxyType(parse_table(data, path)), origin=path)


def _reject_constant(name: str) -> float:
    raise PolicyError(f"{name} is not allowed")
