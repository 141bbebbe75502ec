"""The adjudication writer's two ways of running a batch, against a real SQLite file.

Small jobs run on the event loop's thread between a BEGIN and a COMMIT made on
the connection's thread; a batch holding a large job runs whole on that thread.
Both must give the same answers: savepoints per job, one commit per batch,
nothing acknowledged that is not stored.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from assay.services.adjudication.domain.model import AuditEventType
from assay.services.adjudication.storage import Store, WriteTx


def swept(tx: WriteTx) -> int:
    return tx.append_event(AuditEventType.EXPIRED_RECORDS_SWEPT, {"cases": "0"}).sequence


def refused(tx: WriteTx) -> int:
    raise ValueError("refused before writing")


def broken_after_write(tx: WriteTx) -> int:
    tx.append_event(AuditEventType.EXPIRED_RECORDS_SWEPT, {"cases": "1"})
    raise RuntimeError("failed after writing")


def on_loop_thread(tx: WriteTx) -> bool:
    return threading.current_thread() is threading.main_thread()


class TestWhereJobsRun:
    async def test_small_jobs_run_on_the_loop_and_large_ones_off_it(self, tmp_path: Path) -> None:
        """A batch of small jobs runs on the loop's thread; a large job runs on the connection's."""
        store = await Store.open(tmp_path / "w.db")
        try:
            assert await store.write(on_loop_thread, small=True) is True
            assert await store.write(on_loop_thread) is False
        finally:
            await store.close()

    async def test_a_mixed_batch_runs_whole_off_the_loop(self, tmp_path: Path) -> None:
        """One large job in a batch sends every job of that batch to the connection's thread."""
        store = await Store.open(tmp_path / "w.db")
        try:
            await store.write(swept, small=True)  # the writer is idle again afterwards
            results = await asyncio.gather(
                store.write(on_loop_thread, small=True), store.write(on_loop_thread)
            )
            assert list(results) == [False, False]
        finally:
            await store.close()


class TestSavepointsOnTheLoop:
    @pytest.mark.parametrize("small", [True, False])
    async def test_a_failing_job_does_not_poison_its_batch(
        self, tmp_path: Path, small: bool
    ) -> None:
        """Refused and broken jobs vanish, the others in the batch commit, the chain stays whole."""
        store = await Store.open(tmp_path / "w.db")
        try:
            results = await asyncio.gather(
                store.write(swept, small),
                store.write(refused, small),
                store.write(broken_after_write, small),
                store.write(swept, small),
                return_exceptions=True,
            )
            assert isinstance(results[1], ValueError)
            assert isinstance(results[2], RuntimeError)
            assert sorted(r for r in results if isinstance(r, int)) == [1, 2]
            verdict = await store.verify_chain()
            assert verdict.ok
            assert verdict.head.sequence == 2
        finally:
            await store.close()

    async def test_acknowledged_small_writes_are_committed(self, tmp_path: Path) -> None:
        """Once a small job's caller has its answer, another connection sees the row."""
        store = await Store.open(tmp_path / "w.db")
        try:
            sequences = await asyncio.gather(*(store.write(swept, small=True) for _ in range(25)))
            other = sqlite3.connect(tmp_path / "w.db")
            try:
                stored = other.execute("SELECT COUNT(*) FROM audit_events").fetchone()[0]
            finally:
                other.close()
            assert sorted(sequences) == list(range(1, 26))
            assert stored == 25
        finally:
            await store.close()


class TestOneSavepointPerBatch:
    @pytest.mark.parametrize("small", [True, False])
    async def test_a_job_refused_before_writing_runs_nothing_twice(
        self, tmp_path: Path, small: bool
    ) -> None:
        """Jobs refused before their first write leave the batch's first run standing."""
        runs: list[str] = []

        def counted(tx: WriteTx) -> int:
            runs.append("swept")
            return swept(tx)

        store = await Store.open(tmp_path / "w.db")
        try:
            results = await asyncio.gather(
                store.write(counted, small),
                store.write(refused, small),
                store.write(counted, small),
                return_exceptions=True,
            )
            assert sorted(r for r in results if isinstance(r, int)) == [1, 2]
            assert isinstance(results[1], ValueError)
            assert runs == ["swept", "swept"]
        finally:
            await store.close()

    @pytest.mark.parametrize("small", [True, False])
    async def test_a_job_failing_after_writing_reruns_its_batch_job_by_job(
        self, tmp_path: Path, small: bool
    ) -> None:
        """After a failure past a write the batch runs again, isolated: its rows and event
        vanish, the others' stand once, numbered without a gap."""
        runs: list[str] = []

        def counted(tx: WriteTx) -> int:
            runs.append("swept")
            return swept(tx)

        store = await Store.open(tmp_path / "w.db")
        try:
            await store.write(swept, small)  # the writer is idle again: the next three batch
            results = await asyncio.gather(
                store.write(counted, small),
                store.write(broken_after_write, small),
                store.write(counted, small),
                return_exceptions=True,
            )
            assert sorted(r for r in results if isinstance(r, int)) == [2, 3]
            assert isinstance(results[1], RuntimeError)
            assert runs == ["swept"] * 3  # the first, then both again in the isolated run
            verdict = await store.verify_chain()
            assert verdict.ok
            assert verdict.head.sequence == 3
        finally:
            await store.close()
