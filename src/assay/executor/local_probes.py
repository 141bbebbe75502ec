"""The probes that observe this machine: an artifact's hash, a git repository, a test rerun.

Each is a plain blocking function (the loop runs it in a worker thread) that
observes once and returns a ``ProbeResult``: on success one claim about the
executor's target, whose value is what was observed; on failure no claim and
a one-line reason. A probe that cannot observe never guesses a value.

Side effects stay within what the planner's catalogue declares for them:

- VERIFY_ARTIFACT_HASH reads one file (FILESYSTEM_READ).
- INSPECT_VCS_STATE runs ``git`` read-only (FILESYSTEM_READ, VCS_READ), with
  ``GIT_OPTIONAL_LOCKS=0`` so ``git status`` does not even refresh the index.
- RERUN_TEST copies the worktree to a temporary directory, runs the command
  there with a timeout (PROCESS_SPAWN, FILESYSTEM_WRITE_WORKTREE: it writes only
  inside that copy), and deletes the copy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.client.builders import to_value
from assay.executor.model import Outcome, ProbeResult
from assay.v1 import claim_pb2

GIT_TIMEOUT_SECONDS = 15.0
CHUNK = 1 << 20
# Output kept from a test run for the report: the tail is where failures are.
OUTPUT_TAIL_CHARS = 400


def observation_claim(
    *,
    claim_id: str,
    subject: str,
    predicate: str,
    value: Any,
    source: str,
    source_ref: str,
    method: str,
    source_revision: str = "",
) -> claim_pb2.Claim:
    """A fresh observation about the target: its own declared correlation group, observed now.

    Confidence is 1.0 because the probe observed the value directly; how far
    that kind of observation is trusted is the resolver's table's business.
    """
    claim = claim_pb2.Claim(
        id=claim_id,
        subject=subject,
        predicate=predicate,
        source=source,
        source_ref=source_ref,
        source_revision=source_revision,
        method=method,
        confidence=1.0,
        correlation_group=f"executor:{method}:{source_ref}",
    )
    claim.value.CopyFrom(to_value(value))
    claim.observe_time.FromDatetime(datetime.now(UTC))
    return claim


def sha256_of(path: Path) -> str:
    """``sha256:<hex>`` of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def verify_artifact_hash(
    path: Path, claimed: list[str], claim_id: str, subject: str, predicate: str
) -> ProbeResult:
    """Hash ``path``; the claim asserts the observed digest. ``claimed`` are the digests the
    evidence asserts (the competing values), reported as matched or not."""
    try:
        observed = sha256_of(path)
    except OSError as error:
        return ProbeResult(Outcome.FAILED, f"cannot read {path}: {error.strerror or error}")
    wanted = {c.strip('"').lower() for c in claimed}
    verdict = "matches the claimed digest" if observed in wanted else "matches no claimed digest"
    claim = observation_claim(
        claim_id=claim_id,
        subject=subject,
        predicate=predicate,
        value=observed,
        source="artifact_hash",
        source_ref=str(path),
        method="verify_artifact_hash",
    )
    return ProbeResult(Outcome.OBSERVED, f"{path}: {observed} {verdict}", (claim,))


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_SECONDS,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "git failed"
        )
    return done.stdout


def vcs_state(repo: Path) -> dict[str, Any]:
    """The repository's head commit, branch, and whether its work tree is clean."""
    head = _git(repo, "rev-parse", "HEAD").strip()
    branch = _git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    porcelain = _git(repo, "status", "--porcelain", "--untracked-files=normal")
    return {"head": head, "branch": branch, "clean": porcelain.strip() == ""}


def inspect_vcs_state(
    repo: Path, field_name: str, claim_id: str, subject: str, predicate: str
) -> ProbeResult:
    """Observe ``repo``; the claim asserts its ``field_name`` (head, clean or branch)."""
    try:
        state = vcs_state(repo)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
        return ProbeResult(Outcome.FAILED, f"cannot inspect {repo}: {error}")
    if field_name not in state:
        return ProbeResult(Outcome.FAILED, f"no VCS observation named {field_name!r}")
    claim = observation_claim(
        claim_id=claim_id,
        subject=subject,
        predicate=predicate,
        value=state[field_name],
        source="vcs_state",
        source_ref=str(repo),
        source_revision=state["head"],
        method="inspect_vcs_state",
    )
    cleanliness = "clean" if state["clean"] else "uncommitted changes"
    detail = f"{repo}: {state['branch']} at {state['head'][:12]}, {cleanliness}"
    return ProbeResult(Outcome.OBSERVED, detail, (claim,))


def rerun_test(
    command: tuple[str, ...],
    worktree: Path,
    timeout: float,
    claim_id: str,
    subject: str,
    predicate: str,
) -> ProbeResult:
    """Run ``command`` in a temporary copy of ``worktree``; the claim asserts whether it passed.

    A timeout or a command that cannot start is a failed observation, not a
    failed test: it yields no claim.
    """
    if not worktree.is_dir():
        return ProbeResult(Outcome.FAILED, f"worktree {worktree} is not a directory")
    with tempfile.TemporaryDirectory(prefix="assay-rerun-") as scratch:
        copy = Path(scratch) / "worktree"
        shutil.copytree(worktree, copy, symlinks=True)
        try:
            done = subprocess.run(
                list(command),
                cwd=copy,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return ProbeResult(Outcome.FAILED, f"{' '.join(command)} timed out after {timeout:g}s")
        except OSError as error:
            return ProbeResult(
                Outcome.FAILED, f"cannot run {command[0]}: {error.strerror or error}"
            )
    passed = done.returncode == 0
    tail = (done.stdout + done.stderr).strip()[-OUTPUT_TAIL_CHARS:]
    claim = observation_claim(
        claim_id=claim_id,
        subject=subject,
        predicate=predicate,
        value=passed,
        source="test_result",
        source_ref=" ".join(command),
        method="rerun_test",
    )
    verdict = "passed" if passed else f"failed (exit {done.returncode})"
    detail = f"{' '.join(command)} {verdict}" + (f": {tail.splitlines()[-1]}" if tail else "")
    return ProbeResult(Outcome.OBSERVED, detail, (claim,))
