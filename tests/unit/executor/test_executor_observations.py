"""The observations file: the executor's lines, its lock and cap, and the planner's reading
of them (every bad line named and skipped)."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assay.executor import observations
from assay.executor.model import Acquisition, Outcome
from assay.services.planner.adapters.observation_file import (
    MAX_LINE_BYTES,
    ObservationFile,
    ObservationFileError,
    read_files,
    rotated,
)
from assay.services.planner.domain.model import Discrimination, LatencyBand, ProbeKind

DECLARED: dict[ProbeKind, LatencyBand] = {
    kind: LatencyBand.SECONDS for kind in ProbeKind if kind is not ProbeKind.UNSPECIFIED
}
BEFORE = observations.Decision("CONFLICTED", '"a"')


def acquisition(outcome: Outcome = Outcome.OBSERVED, latency: float = 0.25) -> Acquisition:
    return Acquisition(
        probe="VERIFY_ARTIFACT_HASH",
        candidate_id="verify_artifact_hash/tool_result_payload",
        outcome=outcome,
        detail="sha256 of /secret/path matches",
        latency_seconds=latency,
        declared_latency="SECONDS",
        claim_ids=("exec:verify_artifact_hash:abcd:1",),
    )


class TestLines:
    def test_a_line_holds_kinds_bands_and_timings_only(self) -> None:
        """No detail, path, claim id or value: the decision is reduced to changed or not."""
        after = observations.Decision("RESOLVED", '"b"')
        now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        line = observations.record(acquisition(), "HIGH", BEFORE, after, now)
        assert json.loads(line) == {
            "v": 1,
            "time": "2026-01-02T03:04:05.000000+00:00",
            "probe": "VERIFY_ARTIFACT_HASH",
            "outcome": "OBSERVED",
            "latencySeconds": 0.25,
            "declaredLatency": "SECONDS",
            "predicted": "HIGH",
            "statusBefore": "CONFLICTED",
            "statusAfter": "RESOLVED",
            "decisionChanged": True,
        }
        assert "secret" not in line
        assert "exec:" not in line
        assert '\\"b\\"' not in line

    @pytest.mark.parametrize(
        ("after", "changed"),
        [
            (observations.Decision("CONFLICTED", '"a"'), False),
            (observations.Decision("RESOLVED", '"a"'), True),  # status only
            (observations.Decision("CONFLICTED", '"b"'), True),  # leader only
            (None, None),
        ],
    )
    def test_the_decision_changed_when_status_or_leader_did(
        self, after: observations.Decision | None, changed: bool | None
    ) -> None:
        """Changed is status or leader differing; unknown without a decision after."""
        line = observations.record(acquisition(), "HIGH", BEFORE, after)
        assert json.loads(line)["decisionChanged"] is changed


class TestAppending:
    def test_created_owner_only_and_appended_whole(self, tmp_path: Path) -> None:
        """A missing file is created 0600; each line lands whole, in order."""
        path = tmp_path / "obs.jsonl"
        observations.check(path)
        assert os.stat(path).st_mode & 0o777 == 0o600
        for latency in (1.0, 2.0):
            observations.append(path, observations.record(acquisition(latency=latency)))
        lines = path.read_text().splitlines()
        assert [json.loads(line)["latencySeconds"] for line in lines] == [1.0, 2.0]

    def test_a_file_others_may_write_is_refused(self, tmp_path: Path) -> None:
        """Group-writable: anyone in the group could write the planner's figures."""
        path = tmp_path / "obs.jsonl"
        path.write_text("")
        path.chmod(0o620)
        with pytest.raises(ValueError, match="chmod 600"):
            observations.check(path)

    def test_past_the_cap_the_file_rotates_and_the_planner_reads_both(self, tmp_path: Path) -> None:
        """A line that would not fit renames the file to FILE.1 first; nothing is lost to
        the reader, which reads FILE.1 then FILE."""
        path = tmp_path / "obs.jsonl"
        line = observations.record(acquisition())
        cap = (len(line) + 1) * 3
        for _ in range(5):
            observations.append(path, line, max_bytes=cap)
        assert len(rotated(path).read_text().splitlines()) == 3
        assert len(path.read_text().splitlines()) == 2
        assert len(read_files(path, DECLARED).observations) == 5
        for _ in range(4):  # the second rotation replaces the older FILE.1
            observations.append(path, line, max_bytes=cap)
        assert len(read_files(path, DECLARED).observations) == 3 + 3


