"""The ``assay`` command against a running resolver: tables, --json, and one-line errors."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.services.resolver.domain.policy import DEFAULT_POLICY
from tests.support.processes import (
    AssayProcess,
    assay_command,
    assay_process,
    free_port,
    one_line_error,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "evidence"
pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AssayProcess]:
    port = free_port()
    log = tmp_path_factory.mktemp("resolver") / "resolver.log"
    with assay_process(["serve", "resolver", "--port", str(port)], log, port) as proc:
        yield proc
        proc.terminate()


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        assay_command(*args), capture_output=True, text=True, timeout=60, check=False
    )


class TestResolveCommand:
    def test_table_shows_conflict_and_review(self, resolver: AssayProcess) -> None:
        """The safety-conflict example prints CONFLICTED and REQUIRES REVIEW, and exits 4."""
        result = assay(
            "resolve", str(EXAMPLES / "safety-conflict.json"), "--target", resolver.target
        )
        assert result.returncode == 4, result.stderr
        assert "idempotency.mode" in result.stdout
        assert "CONFLICTED" in result.stdout
        assert "REQUIRES REVIEW" in result.stdout
        assert "coverage (display only" in result.stdout

    def test_json_output_for_one_semantic(self, resolver: AssayProcess) -> None:
        """--subject/--predicate/--json prints the ResolveSemantic response as proto JSON."""
        result = assay(
            "resolve",
            str(EXAMPLES / "mock-only.json"),
            "--subject",
            "api:orders.list",
            "--predicate",
            "retries.mode",
            "--json",
            "--target",
            resolver.target,
        )
        assert result.returncode == 0, result.stderr
        resolution = json.loads(result.stdout)["resolution"]
        assert resolution["status"] == "RESOLUTION_STATUS_RESOLVED"
        # Ten claims of one mock file count once: 0.95 x 0.3.
        assert resolution["leader"]["support"] == pytest.approx(0.285)
        assert "RATIONALE_FLAG_ALL_SUPPORT_DISCOUNTED" in resolution["rationale"]

    @pytest.mark.parametrize(
        ("example", "expected"),
        [
            ("superseded-chain.json", "excluded auth-v2: SUPERSEDED by auth-v3"),
            ("corroborated.json", "RESOLVED"),
        ],
    )
    def test_examples_render(self, resolver: AssayProcess, example: str, expected: str) -> None:
        """Every shipped example resolves and shows what it is there to show."""
        result = assay("resolve", str(EXAMPLES / example), "--target", resolver.target)
        assert result.returncode == 0, result.stderr
        assert expected in result.stdout

    def test_detail_summary(self, resolver: AssayProcess) -> None:
        """--detail summary asks for resolutions without their per-claim part: the same
        leaders and supports, no claim weights in the JSON, no claims column in the table."""
        example = str(EXAMPLES / "safety-conflict.json")
        runs = {
            detail: assay(
                "resolve", example, "--detail", detail, "--json", "--target", resolver.target
            )
            for detail in ("full", "summary")
        }
        for run in runs.values():
            assert run.returncode == 4, run.stderr
        full, summary = (json.loads(runs[d].stdout) for d in ("full", "summary"))
        assert [r["leader"] for r in summary["resolutions"]] == [
            r["leader"] for r in full["resolutions"]
        ]
        assert any("claims" in v for r in full["resolutions"] for v in r["values"])
        assert not any("claims" in v for r in summary["resolutions"] for v in r["values"])
        table = assay("resolve", example, "--detail", "summary", "--target", resolver.target)
        assert table.returncode == 4, table.stderr
        assert "REQUIRES REVIEW" in table.stdout
        assert "effective weight" not in table.stdout
        assert "effective weight" in assay("resolve", example, "--target", resolver.target).stdout

    def test_legacy_bundle_loads_with_a_warning(self, resolver: AssayProcess) -> None:
        """A legacy {items, confidence} bundle loads as empty evidence and warns."""
        result = assay("resolve", str(EXAMPLES / "legacy-bundle.json"), "--target", resolver.target)
        assert result.returncode == 0, result.stderr
        assert "legacy {items, confidence} bundle loaded lossily" in result.stderr
        assert "no claims" in result.stdout

    def test_policy_table(self, resolver: AssayProcess) -> None:
        """`assay policy` shows the reliability table, its digest and load time, the margin
        and the safety predicates."""
        result = assay("policy", "--target", resolver.target)
        assert result.returncode == 0, result.stderr
        assert "generated_mock" in result.stdout
        assert "0.30" in result.stdout
        assert f"table digest: {DEFAULT_POLICY.digest}\n" in result.stdout
        assert "loaded: 20" in result.stdout
        assert "idempotency.mode" in result.stdout
        assert "0.2" in result.stdout


class TestResolveExitCodes:
    @pytest.mark.parametrize(
        ("example", "extra", "code"),
        [
            ("corroborated.json", (), 0),
            ("mock-only.json", (), 0),
            ("superseded-chain.json", (), 0),
            ("legacy-bundle.json", (), 0),
            ("safety-conflict.json", (), 4),
            ("safety-conflict.json", ("--as-of", "2027-12-01T00:00:00Z", "--stale-after", "60"), 4),
            (
                "safety-conflict.json",
                ("--subject", "api:payments.create", "--predicate", "effect.stateImpact"),
                0,
            ),
            (
                "safety-conflict.json",
                ("--subject", "api:payments.create", "--predicate", "idempotency.mode"),
                4,
            ),
            ("corroborated.json", ("--subject", "api:none", "--predicate", "none"), 5),
        ],
    )
    @pytest.mark.parametrize("output", ["table", "json"])
    def test_each_example_exits_with_what_it_found(
        self,
        resolver: AssayProcess,
        example: str,
        extra: tuple[str, ...],
        code: int,
        output: str,
    ) -> None:
        """0 when every resolution is RESOLVED without review, 4 when one requires review
        (a safety-sensitive conflict), 5 when one is only CONFLICTED or INSUFFICIENT; the
        same with -o json, so a CI job can gate on either."""
        result = assay(
            "resolve", str(EXAMPLES / example), *extra, "-o", output, "--target", resolver.target
        )
        assert result.returncode == code, result.stderr
        assert "Traceback" not in result.stderr

    def test_every_shipped_example_is_in_the_table(self) -> None:
        """The exit-code table above covers every file in examples/evidence."""
        covered = {"corroborated.json", "mock-only.json", "superseded-chain.json"}
        covered |= {"legacy-bundle.json", "safety-conflict.json"}
        assert {p.name for p in EXAMPLES.glob("*.json")} == covered


class TestResolveErrors:
    def test_missing_server_is_one_line(self) -> None:
        """No server at the target: one line saying so, exit 1, no traceback."""
        port = free_port()
        result = assay(
            "resolve",
            str(EXAMPLES / "corroborated.json"),
            "--target",
            f"127.0.0.1:{port}",
            "--timeout",
            "3",
        )
        line = one_line_error(result)
        assert "not reachable" in line

    def test_invalid_json_names_file_and_position(self, tmp_path: Path) -> None:
        """A file that is not JSON is reported with its name, line and column."""
        bad = tmp_path / "bad.json"
        bad.write_text('{"claims": [\n  {"subject": }\n]}')
        line = one_line_error(assay("resolve", str(bad)))
        assert str(bad) in line
        assert "line 2" in line

    def test_unknown_claim_field_names_the_claim(self, tmp_path: Path) -> None:
        """A misspelt claim field is an error naming the claim, not silently dropped."""
        bad = tmp_path / "typo.json"
        bad.write_text(json.dumps({"claims": [{"subject": "s", "predicat": "p"}]}))
        line = one_line_error(assay("resolve", str(bad)))
        assert f"{bad}: claims[0]" in line
        assert "predicat" in line

    def test_invalid_claim_names_file_and_field(
        self, resolver: AssayProcess, tmp_path: Path
    ) -> None:
        """A claim the server rejects is reported with the file and the field path."""
        bad = tmp_path / "confidence.json"
        claim = {
            "subject": "api:x",
            "predicate": "retries.mode",
            "value": "safe",
            "source": "api_spec",
            "confidence": 1.5,
        }
        bad.write_text(json.dumps({"claims": [claim]}))
        line = one_line_error(assay("resolve", str(bad), "--target", resolver.target))
        assert str(bad) in line
        assert "evidence.claims[0].confidence" in line
        assert "INVALID_ARGUMENT" in line

    def test_missing_file(self, tmp_path: Path) -> None:
        """A file that does not exist is one line naming it."""
        missing = tmp_path / "nope.json"
        line = one_line_error(assay("resolve", str(missing)))
        assert str(missing) in line

    def test_subject_without_predicate(self) -> None:
        """--subject alone is a usage error: exit 2 and a one-line explanation."""
        done = assay("resolve", str(EXAMPLES / "corroborated.json"), "--subject", "x")
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1
        assert "Traceback" not in done.stderr
        assert "--predicate" in done.stderr
