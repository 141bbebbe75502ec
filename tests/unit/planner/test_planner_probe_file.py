"""Operator probe definitions: accepted in place of the built-in kind, or refused by field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.services.planner.adapters.probe_file import ProbeFileError, load_probes, parse_probes
from assay.services.planner.domain.model import GapKind, ProbeKind, SideEffect

GOOD: dict[str, Any] = {
    "kind": "PROBE_KIND_RERUN_TEST",
    "targets": ["SIGNAL_CLASS_PROCESS_RESULT"],
    "side_effects": ["SIDE_EFFECT_CLASS_FILESYSTEM_WRITE_OUTSIDE_WORKTREE"],
    "gaps": ["GAP_KIND_UNRESOLVED_CONFLICT"],
    "expected_source": "test_result",
    "cost": "COST_BAND_LOW",
    "latency": "LATENCY_BAND_SECONDS",
    "privacy": "PRIVACY_EXPOSURE_LOCAL_ONLY",
}


class TestProbeFile:
    def test_a_definition_replaces_the_built_in_kind(self) -> None:
        """The entry's declarations become the RERUN_TEST probe; the others stay built in."""
        catalogue = parse_probes({"probe": [GOOD]}, "x.json")
        rerun = catalogue[ProbeKind.RERUN_TEST]
        assert rerun.side_effects == (SideEffect.FILESYSTEM_WRITE_OUTSIDE_WORKTREE,)
        assert rerun.gaps == frozenset({GapKind.UNRESOLVED_CONFLICT})
        assert rerun.origin == "x.json"
        assert catalogue[ProbeKind.HUMAN_REVIEW].origin == "builtin"

    def test_toml_is_read_too(self, tmp_path: Path) -> None:
        """A .toml file of [[probe]] tables."""
        path = tmp_path / "probes.toml"
        lines = ["[[probe]]"] + [f"{k} = {json.dumps(v)}" for k, v in GOOD.items()]
        path.write_text("\n".join(lines))
        assert load_probes(path)[ProbeKind.RERUN_TEST].origin == str(path)

    @pytest.mark.parametrize(
        ("change", "named"),
        [
            ({"kind": "PROBE_KIND_TELEPATHY"}, "probe[0].kind"),
            ({"kind": "PROBE_KIND_HUMAN_REVIEW"}, "probe[0].kind"),
            ({"cost": "cheap"}, "probe[0].cost"),
            ({"targets": ["SIGNAL_CLASS_HUMAN_JUDGEMENT"]}, "probe[0].targets"),
            ({"gaps": ["GAP_KIND_MISSING_SIGNAL"]}, "probe[0].gaps"),
            ({"needs_egress": True}, "probe[0].side_effects"),
            ({"colour": "red"}, "probe[0].colour"),
            ({"expected_source": ""}, "probe[0].expected_source"),
        ],
    )
    def test_a_bad_entry_is_refused_naming_entry_and_field(
        self, change: dict[str, Any], named: str
    ) -> None:
        """Every problem names the entry and the field."""
        with pytest.raises(ProbeFileError, match=named.replace("[", r"\[").replace("]", r"\]")):
            parse_probes({"probe": [GOOD | change]}, "x.json")

    def test_a_missing_field_and_a_duplicate_kind_are_refused(self) -> None:
        """Required fields and one definition per kind."""
        without = {k: v for k, v in GOOD.items() if k != "latency"}
        with pytest.raises(ProbeFileError, match=r"probe\[0\]\.latency: required"):
            parse_probes({"probe": [without]}, "x.json")
        with pytest.raises(ProbeFileError, match=r"probe\[1\]\.kind: .*already defined"):
            parse_probes({"probe": [GOOD, GOOD]}, "x.json")

    def test_unreadable_or_malformed_files(self, tmp_path: Path) -> None:
        """A missing file or bad JSON is one clear error naming the file."""
        with pytest.raises(ProbeFileError, match="cannot read"):
            load_probes(tmp_path / "absent.json")
        bad = tmp_path / "bad.json"
        bad.write_text("{")
        with pytest.raises(ProbeFileError, match="not valid JSON"):
            load_probes(bad)
