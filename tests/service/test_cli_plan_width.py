"""``assay plan`` at 80 columns, against a real resolver and planner: every shipped example
plan fits without a word broken across lines, and ``-o wide`` shows every dimension of each
candidate on one line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from assay.cli.main import main as cli
from assay.executor.stack import local_stack
from assay.runtime.logging import configure_logging

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "plan").glob("*.json"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def planner(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A real resolver and a real planner calling it; the planner's address."""
    configure_logging("error")
    async with local_stack(tmp_path_factory.mktemp("plan-width") / "a.db") as stack:
        yield stack.planner


async def plan(planner: str, example: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = await asyncio.to_thread(cli, ["plan", str(example), "--target", planner, *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def words_of(response: dict[str, object]) -> set[str]:
    """The words the table is made of: probe, signal, availability, grants, gaps, notes."""
    found: set[str] = set()
    document = json.loads(json.dumps(response))
    plan = document["plan"]
    for candidate in [*plan.get("candidates", []), *plan.get("unavailable", [])]:
        found.add(candidate["probe"].removeprefix("PROBE_KIND_").lower())
        found.add(candidate["targetSignalClass"].removeprefix("SIGNAL_CLASS_").lower())
        found.add(candidate["availability"].removeprefix("AVAILABILITY_").lower())
        for grant in candidate.get("missingGrants", []):
            found.add(grant.removeprefix("SIDE_EFFECT_CLASS_").lower())
        found.add(candidate["discriminationBasis"].removeprefix("DISCRIMINATION_BASIS_").lower())
    for gap in plan.get("gaps", []):
        found.add(gap["gapId"])
        for note in gap.get("notes", []):
            found.update(note.split())
    return found


@pytest.mark.asyncio(loop_scope="module")
class TestPlanAt80Columns:
    @pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
    async def test_fits_and_keeps_every_word_whole(
        self,
        planner: str,
        example: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """No line is wider than 80 columns, and every probe, signal, grant, gap id and
        note word of the plan appears whole on one line."""
        response = json.loads(await plan(planner, example, capsys, "-o", "json"))
        monkeypatch.setenv("COLUMNS", "80")
        lines = (await plan(planner, example, capsys)).splitlines()
        assert max(len(line) for line in lines) <= 80
        words = words_of(response)
        assert words or not response["plan"].get("candidates")
        for word in words:
            assert any(word in line for line in lines), word

    @pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
    async def test_wide_shows_every_dimension_one_line_per_candidate(
        self, planner: str, example: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``-o wide`` adds what each candidate would find, independence, recency, cost,
        risk and gaps, and each candidate's row is one line."""
        response = json.loads(await plan(planner, example, capsys, "-o", "json"))
        candidates = response["plan"].get("candidates", [])
        out = await plan(planner, example, capsys, "-o", "wide")
        if not candidates:
            assert "candidates" not in out
            return
        for header in ("if it finds", "independence", "recency", "cost / latency", "gaps"):
            assert header in out
        for rank, candidate in enumerate(candidates, start=1):
            probe = candidate["probe"].removeprefix("PROBE_KIND_").lower()
            rows = [line for line in out.splitlines() if f" {rank} " in line and probe in line]
            assert len(rows) == 1, (rank, probe)
            recency = candidate["recency"].removeprefix("RECENCY_").lower()
            assert recency in rows[0]


@pytest.mark.asyncio(loop_scope="module")
class TestProbesAt80Columns:
    async def test_the_catalogue_fits_with_every_name_whole(
        self, planner: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``assay probes`` at 80 columns shows each probe and side effect name whole;
        ``-o wide`` adds cost, latency, risk and privacy on each probe's one line."""
        code = await asyncio.to_thread(cli, ["probes", "--target", planner, "-o", "json"])
        probes = json.loads(capsys.readouterr().out)["probes"]
        assert code == 0
        assert probes
        monkeypatch.setenv("COLUMNS", "80")
        assert await asyncio.to_thread(cli, ["probes", "--target", planner]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert max(len(line) for line in lines) <= 80
        for probe in probes:
            names = [probe["kind"].removeprefix("PROBE_KIND_").lower()]
            names += [
                effect.removeprefix("SIDE_EFFECT_CLASS_").lower()
                for effect in probe.get("requiredSideEffects", [])
            ]
            for name in names:
                assert any(name in line for line in lines), name
        assert await asyncio.to_thread(cli, ["probes", "--target", planner, "-o", "wide"]) == 0
        wide = capsys.readouterr().out.splitlines()
        for probe in probes:
            kind = probe["kind"].removeprefix("PROBE_KIND_").lower()
            (row,) = [line for line in wide if f" {kind} " in line]
            assert probe["latency"].removeprefix("LATENCY_BAND_").lower() in row
