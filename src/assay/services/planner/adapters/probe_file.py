"""Operator probe definitions (``assay serve planner --probes FILE``): read and check at start.

The file is TOML (``[[probe]]`` tables) or JSON (``{"probe": [...]}``), chosen by its
suffix. Each entry defines one of the closed ``PROBE_KIND_*`` kinds as this site runs it and
replaces the built-in definition of that kind (candidate ids are ``<probe>/<signal class>``,
so one definition per kind keeps them unique). Its fields are ``REQUIRED`` and ``OPTIONAL``
below, described in docs/planner.md ("Operator probe definitions").

HUMAN_REVIEW cannot be redefined: it is the candidate every gap can reach, because it needs
no side effect. A definition that declares FILESYSTEM_WRITE_OUTSIDE_WORKTREE is accepted,
and every candidate of it is FORBIDDEN. Every problem is reported at once, each naming the
entry and the field; ``ProbeFileError`` is a ``ValueError``, which the ``serve`` command
turns into one line and exit code 2 before anything listens.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from enum import IntEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from assay.runtime.config import ConfigurationError
from assay.services.planner.domain.model import (
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
from assay.services.planner.domain.probes import CATALOGUE, SIGNAL_GAP_KINDS, Catalogue

E = TypeVar("E", bound=IntEnum)

# The contract's prefix of each enum's names.
_PREFIX: Mapping[type[IntEnum], str] = {
    ProbeKind: "PROBE_KIND_",
    SignalClass: "SIGNAL_CLASS_",
    SideEffect: "SIDE_EFFECT_CLASS_",
    GapKind: "GAP_KIND_",
    CostBand: "COST_BAND_",
    LatencyBand: "LATENCY_BAND_",
    PrivacyExposure: "PRIVACY_EXPOSURE_",
    Recency: "RECENCY_",
}
REQUIRED: tuple[str, ...] = (
    "kind",
    "targets",
    "side_effects",
    "gaps",
    "expected_source",
    "cost",
    "latency",
    "privacy",
)
OPTIONAL = ("recency", "needs_egress", "needs_cloud_sync", "description")
# Classes only a person observes: an automated probe cannot target them.
_NOT_AUTOMATABLE = frozenset({SignalClass.HUMAN_JUDGEMENT})


class ProbeFileError(ConfigurationError):
    """The probe file cannot be used; the message names the file, each entry and field."""


class _Entry:
    """Reads one entry, collecting every problem with its ``probe[i].field`` path."""

    def __init__(self, index: int, raw: Mapping[str, Any], problems: list[str]) -> None:
        self.raw, self.path, self.problems = raw, f"probe[{index}]", problems

    def fail(self, name: str, why: str) -> None:
        self.problems.append(f"{self.path}.{name}: {why}")

    def enum(self, enum: type[E], name: str, value: Any) -> E | None:
        prefix = _PREFIX[enum]
        allowed = ", ".join(prefix + m.name for m in enum if m.value)
        if not isinstance(value, str) or not value.startswith(prefix):
            self.fail(name, f"expected one of {allowed}; got {value!r}")
            return None
        member = enum.__members__.get(value[len(prefix) :])
        if member is None or member.value == 0:
            self.fail(name, f"unknown value {value!r}; expected one of {allowed}")
            return None
        return member

    def one(self, enum: type[E], name: str) -> E | None:
        return self.enum(enum, name, self.raw.get(name))

    def many(self, enum: type[E], name: str) -> tuple[E, ...]:
        value = self.raw.get(name)
        if not isinstance(value, list):
            self.fail(name, f"expected a list of {_PREFIX[enum]}* names; got {value!r}")
            return ()
        found = [self.enum(enum, f"{name}[{i}]", v) for i, v in enumerate(value)]
        members = [m for m in found if m is not None]
        if len(set(members)) != len(members):
            self.fail(name, "lists a value more than once")
        return tuple(sorted(set(members)))

    def flag(self, name: str) -> bool:
        value = self.raw.get(name, False)
        if not isinstance(value, bool):
            self.fail(name, f"expected true or false; got {value!r}")
            return False
        return value

    def text(self, name: str, required: bool) -> str:
        value = self.raw.get(name, "")
        if not isinstance(value, str) or (required and not value.strip()):
            self.fail(name, "expected a non-empty string" if required else "expected a string")
            return ""
        return value


def _probe(entry: _Entry, origin: str) -> Probe | None:
    raw = entry.raw
    for name in sorted(set(raw) - set(REQUIRED) - set(OPTIONAL)):
        entry.fail(name, f"unknown field; fields are {', '.join(REQUIRED + OPTIONAL)}")
    for name in REQUIRED:
        if name not in raw:
            entry.fail(name, "required")
    kind = entry.one(ProbeKind, "kind") if "kind" in raw else None
    if kind is ProbeKind.HUMAN_REVIEW:
        entry.fail("kind", "HUMAN_REVIEW cannot be redefined: it is every gap's reachable probe")
    targets = entry.many(SignalClass, "targets") if "targets" in raw else ()
    if "targets" in raw and not targets:
        entry.fail("targets", "at least one signal class is required")
    for cls in set(targets) & _NOT_AUTOMATABLE:
        entry.fail("targets", f"{_PREFIX[SignalClass]}{cls.name} is observed by HUMAN_REVIEW only")
    effects = entry.many(SideEffect, "side_effects") if "side_effects" in raw else ()
    gaps = entry.many(GapKind, "gaps") if "gaps" in raw else ()
    for gap in set(gaps) & SIGNAL_GAP_KINDS:
        entry.fail("gaps", f"{_PREFIX[GapKind]}{gap.name} follows from `targets`, not `gaps`")
    source = entry.text("expected_source", required=True) if "expected_source" in raw else ""
    cost = entry.one(CostBand, "cost") if "cost" in raw else None
    latency = entry.one(LatencyBand, "latency") if "latency" in raw else None
    privacy = entry.one(PrivacyExposure, "privacy") if "privacy" in raw else None
    recency = entry.one(Recency, "recency") if "recency" in raw else Recency.FRESH_OBSERVATION
    egress, cloud = entry.flag("needs_egress"), entry.flag("needs_cloud_sync")
    if (egress or cloud) and SideEffect.NETWORK_CALL not in effects:
        entry.fail("side_effects", "needs_egress / needs_cloud_sync require NETWORK_CALL")
    description = entry.text("description", required=False)
    if (
        kind is None
        or cost is None
        or latency is None
        or privacy is None
        or recency is None
        or kind is ProbeKind.HUMAN_REVIEW
        or not targets
        or not source
    ):
        return None
    # Grouped: what it observes and closes, what it touches, where its answer comes from,
    # what it costs, and what it is called.
    return Probe(
        kind=kind, targets=targets, gaps=frozenset(gaps),
        side_effects=effects, needs_egress=egress, needs_cloud_sync=cloud,
        expected_source=source, observes_via_runtime=True,
        cost=cost, latency=latency, privacy=privacy, recency=recency,
        description=description or f"{kind.name} as defined in {origin}", origin=origin,
    )  # fmt: skip


def parse_probes(data: Any, origin: str, base: Catalogue = CATALOGUE) -> Catalogue:
    """``base`` with the definitions in ``data`` (the decoded file) in place of its own."""
    entries = data.get("probe") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ProbeFileError(f'{origin}: expected a non-empty list "probe" of probe definitions')
    problems: list[str] = []
    defined: dict[ProbeKind, int] = {}
    catalogue = dict(base)
    for i, raw in enumerate(entries):
        if not isinstance(raw, dict):
            problems.append(f"probe[{i}]: expected a table / object, got {raw!r}")
            continue
        probe = _probe(_Entry(i, raw, problems), origin)
        if probe is None:
            continue
        if probe.kind in defined:
            problems.append(
                f"probe[{i}].kind: PROBE_KIND_{probe.kind.name} is already defined by "
                f"probe[{defined[probe.kind]}]"
            )
            continue
        defined[probe.kind] = i
        catalogue[probe.kind] = replace(probe)
    if problems:
        raise ProbeFileError(f"{origin}: " + "; ".join(problems))
    return MappingProxyType(catalogue)


def load_probes(path: str | Path) -> Catalogue:
    """The built-in catalogue with the definitions of the file at ``path``."""
    origin = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ProbeFileError(f"{origin}: cannot read the probe file: {error}") from None
    try:
        data = tomllib.loads(text) if origin.endswith(".toml") else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise ProbeFileError(f"{origin}: not valid {_format(origin)}: {error}") from None
    return parse_probes(data, origin)


def _format(origin: str) -> str:
    return "TOML" if origin.endswith(".toml") else "JSON"
