"""The writer's remembered case snapshots never disagree with the rows on disk.

The writer keeps each case's current round (reviews, resolution, revision count)
as the last job left it, so a review does not re-read its case's rows. These
tests drive the real use cases against a real SQLite file, with random mixes of
reviews, resolutions, freezes, deletions, refused requests and jobs that fail
after writing, many of them in one group-committed batch; after every step each
case's snapshot as the writer sees it must equal the one a fresh reader gets.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import AssayError
from assay.services.adjudication.domain import reviews
from assay.services.adjudication.domain.model import (
    Basis,
    CaseInput,
    CaseSnapshot,
    Lineage,
    Outcome,
    ReviewerKind,
)
from assay.services.adjudication.domain.resolution import ResolveRequest
from assay.services.adjudication.domain.reviews import ReviewSubmission
from assay.services.adjudication.domain.times import now
from assay.services.adjudication.storage import Store, WriteTx
from assay.services.adjudication.use_cases.operations import Adjudication
from assay.services.adjudication.use_cases.retries import RequestKey

REVIEWERS = 4
TENANTS = ("tenant-a", "tenant-b")
LABELS = ("key", "none")


def _key(method: str) -> RequestKey:
    return RequestKey(uuid.uuid4().hex, method, uuid.uuid4().hex)


class InjectedFailure(Exception):
    """Raised by a job after it wrote, so its savepoint is rolled back."""


@dataclass
class World:
    adjudication: Adjudication
    store: Store
    case_ids: list[str] = field(default_factory=list)

    def case(self, index: int) -> str:
        return self.case_ids[index % len(self.case_ids)] if self.case_ids else "case_missing"

    async def enqueue(self, tenant: str) -> None:
        data = CaseInput(
            tenant, "api:x", "retries.mode", LABELS, (), "", "key", Lineage("test"), None
        )
        raw = await self.adjudication.enqueue_case(
            _key("EnqueueCase"), data, lambda c: c.case_id.encode()
        )
        self.case_ids.append(raw.decode())

    async def run(self, op: tuple[str, int, int, int]) -> None:
        kind, case_index, reviewer, choice = op
        case_id = self.case(case_index)
        adjudication = self.adjudication
        if kind == "enqueue":
            await self.enqueue(TENANTS[choice % 2])
        elif kind in ("label", "unresolved", "next_round"):
            outcome = Outcome.LABEL if kind != "unresolved" else Outcome.UNRESOLVED
            label = LABELS[choice % 2] if outcome is Outcome.LABEL else None
            reason = "" if label is not None else "cannot tell"
            round_ = choice if kind == "next_round" else 0
            sub = ReviewSubmission(case_id, f"r{reviewer}", round_, outcome, label, reason)
            await adjudication.submit_review(_key("SubmitReview"), sub, lambda r: b"")
        elif kind == "unanimous":
            req = ResolveRequest(case_id, Basis.UNANIMOUS_AGREEMENT, None, "")
            await adjudication.resolve_case(_key("ResolveCase"), req, lambda r: b"")
        elif kind == "adjudicate":
            basis = Basis.ADJUDICATOR_DECISION
            req = ResolveRequest(case_id, basis, LABELS[choice % 2], f"r{reviewer}")
            await adjudication.resolve_case(_key("ResolveCase"), req, lambda r: b"")
        elif kind == "freeze":
            await adjudication.freeze(_key("FreezeGoldLabel"), case_id, 0, lambda r: b"")
        elif kind == "delete_tenant":
            tenant = TENANTS[choice % 2]
            await adjudication.delete_tenant(_key("DeleteTenantRecords"), tenant, lambda r: b"")
        elif kind == "broken":
            await self.store.write(lambda tx: _review_then_fail(tx, case_id, reviewer), small=True)
        else:  # pragma: no cover - the strategy only draws the kinds above
            raise AssertionError(kind)


def _review_then_fail(tx: WriteTx, case_id: str, reviewer: int) -> None:
    """Write a review the way the use case does, remember the new round, then fail."""
    snap = tx.snapshot(case_id)
    if snap is not None:
        sub = ReviewSubmission(case_id, f"r{reviewer}", 0, Outcome.LABEL, "key", "")
        review = reviews.new_review(uuid.uuid4().hex, snap, sub, '"key"', now())
        tx.insert_review(review)
        after = CaseSnapshot(snap.case, snap.revision_count, (*snap.round_reviews, review), None)
        tx.remember_snapshot(after)
    raise InjectedFailure("after writing")


async def _writer_view(store: Store, case_id: str) -> CaseSnapshot | None:
    found: CaseSnapshot | None = await store.write(lambda tx: tx.snapshot(case_id), small=True)
    return found


async def _scenario(
    path: Path, steps: list[list[tuple[str, int, int, int]]], budget: int | None = None
) -> int:
    store = await Store.open(path)
    if budget is not None:  # a few cases' worth: the writer keeps forgetting and refilling
        store.writer.memory.max_bytes = budget
    world = World(Adjudication(store), store)
    compared = 0
    try:
        for i in range(REVIEWERS):
            await world.adjudication.register_reviewer(
                _key("RegisterReviewer"), f"r{i}", ReviewerKind.HUMAN, "lead", lambda _: b""
            )
        for tenant in TENANTS:
            await world.enqueue(tenant)
        for group in steps:
            # One gather: the jobs share a batch, failures and all.
            runs = (world.run(op) for op in group)
            outcomes = await asyncio.gather(*runs, return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException) and not isinstance(
                    outcome, (AssayError, InjectedFailure)
                ):
                    raise outcome
            for case_id in world.case_ids:
                assert await _writer_view(store, case_id) == await store.snapshot(case_id), case_id
                compared += 1
            memory = store.writer.memory
            assert 0 <= memory.bytes <= memory.max_bytes
        assert (await store.verify_chain()).ok
    finally:
        await store.close()
    return compared


KINDS = (
    "enqueue",
    "label",
    "label",
    "label",
    "unresolved",
    "next_round",
    "unanimous",
    "adjudicate",
    "freeze",
    "freeze",
    "delete_tenant",
    "broken",
)
ops = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, 5),
    st.integers(0, REVIEWERS - 1),
    st.integers(0, 3),
)


class TestRememberedSnapshots:
    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(st.lists(ops, min_size=1, max_size=6), min_size=1, max_size=12),
        st.sampled_from([None, 12_000]),
    )
    def test_the_writer_view_always_equals_the_stored_rows(
        self, steps: list[list[tuple[str, int, int, int]]], budget: int | None
    ) -> None:
        """With the default memory budget and with one so small that it keeps filling up."""
        with tempfile.TemporaryDirectory() as tmp:
            compared = asyncio.run(_scenario(Path(tmp) / "cache.db", steps, budget))
        assert compared >= len(steps)  # every step compared at least the seeded cases

    async def test_a_full_round_trip_reads_the_case_rows_once(self, tmp_path: Path) -> None:
        """Enqueue, two reviews, resolve, freeze, reopen: each job finds the round it needs
        without reading the case's rows again, and the answers match the stored rows."""
        store = await Store.open(tmp_path / "trip.db")
        world = World(Adjudication(store), store)
        try:
            for i in range(3):
                await world.adjudication.register_reviewer(
                    _key("RegisterReviewer"), f"r{i}", ReviewerKind.HUMAN, "lead", lambda _: b""
                )
            await world.enqueue("tenant-a")
            statements: list[str] = []
            await store.write(lambda tx: tx._db.set_trace_callback(statements.append), small=True)
            for op in (
                ("label", 0, 0, 0),
                ("label", 0, 1, 1),
                ("adjudicate", 0, 2, 0),
                ("freeze", 0, 0, 0),
                ("next_round", 0, 0, 2),
            ):
                await world.run(op)
            await store.write(lambda tx: tx._db.set_trace_callback(None), small=True)
            reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
            # Only retry-record lookups, the freeze's reviewer lookups, ledger checks of the
            # round's records and each review's check of the case's assignment remain.
            allowed = (
                "FROM idempotency",
                "FROM reviewers",
                "FROM audit_events",
                "FROM case_assignments",
            )
            assert all(any(a in s for a in allowed) for s in reads), reads
            snap = await store.snapshot(world.case_ids[0])
            assert snap is not None
            assert (snap.round, len(snap.round_reviews)) == (2, 1)
            assert await _writer_view(store, world.case_ids[0]) == snap
        finally:
            await store.close()