class TestReading:
    def write(self, path: Path, *lines: str | bytes) -> None:
        with path.open("wb") as sink:
            for line in lines:
                sink.write((line.encode() if isinstance(line, str) else line) + b"\n")

    def test_bad_lines_are_named_and_skipped(self, tmp_path: Path) -> None:
        """Malformed, oversize, an unknown probe kind or outcome, a wrong field type: each
        named with file, line and why; the good lines still count."""
        path = tmp_path / "obs.jsonl"
        good = observations.record(acquisition(), "HIGH", BEFORE, BEFORE)
        data = json.loads(good)
        self.write(
            path,
            good,
            "{not json",
            json.dumps({**data, "pad": "x" * MAX_LINE_BYTES}),
            json.dumps({**data, "probe": "TELEPATHY"}),
            json.dumps({**data, "outcome": "MAYBE"}),
            json.dumps({**data, "latencySeconds": True}),
            json.dumps({**data, "latencySeconds": -1}),
            json.dumps({**data, "predicted": "CERTAIN"}),
            json.dumps({**data, "v": 2}),
            "[1, 2]",
            "",
            good,
        )
        read = read_files(path, DECLARED)
        assert len(read.observations) == 2
        assert read.observations[0].predicted is Discrimination.HIGH
        assert read.observations[0].changed is False
        assert list(read.problems) == [
            f"{path}:2: not JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
            f"{path}:3: longer than {MAX_LINE_BYTES} bytes",
            f"{path}:4: probe: unknown probe kind 'TELEPATHY'",
            f"{path}:5: outcome: unknown outcome 'MAYBE'",
            f"{path}:6: latencySeconds: expected a number, got True",
            f"{path}:7: latencySeconds: expected a finite number >= 0, got -1.0",
            f"{path}:8: predicted: unknown discrimination 'CERTAIN'",
            f"{path}:9: v: expected 1, got 2",
            f"{path}:10: not a JSON object",
        ]

    def test_a_kind_the_catalogue_lacks_is_unknown(self, tmp_path: Path) -> None:
        """A kind name the contract has but this planner's catalogue does not: skipped."""
        path = tmp_path / "obs.jsonl"
        self.write(path, observations.record(acquisition()))
        read = read_files(path, {ProbeKind.RERUN_TEST: LatencyBand.MINUTES})
        assert read.observations == ()
        assert read.problems == (f"{path}:1: probe: unknown probe kind 'VERIFY_ARTIFACT_HASH'",)

    def test_a_line_still_being_written_waits(self, tmp_path: Path) -> None:
        """The last bytes without their newline are not a problem yet, nor an observation."""
        path = tmp_path / "obs.jsonl"
        line = observations.record(acquisition())
        path.write_text(line + "\n" + line[:20])
        read = read_files(path, DECLARED)
        assert (len(read.observations), read.problems) == (1, ())

    def test_the_planner_refuses_a_file_others_may_write(self, tmp_path: Path) -> None:
        """At start, like a bad probe file: a configuration error naming the mode."""
        path = tmp_path / "obs.jsonl"
        path.write_text("")
        path.chmod(0o646)
        with pytest.raises(ObservationFileError, match="mode 0646"):
            ObservationFile(path, DECLARED)


class TestSharedAndLong:
    def test_executors_appending_at_once_never_interleave(self, tmp_path: Path) -> None:
        """Eight writers, rotating every few lines: every line of both files is whole, and
        neither file ever passes the cap."""
        path = tmp_path / "obs.jsonl"
        line = observations.record(acquisition())
        cap = (len(line) + 1) * 7

        def write() -> None:
            for _ in range(25):
                observations.append(path, line, max_bytes=cap)

        with ThreadPoolExecutor(max_workers=8) as pool:
            for future in [pool.submit(write) for _ in range(8)]:
                future.result()
        for part in (path, rotated(path)):
            assert part.stat().st_size <= cap
            assert all(text == line for text in part.read_text().splitlines())
        read = read_files(path, DECLARED)
        assert read.problems == ()
        assert len(read.observations) >= 8  # at least the fresh file plus some of FILE.1

    def test_a_long_file_is_read_from_its_tail(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Past MAX_READ_BYTES only the tail is read, from the first whole line."""
        from assay.services.planner.adapters import observation_file

        path = tmp_path / "obs.jsonl"
        line = observations.record(acquisition())
        path.write_text((line + "\n") * 10)
        monkeypatch.setattr(observation_file, "MAX_READ_BYTES", (len(line) + 1) * 3 + 5)
        read = read_files(path, DECLARED)
        assert (len(read.observations), read.problems) == (3, ())

    async def test_a_file_turned_writable_by_others_is_not_re_read(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After start, a chmod that lets others write keeps the figures the planner had."""
        from assay.services.planner.adapters import observation_file

        monkeypatch.setattr(observation_file, "CHECK_SECONDS", 0.0)
        path = tmp_path / "obs.jsonl"
        observations.check(path)
        observations.append(path, observations.record(acquisition()))
        watched = ObservationFile(path, DECLARED)
        hash_kind = ProbeKind.VERIFY_ARTIFACT_HASH
        assert (await watched.current()).costs[hash_kind].acquisitions == 1
        observations.append(path, observations.record(acquisition()))
        assert (await watched.current()).costs[hash_kind].acquisitions == 2
        path.chmod(0o666)
        observations.append(path, observations.record(acquisition()))
        assert (await watched.current()).costs[hash_kind].acquisitions == 2
        path.chmod(0o600)
        assert (await watched.current()).costs[hash_kind].acquisitions == 3


class TestCaseReferences:
    def test_a_collected_label_finds_the_prediction_its_enqueue_recorded(
        self, tmp_path: Path
    ) -> None:
        """The enqueue line names its case one-way; the lookup reads FILE.1 and FILE and
        answers "" for a case it does not hold."""
        path = tmp_path / "obs.jsonl"

        def enqueued(case_id: str, predicted: str, cap: int = 1 << 20) -> None:
            step = replace(acquisition(Outcome.CASE_ENQUEUED), case_id=case_id)
            observations.append(path, observations.record(step, predicted), max_bytes=cap)

        enqueued("case_a", "HIGH")
        line = path.read_text()
        assert "case_a" not in line
        assert json.loads(line)["case"] == observations.case_ref("case_a")
        enqueued("case_b", "MEDIUM", cap=len(line.encode()) + 1)  # rotates: case_a in FILE.1
        assert rotated(path).exists()
        assert observations.predicted_for(path, "case_a") == "HIGH"
        assert observations.predicted_for(path, "case_b") == "MEDIUM"
        assert observations.predicted_for(path, "case_c") == ""
