"""A proposed reliability table: what it may change, and its bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.errors import InvalidArgument
from assay.reliability_table import parse_table
from assay.services.adjudication.domain.calibration import (
    CalibrationOptions,
    LabelOrigin,
    Observation,
    calibrate,
)
from assay.services.adjudication.domain.calibration_proposal import (
    PROPOSAL_CEILING,
    Checkpoint,
    EntryReason,
    Proposal,
    propose,
    render_proposal,
)
from assay.services.adjudication.domain.model import Provenance
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY, load_policy
from tests.unit.adjudication.test_calibration import CONFLICT, SYNTHETIC, trials

CHECKPOINT = Checkpoint(tree_size=4096, root_hash="9f" * 32)
TABLE = {"api_spec": 0.8, "documentation": 0.6, "human_review": 1.0, "llm_inference": 0.4}


def proposal_of(seen: list[Observation], table: dict[str, float] = TABLE) -> Proposal:
    return propose(calibrate(seen, table), CHECKPOINT)


def entry_reasons(proposal: Proposal) -> dict[str, EntryReason]:
    return {e.source: e.reason for e in proposal.entries}


class TestWhatChanges:
    def test_a_contradicted_entry_takes_the_posterior_mean(self) -> None:
        """api_spec declared 0.8, right 50 times in 100: proposed (1 + 50) / (2 + 100)."""
        proposal = proposal_of(trials("api_spec", 50, 50))
        assert proposal.table["api_spec"] == round(51 / 102, 4)
        assert entry_reasons(proposal)["api_spec"] is EntryReason.CALIBRATED
        assert proposal.changed == ("api_spec",)

    def test_an_entry_the_data_agrees_with_is_kept(self) -> None:
        """Right 79 times in 100 does not contradict 0.8: the declared value stays."""
        proposal = proposal_of(trials("api_spec", 79, 21))
        assert proposal.table["api_spec"] == 0.8
        assert entry_reasons(proposal)["api_spec"] is EntryReason.CONSISTENT

    def test_too_little_data_keeps_the_declared_value(self) -> None:
        """Nine claims, all wrong, are not enough to move anything."""
        proposal = proposal_of(trials("documentation", 0, 9))
        assert proposal.table["documentation"] == 0.6
        assert entry_reasons(proposal)["documentation"] is EntryReason.INSUFFICIENT

    def test_conflicts_alone_never_move_an_entry(self) -> None:
        """A hundred conflict-raised claims, right a fifth of the time, are biased: kept."""
        proposal = proposal_of(trials("api_spec", 20, 80, origin=CONFLICT))
        assert proposal.table["api_spec"] == 0.8
        assert entry_reasons(proposal)["api_spec"] is EntryReason.INSUFFICIENT

    def test_human_review_is_never_changed(self) -> None:
        """The gold labels' own source kind is not measured against itself."""
        proposal = proposal_of(trials("human_review", 10, 90))
        assert proposal.table["human_review"] == 1.0
        assert entry_reasons(proposal)["human_review"] is EntryReason.FIXED

    def test_no_source_is_proposed_above_the_ceiling(self) -> None:
        """Fifty thousand matches in a row still propose at most the ceiling, never 1."""
        proposal = proposal_of(trials("llm_inference", 50_000, 0))
        assert proposal.table["llm_inference"] == PROPOSAL_CEILING

    def test_the_table_holds_every_declared_kind(self) -> None:
        """The file is a whole table, loadable on its own."""
        assert set(proposal_of([]).table) == set(TABLE)

    def test_a_negative_tree_size_is_refused(self) -> None:
        with pytest.raises(InvalidArgument, match=r"checkpoint\.tree_size"):
            propose(calibrate([], TABLE), Checkpoint(-1))


def mixed_world(seed: int) -> list[Observation]:
    """Spot-checks at two rates, conflicts and a few synthetic labels, over several kinds."""
    rng = random.Random(seed)
    seen: list[Observation] = []
    for label in range(600):
        origin = LabelOrigin.CONFLICT if label % 5 == 0 else LabelOrigin.SPOT_CHECK
        rate = 1.0 if origin is LabelOrigin.CONFLICT else (0.05 if label % 2 else 0.3)
        provenance = SYNTHETIC if label % 50 == 7 else Provenance.HUMAN_ADJUDICATED
        for source in rng.sample(sorted(TABLE), 2):
            matched = rng.random() < {"api_spec": 0.55, "llm_inference": 0.7}.get(source, 0.9)
            seen.append(Observation(f"case-{label}", source, matched, provenance, origin, rate))
    return seen


