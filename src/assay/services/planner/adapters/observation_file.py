"""The executor's observations file (``assay serve planner --observations FILE``), read and
watched.

The executor appends one JSON line per acquisition (``assay.executor.observations``, format
in docs/calibration.md) and, past its size cap, renames the file to ``FILE.1``; the planner
reads ``FILE.1`` then ``FILE``, at most ``MAX_READ_BYTES`` of each (the tail), and derives
every probe kind's figures (``domain.measured``). Watched as every watched file is
(``assay.runtime.file_watch``, at most once per ``CHECK_SECONDS``): new figures need no restart.

A bad line (not a JSON object, longer than ``MAX_LINE_BYTES``, an unknown probe kind, a
field of the wrong kind) is skipped and named (file, line, field, why) in one
``observations_skipped`` log line per read. A file that group or others may write could
carry anyone's figures: at start that refuses the planner (exit code 2, as a bad
``--probes`` file), as does an unreadable one; later either keeps the figures it has and
logs why.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.runtime import file_watch
from assay.runtime.config import ConfigurationError
from assay.runtime.logging import get_logger
from assay.services.planner.domain.measured import NONE, Measurements, Observation, measure
from assay.services.planner.domain.model import Discrimination, LatencyBand, ProbeKind

_log = get_logger("assay.planner")

SCHEMA = 1
CHECK_SECONDS = file_watch.CHECK_SECONDS
MAX_LINE_BYTES = 1024
MAX_READ_BYTES = 4 << 20
# Problems named per read; the rest are counted.
MAX_NAMED = 20
SUCCEEDED = frozenset({"OBSERVED", "GOLD_LABEL_RETURNED"})
UNUSABLE = frozenset({"FAILED", "NO_LABEL", "SOURCE_NOT_ACCEPTED"})
PENDING = frozenset({"CASE_ENQUEUED", "AWAITING_REVIEW"})


class ObservationFileError(ConfigurationError):
    """The observations file cannot be trusted or read at start."""


@dataclass(frozen=True)
class Read:
    """What one read of the files gave: the observations and every skipped line's why."""

    observations: tuple[Observation, ...]
    problems: tuple[str, ...]


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    # JSON true is a Python int too: a number field must not take it.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{name}: expected {_kind_name(kind)}, got {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {bool: "true or false", str: "a string", int: "a number", float: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def parse_line(line: bytes, kinds: Mapping[ProbeKind, LatencyBand]) -> Observation | None:
    """One line as an observation; None for a blank line; ValueError naming the problem."""
    if len(line) > MAX_LINE_BYTES:
        raise ValueError(f"longer than {MAX_LINE_BYTES} bytes")
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("v") != SCHEMA:
        raise ValueError(f"v: expected {SCHEMA}, got {data.get('v')!r}")
    name = _field(data, "probe", str)
    kind = ProbeKind.__members__.get(name)
    if kind is None or kind not in kinds:
        raise ValueError(f"probe: unknown probe kind {name!r}")
    outcome = _field(data, "outcome", str)
    if outcome not in SUCCEEDED | UNUSABLE | PENDING:
        raise ValueError(f"outcome: unknown outcome {outcome!r}")
    latency = float(_field(data, "latencySeconds", (int, float)))
    if not math.isfinite(latency) or latency < 0:
        raise ValueError(f"latencySeconds: expected a finite number >= 0, got {latency!r}")
    predicted = Discrimination.UNSPECIFIED
    if data.get("predicted") is not None:
        band = Discrimination.__members__.get(_field(data, "predicted", str))
        if band is None or band is Discrimination.UNSPECIFIED:
            raise ValueError(f"predicted: unknown discrimination {data['predicted']!r}")
        predicted = band
    changed = data.get("decisionChanged")
    if changed is not None:
        changed = _field(data, "decisionChanged", bool)
    return Observation(
        kind=kind,
        completed=outcome not in PENDING,
        succeeded=outcome in SUCCEEDED,
        latency_seconds=latency,
        predicted=predicted,
        changed=changed,
    )


