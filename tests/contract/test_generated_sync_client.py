"""The blocking clients are generated from the asyncio ones, never edited by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SYNC = ROOT / "src" / "assay" / "client" / "_sync"


class TestGeneratedSyncClient:
    def test_committed_sync_client_is_what_the_generator_writes(self) -> None:
        """Regenerating from src/assay/client/_async gives exactly the committed _sync files."""
        result = subprocess.run(
            [sys.executable, str(ROOT / "tools" / "gen_sync_client.py"), "--check"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr

    def test_every_generated_module_says_so_and_awaits_nothing(self) -> None:
        """Each generated module opens with its do-not-edit header and holds no async code."""
        modules = sorted(p for p in SYNC.glob("*.py") if p.name != "__init__.py")
        assert [p.name for p in modules] == [
            "adjudication.py",
            "approvals.py",
            "base.py",
            "planner.py",
            "resolver.py",
        ]
        for path in modules:
            text = path.read_text(encoding="utf-8")
            assert text.startswith(f"# Generated from src/assay/client/_async/{path.name} "), path
            for word in ("async ", "await ", "grpc.aio", "aio_channel"):
                assert word not in text, f"{path.name} holds {word!r}"