class TestBytes:
    def test_the_same_inputs_render_the_same_bytes(self) -> None:
        """Recomputed from the same labels and checkpoint, in any order: byte-identical."""
        seen = mixed_world(3)
        first = render_proposal(proposal_of(seen))
        shuffled = list(seen)
        random.Random(9).shuffle(shuffled)
        assert render_proposal(proposal_of(shuffled)) == first
        assert render_proposal(proposal_of(list(seen))) == first

    def test_different_evidence_renders_different_bytes(self) -> None:
        """The bytes depend on the evidence and on the checkpoint."""
        seen = mixed_world(3)
        base = render_proposal(proposal_of(seen))
        assert render_proposal(proposal_of(mixed_world(4))) != base
        moved = propose(calibrate(seen, TABLE), Checkpoint(4097, CHECKPOINT.root_hash))
        assert render_proposal(moved) != base

    def test_canonical_form(self) -> None:
        """Sorted keys, no whitespace, one trailing newline, ASCII only."""
        rendered = render_proposal(proposal_of(mixed_world(3)))
        decoded = json.loads(rendered)
        assert (
            rendered == (json.dumps(decoded, sort_keys=True, separators=(",", ":")) + "\n").encode()
        )
        assert list(decoded) == ["calibration", "sources"]

    def test_the_resolver_loads_the_file_as_its_table(self, tmp_path: Path) -> None:
        """``--reliability-table`` reads exactly the proposed values, evidence ignored."""
        proposal = proposal_of(mixed_world(3))
        assert proposal.changed  # the world is miscalibrated enough to change something
        path = tmp_path / "proposal.json"
        path.write_bytes(render_proposal(proposal))
        assert dict(load_policy(str(path)).reliability) == proposal.table
        assert parse_table(json.loads(path.read_bytes()), "p") == proposal.table

    def test_each_entry_carries_its_evidence(self) -> None:
        """Count, labels, interval, reason and the checkpoint it was computed at."""
        decoded = json.loads(render_proposal(proposal_of(mixed_world(3))))
        calibration = decoded["calibration"]
        assert calibration["checkpoint"] == {"tree_size": 4096, "root_hash": "9f" * 32}
        assert calibration["prior"] == "Beta(1, 1)"
        assert calibration["synthetic"] is False
        assert calibration["labels"]["synthetic_left_out"] == 12
        entry = calibration["entries"]["api_spec"]
        assert entry["reason"] == "CALIBRATED"
        spot = entry["spot_check"]
        assert spot["low"] <= entry["proposed"] <= spot["high"]
        assert spot["count"] >= spot["labels"] > 0
        assert entry["conflict_only"]["status"] == "ESTIMATED"

    def test_a_synthetic_proposal_says_so_everywhere(self) -> None:
        """Synthetic labels asked for: the file and every figure in it are marked."""
        report = calibrate(mixed_world(3), TABLE, CalibrationOptions(include_synthetic=True))
        decoded = json.loads(render_proposal(propose(report, CHECKPOINT)))
        assert decoded["calibration"]["synthetic"] is True
        figures = [
            figure
            for entry in decoded["calibration"]["entries"].values()
            for figure in (entry["spot_check"], entry["conflict_only"])
        ]
        assert all(f["synthetic"] for f in figures)

    def test_a_declared_value_is_written_exactly(self) -> None:
        """Kept values are not rounded: 0.123456789 stays 0.123456789."""
        table = {**TABLE, "documentation": 0.123456789}
        decoded = json.loads(render_proposal(proposal_of([], table)))
        assert decoded["sources"]["documentation"] == 0.123456789

    def test_the_builtin_table_round_trips(self) -> None:
        """With no evidence the proposal is the builtin table itself."""
        proposal = proposal_of([], dict(DEFAULT_RELIABILITY))
        assert json.loads(render_proposal(proposal))["sources"] == dict(DEFAULT_RELIABILITY)