def _tail(path: Path) -> tuple[bytes, int]:
    """The last ``MAX_READ_BYTES`` of ``path`` from a line start, and the bytes skipped."""
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            skipped = max(0, size - MAX_READ_BYTES)
            file.seek(skipped)
            data = file.read(MAX_READ_BYTES)
    except FileNotFoundError:
        return b"", 0
    if skipped:
        cut = data.find(b"\n") + 1
        return data[cut:], skipped + cut
    return data, 0


def read_files(path: Path, kinds: Mapping[ProbeKind, LatencyBand]) -> Read:
    """Every good line of ``FILE.1`` then ``FILE``, and each bad one named."""
    observations: list[Observation] = []
    problems: list[str] = []
    for part in (rotated(path), path):
        data, skipped = _tail(part)
        where = f"{part} (its last {MAX_READ_BYTES} bytes)" if skipped else str(part)
        # A last line without its newline is still being written: read once it is whole.
        lines = data.split(b"\n")[:-1]
        for number, line in enumerate(lines, start=1):
            try:
                observation = parse_line(line, kinds)
            except ValueError as error:
                problems.append(f"{where}:{number}: {error}")
                continue
            if observation is not None:
                observations.append(observation)
    return Read(tuple(observations), tuple(problems))


def rotated(path: Path) -> Path:
    return path.with_name(path.name + ".1")


def writable_by_others(path: Path) -> str | None:
    """Why ``path`` (or its rotated twin) may not be trusted, or None."""
    for part in (path, rotated(path)):
        try:
            found = os.stat(part)
        except FileNotFoundError:
            continue
        except OSError as error:
            return f"{part}: cannot be read: {error}"
        if not stat.S_ISREG(found.st_mode):
            return f"{part}: not a regular file"
        mode = stat.S_IMODE(found.st_mode)
        if mode & 0o022:
            return (
                f"{part}: mode {mode:04o} lets group or others write it, so anyone could "
                f"write its figures; run chmod 600 {part}"
            )
    return None


class ObservationFile:
    """The figures of an observations file, re-read when it changes (module docstring)."""

    def __init__(self, path: Path, declared: Mapping[ProbeKind, LatencyBand]) -> None:
        self.path = path
        self.declared = dict(declared)
        refused = writable_by_others(path)
        if refused is not None:
            raise ObservationFileError(f"--observations {refused}")
        # A version not read (refused, or unreadable) is tried again at every look: a chmod
        # that fixes it leaves the files' signature as it was.
        self._watch = file_watch.FileWatch(
            rotated(path), path, now=time.monotonic(), interval=CHECK_SECONDS
        )
        try:
            self._figures = self._load()
        except OSError as error:
            raise ObservationFileError(f"--observations {path}: cannot be read: {error}") from None
        self._reading = False

    def _load(self) -> Measurements:
        read = read_files(self.path, self.declared)
        if read.problems:
            _log.warning(
                "observations_skipped",
                path=str(self.path),
                skipped=len(read.problems),
                lines=list(read.problems[:MAX_NAMED]),
            )
        _log.info("observations_read", path=str(self.path), observations=len(read.observations))
        return measure(read.observations, self.declared)

    async def current(self) -> Measurements:
        """The figures, re-read first when the files changed (looked at once a second)."""
        if self._reading:
            return self._figures
        version = self._watch.look(time.monotonic())
        if version is None:
            return self._figures
        refused = writable_by_others(self.path)
        if refused is not None:
            _log.warning("observations_refused", path=str(self.path), why=refused)
            return self._figures
        self._reading = True
        try:
            self._figures = await asyncio.to_thread(self._load)
            self._watch.took(version)
        except OSError as error:  # e.g. made unreadable: plans go on with what was read
            _log.warning("observations_unreadable", path=str(self.path), error=str(error))
        finally:
            self._reading = False
        return self._figures


class NoObservations:
    """No observations file: every kind keeps its declared band."""

    async def current(self) -> Measurements:
        return NONE
