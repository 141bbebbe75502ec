"""The committed Python code generated from the protos matches the protos."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class TestGeneratedCode:
    def test_generated_code_is_current(self) -> None:
        """Regenerating the stubs gives exactly the committed files (run `just proto` if not)."""
        result = subprocess.run(
            [sys.executable, str(ROOT / "tools" / "gen_protos.py"), "--check"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr

    def test_generated_modules_import_under_the_assay_package(self) -> None:
        """Generated code lives in assay.v1, so nothing top-level lands in site-packages."""
        from assay.v1 import claim_pb2

        assert claim_pb2.DESCRIPTOR.package == "assay.v1"
        assert claim_pb2.__name__ == "assay.v1.claim_pb2"
