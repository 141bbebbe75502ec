"""A running ``assay serve resolver`` process picks up a changed table file, and says so.

The table comes from ``$ASSAY_RELIABILITY_TABLE``, as a deployment sets it; the file is
replaced while the process serves, and ``assay policy``, the resolutions and the log
follow without a restart. A broken version is refused in the log and changes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import grpc
import pytest

from assay.reliability_table import table_digest
from assay.services.resolver.domain.policy import DEFAULT_RELIABILITY
from assay.v1 import claim_pb2, resolution_pb2
from assay.v1 import resolver_service_pb2 as pb
from assay.v1 import resolver_service_pb2_grpc as pb_grpc
from tests.support.eventually import eventually
from tests.support.processes import AssayProcess, assay_command, assay_process, free_port

pytestmark = pytest.mark.process

SUBJECT = "api:payments.create"
PREDICATE = "idempotency.mode"
BEFORE = dict(DEFAULT_RELIABILITY)
# A calibrated value: more digits than the table's usual two.
AFTER = {**DEFAULT_RELIABILITY, "api_spec": 0.9912}


def write(path: Path, text: str) -> None:
    """Replace the file as docs/deploy.md says to: a new file renamed over the old."""
    fresh = path.with_suffix(".tmp")
    fresh.write_text(text)
    os.replace(fresh, path)


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args), capture_output=True, text=True, timeout=60, check=False
    )


def resolved(target: str) -> resolution_pb2.SemanticResolution:
    evidence = claim_pb2.Evidence()
    for value, source in (("key", "api_spec"), ("none", "documentation")):
        claim = evidence.claims.add(
            subject=SUBJECT, predicate=PREDICATE, source=source, confidence=0.9
        )
        claim.value.string_value = value
    with grpc.insecure_channel(target) as channel:
        response = pb_grpc.ResolverServiceStub(channel).ResolveSemantic(
            pb.ResolveSemanticRequest(evidence=evidence, subject=SUBJECT, predicate=PREDICATE),
            timeout=10,
        )
    resolution: resolution_pb2.SemanticResolution = response.resolution
    return resolution


def shown_digest(target: str) -> str:
    """The digest ``assay policy`` prints."""
    done = assay("policy", "--target", target)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("table digest: ")]
    return line.removeprefix("table digest: ")


class TestTableFileReload:
    def test_policy_resolutions_and_log_follow_the_file(self, tmp_path: Path) -> None:
        """``assay policy`` and each resolution name the new table, its values shown whole;
        the log has the reload with both digests; a broken version is refused and kept out."""
        table = tmp_path / "reliability.json"
        write(table, json.dumps({"sources": BEFORE}))
        port = free_port()
        env = {"ASSAY_RELIABILITY_TABLE": str(table)}
        log = tmp_path / "resolver.log"
        with assay_process(["serve", "resolver", "--port", str(port)], log, port, env) as proc:
            assert shown_digest(proc.target) == table_digest(BEFORE)
            first = resolved(proc.target)
            assert first.status == resolution_pb2.RESOLUTION_STATUS_CONFLICTED
            assert first.reliability_table_digest == table_digest(BEFORE)

            write(table, json.dumps({"sources": AFTER}))
            eventually(
                lambda: resolved(proc.target).reliability_table_digest == table_digest(AFTER),
                message="a resolution naming the new table",
            )
            assert resolved(proc.target).status == resolution_pb2.RESOLUTION_STATUS_RESOLVED
            done = assay("policy", "--target", proc.target)
            assert f"table digest: {table_digest(AFTER)}" in done.stdout
            assert "0.9912" in done.stdout
            assert "loaded: " in done.stdout
            as_json = json.loads(assay("policy", "--target", proc.target, "-o", "json").stdout)
            assert as_json["reliabilityTableDigest"] == table_digest(AFTER)
            assert as_json["reliabilityTableOrigin"] == str(table)
            reload = proc.log_line(event="reliability_table_reloaded")
            assert reload is not None
            assert (reload["old_digest"], reload["new_digest"]) == (
                table_digest(BEFORE),
                table_digest(AFTER),
            )

            write(table, '{"sources": {"api_spec": "high"}}')
            eventually(lambda: refused(proc), message="the broken version refused")
            assert shown_digest(proc.target) == table_digest(AFTER)
            assert proc.terminate() == 0


def refused(proc: AssayProcess) -> bool:
    """Whether the log refuses a bad version, after a call (the file is looked at when one
    comes)."""
    resolved(proc.target)
    line = proc.log_line(event="reliability_table_refused")
    return line is not None and "sources.api_spec" in line["why"]
