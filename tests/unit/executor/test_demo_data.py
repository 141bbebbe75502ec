"""The demo's evidence ships inside the package, so `assay demo` runs from a plain install."""

from __future__ import annotations

from pathlib import Path

from assay.executor.demo import EXAMPLE

ROOT = Path(__file__).resolve().parents[3]


class TestDemoData:
    def test_demo_evidence_is_package_data(self) -> None:
        """The demo reads its example from inside the assay package, not the repository."""
        assert "assay" in EXAMPLE.parts
        assert EXAMPLE.is_file()

    def test_packaged_copy_matches_the_example_readers_see(self) -> None:
        """examples/executor/ shows exactly what the demo runs."""
        shown = ROOT / "examples" / "executor" / "idempotency-conflict.json"
        assert EXAMPLE.read_bytes() == shown.read_bytes()
