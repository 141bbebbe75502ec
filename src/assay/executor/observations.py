"""What each acquisition took and did, appended as one JSON line to the observations file.

The planner declares latency bands and predicts discrimination; only what acquisitions
really took and did can check them. With ``--observations FILE`` (``ASSAY_OBSERVATIONS``)
the executor appends, per acquisition: the probe kind, its outcome, its latency, the
declared band, the discrimination the plan predicted, and whether the decision (the
resolver's status or leader) differs between the resolution before it and the next one
the loop makes anyway. Kinds, bands and timings only: no subject, value or claim; a review
case only as a one-way ``case`` reference, so the gold label a later run collects is judged
against the prediction made when its case was enqueued (``predicted_for``). The planner
reads the same file (``assay serve planner --observations FILE``).

Each line is written whole under an exclusive lock, so executors sharing the file never
interleave. The file is created owner-only (0600), and one that group or others may write
is refused. A line that would take the file past ``MAX_FILE_BYTES`` first renames it to
``FILE.1`` (replacing the older one): the planner reads both.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assay.executor.model import Acquisition

SCHEMA = 1
MODE = 0o600
MAX_LINE_BYTES = 1024
MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class Decision:
    """The resolver's decision as the judgement compares it: status and leading value."""

    status: str
    leader: str


def record(
    acquisition: Acquisition,
    predicted: str = "",
    before: Decision | None = None,
    after: Decision | None = None,
    now: datetime | None = None,
) -> str:
    """The line (without its newline) for one acquisition; ``before``/``after`` None when
    the decision around it is not known (a gold label collected before the first
    resolution)."""
    changed = None if before is None or after is None else before != after
    data = {
        "v": SCHEMA,
        "time": (now or datetime.now(UTC)).isoformat(timespec="microseconds"),
        "probe": acquisition.probe,
        "outcome": str(acquisition.outcome),
        "latencySeconds": round(acquisition.latency_seconds, 6),
        "declaredLatency": acquisition.declared_latency,
        "predicted": predicted or None,
        "statusBefore": before.status if before else None,
        "statusAfter": after.status if after else None,
        "decisionChanged": changed,
    }
    if acquisition.case_id:
        data["case"] = case_ref(acquisition.case_id)
    line = json.dumps(data, separators=(",", ":"), sort_keys=True)
    if len(line.encode()) >= MAX_LINE_BYTES:  # kinds and bands only: cannot happen
        raise ValueError(f"observation line over {MAX_LINE_BYTES} bytes")
    return line


def case_ref(case_id: str) -> str:
    """A review case as the file names it: the first 16 hex digits of its id's SHA-256."""
    return hashlib.sha256(case_id.encode()).hexdigest()[:16]


def predicted_for(path: Path, case_id: str) -> str:
    """The discrimination predicted when ``case_id`` was enqueued (its CASE_ENQUEUED line
    in ``FILE.1`` or ``FILE``), or "" when the file no longer holds that line."""
    ref, found = case_ref(case_id), ""
    for part in (path.with_name(path.name + ".1"), path):
        with contextlib.suppress(FileNotFoundError), part.open("rb") as source:
            for raw in source:
                with contextlib.suppress(ValueError):
                    data = json.loads(raw)
                    if (
                        isinstance(data, dict)
                        and data.get("case") == ref
                        and data.get("outcome") == "CASE_ENQUEUED"
                    ):
                        found = str(data.get("predicted") or "")
    return found


def check(path: Path) -> None:
    """Create ``path`` owner-only if missing; ValueError when others may write it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, MODE))
        return
    except FileExistsError:
        pass
    except OSError as error:
        raise ValueError(f"--observations {path}: cannot create it: {error}") from None
    found = os.stat(path)
    if not stat.S_ISREG(found.st_mode):
        raise ValueError(f"--observations {path}: not a regular file")
    mode = stat.S_IMODE(found.st_mode)
    if mode & 0o022:
        raise ValueError(
            f"--observations {path}: mode {mode:04o} lets group or others write it; "
            f"run chmod 600 {path}"
        )


def append(path: Path, line: str, max_bytes: int = MAX_FILE_BYTES) -> None:
    """Append ``line`` and a newline, rotating to ``FILE.1`` first when it would not fit."""
    data = (line + "\n").encode()
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            found = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if current is None or current.st_ino != found.st_ino:
                continue  # another executor rotated it while we waited: open the new one
            if found.st_size and found.st_size + len(data) > max_bytes:
                os.replace(path, path.with_name(path.name + ".1"))
                continue  # write into a fresh file
            os.write(fd, data)
            return
        finally:
            os.close(fd)
