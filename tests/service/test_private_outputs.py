"""What ``assay export`` and ``assay audit checkpoint --out`` write is owner-only (0600) from
the moment it exists, also over an older file that was not, through a real server."""

from __future__ import annotations

import asyncio
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.cli.main import main as cli
from tests.service.adjudication_support import adjudication_server, enqueue, register, review
from tests.service.test_adjudication_agreement_export import _resolve_and_freeze
from tests.support.processes import free_port


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask of 0, under which a file opened the ordinary way would be 0666."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _stale(*paths: Path) -> None:
    """Files left by an earlier run with the modes a naive writer gave them."""
    for path in paths:
        path.write_text("stale\n")
        path.chmod(0o644)


class TestOwnerOnlyOutputs:
    @pytest.mark.parametrize("existing", [False, True], ids=["new", "over-a-0644-file"])
    async def test_export_and_manifest_are_0600(
        self, tmp_path: Path, existing: bool, open_umask: None, log_stream: io.StringIO
    ) -> None:
        """The corpus and its manifest are 0600 under umask 0, and replace a 0644 file whole."""
        corpus = tmp_path / "out" / "corpus.jsonl"
        corpus.parent.mkdir()
        manifest = corpus.with_name("corpus.jsonl.manifest.json")
        if existing:
            _stale(corpus, manifest)
        async with adjudication_server(tmp_path / "a.db") as server:
            for name in ("ann", "bob"):
                await register(server.stub, name)
            case = await enqueue(server.stub)
            for name in ("ann", "bob"):
                await review(server.stub, case.case_id, name, "key")
            await _resolve_and_freeze(server.stub, case.case_id, "key")
            code = await asyncio.to_thread(
                cli, ["export", "--out", str(corpus), "--target", server.target]
            )
        assert code == 0
        assert (mode(corpus), mode(manifest)) == (0o600, 0o600)
        assert case.case_id in corpus.read_text()
        assert '"recordCount": "1"' in manifest.read_text()
        assert sorted(p.name for p in corpus.parent.iterdir()) == [corpus.name, manifest.name]

    @pytest.mark.parametrize("existing", [False, True], ids=["new", "over-a-0644-file"])
    async def test_checkpoint_out_is_0600(
        self, tmp_path: Path, existing: bool, open_umask: None, log_stream: io.StringIO
    ) -> None:
        """``audit checkpoint --out`` is 0600 under umask 0, and replaces a 0644 file whole."""
        saved = tmp_path / "out" / "saved.checkpoint"
        saved.parent.mkdir()
        if existing:
            _stale(saved)
        async with adjudication_server(tmp_path / "a.db") as server:
            await register(server.stub, "ann")
            code = await asyncio.to_thread(
                cli, ["audit", "checkpoint", "--out", str(saved), "--target", server.target]
            )
        assert code == 0
        assert mode(saved) == 0o600
        assert saved.read_text().startswith("assay.v1/adjudication/")
        assert [p.name for p in saved.parent.iterdir()] == [saved.name]

    def test_a_failed_export_leaves_the_old_file_and_no_temporary(self, tmp_path: Path) -> None:
        """An export that cannot reach its server exits 1; the file there stays as it was."""
        corpus = tmp_path / "corpus.jsonl"
        _stale(corpus)
        target = f"127.0.0.1:{free_port()}"  # nothing listens there
        code = cli(["export", "--out", str(corpus), "--target", target, "--timeout", "2"])
        assert code == 1
        assert corpus.read_text() == "stale\n"
        assert [p.name for p in tmp_path.iterdir()] == [corpus.name]
