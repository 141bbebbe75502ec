"""The store's reads, each stated once for both engines.

A read that returns records checks them against their ledger events in the same read
snapshot (``ledger_rules``: DATA_LOSS names the first that disagrees). What differs
between the engines is only how one fetch or check runs, so each engine plugs in its
``primitives`` module (the ``Primitives`` protocol, coroutines): PostgreSQL's are its
asyncpg queries, awaited in the calling task; SQLite's are its plain functions as
coroutines that never suspend, so a whole read runs to its end on a reader's thread
(``sqlite.primitives.completed``). ``SnapshotReads`` states each read on one snapshot;
both stores take their async methods from ``StoreReads``, each run by the engine's
``_in_snapshot`` in one read snapshot, as they take the queue and worklist from
``page_steps.PageReads``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from assay.services.adjudication.domain.agreement import RatedRound
from assay.services.adjudication.domain.assignment import AssignmentChange, current
from assay.services.adjudication.domain.audit_filters import AuditScan, AuditWhere
from assay.services.adjudication.domain.case_listing import CaseWhere, ListedCase
from assay.services.adjudication.domain.gold_agreement import GoldAnswer
from assay.services.adjudication.domain.model import (
    AuditEvent,
    CaseSnapshot,
    GoldLabelRevision,
    Resolution,
    Review,
    Reviewer,
    TenantScope,
)
from assay.services.adjudication.storage import ledger_rules
from assay.services.adjudication.storage.interface import ApprovalRecord
from assay.services.adjudication.storage.ledger_rules import Rule

T = TypeVar("T")
# The engine's handle on one read snapshot: a SQLite connection, an asyncpg one.
DbT = TypeVar("DbT")
DbT_contra = TypeVar("DbT_contra", contravariant=True)
# One fetch or check as the engine runs it.
Query = Coroutine[Any, Any, T]


class Primitives(Protocol[DbT_contra]):
    """An engine's fetches and checks on one read snapshot, as coroutines: what each
    engine's ``primitives`` module holds (its ``queries``, ``ledger_checks``, ``listings``,
    ``approvals`` and ``assignments`` functions)."""

    def reviewer(self, db: DbT_contra, reviewer_id: str, /) -> Query[Reviewer | None]: ...

    def list_reviewers(
        self, db: DbT_contra, after: str, limit: int, /
    ) -> Query[list[Reviewer]]: ...

    def snapshot(self, db: DbT_contra, case_id: str, /) -> Query[CaseSnapshot | None]: ...

    def snapshots(
        self, db: DbT_contra, case_ids: Sequence[str], /
    ) -> Query[dict[str, CaseSnapshot]]: ...

    def case_history(
        self, db: DbT_contra, case_id: str, /
    ) -> Query[tuple[list[Review], list[Resolution]]]: ...

    def histories(
        self, db: DbT_contra, case_ids: Sequence[str], /
    ) -> Query[tuple[list[Review], list[Resolution]]]: ...

    def gold_labels(
        self,
        db: DbT_contra,
        case_id: str,
        after: tuple[str, int] | None,
        limit: int,
        scope: TenantScope,
        /,
    ) -> Query[list[GoldLabelRevision]]: ...

    def gold_labels_of_cases(
        self, db: DbT_contra, case_ids: Sequence[str], /
    ) -> Query[list[GoldLabelRevision]]: ...

    def audit_events(
        self, db: DbT_contra, after: int, limit: int, scope: TenantScope, /
    ) -> Query[list[AuditEvent]]: ...

    def case_ids(
        self,
        db: DbT_contra,
        scope: TenantScope,
        where: CaseWhere,
        after: tuple[str, int] | None,
        limit: int,
        /,
    ) -> Query[list[str]]: ...

    def audit_page(
        self,
        db: DbT_contra,
        scope: TenantScope,
        where: AuditWhere,
        after: int,
        scan: int,
        limit: int,
        /,
    ) -> Query[AuditScan]: ...

    def of_cases(
        self, db: DbT_contra, case_ids: Sequence[str], /
    ) -> Query[dict[str, list[AssignmentChange]]]: ...

    def chain_hashes(self, db: DbT_contra, after: int, /) -> Query[list[tuple[int, str]]]: ...

    def rated_rounds(self, db: DbT_contra, scope: TenantScope, /) -> Query[list[RatedRound]]: ...

    def gold_answers(self, db: DbT_contra, scope: TenantScope, /) -> Query[list[GoldAnswer]]: ...

    def approval(self, db: DbT_contra, approval_id: str, /) -> Query[ApprovalRecord | None]: ...

    def approvals_page(
        self, db: DbT_contra, scope: TenantScope, after: tuple[str, int] | None, limit: int, /
    ) -> Query[list[ApprovalRecord]]: ...

    def open_approvals(self, db: DbT_contra, limit: int, /) -> Query[list[ApprovalRecord]]: ...

    def check(
        self, db: DbT_contra, rule: Rule[T], values: Sequence[T], /
    ) -> Query[dict[str, AuditEvent]]: ...

    def check_events(self, db: DbT_contra, values: Sequence[AuditEvent], /) -> Query[None]: ...


@dataclass(frozen=True)
class SnapshotReads(Generic[DbT]):
    """Each checked read on the read snapshot ``db``, through the engine's primitives."""

    engine: Primitives[DbT]
    db: DbT

    async def reviewer(self, reviewer_id: str) -> Reviewer | None:
        found = await self.engine.reviewer(self.db, reviewer_id)
        await self.engine.check(self.db, ledger_rules.REVIEWERS, [found] if found else [])
        return found

    async def reviewers(self, after: str, limit: int) -> list[Reviewer]:
        found = await self.engine.list_reviewers(self.db, after, limit)
        await self.engine.check(self.db, ledger_rules.REVIEWERS, found)
        return found

    async def snapshot(self, case_id: str) -> CaseSnapshot | None:
        """The case with its current round's reviews and resolution, each checked."""
        snap = await self.engine.snapshot(self.db, case_id)
        if snap is not None:
            resolution = [snap.round_resolution] if snap.round_resolution is not None else []
            await self.engine.check(self.db, ledger_rules.CASES, [snap.case])
            await self.engine.check(self.db, ledger_rules.REVIEWS, snap.round_rows)
            await self.engine.check(self.db, ledger_rules.RESOLUTIONS, resolution)
        return snap

    async def case_state(self, case_id: str) -> CaseSnapshot | None:
        """The snapshot GetCaseState derives the state from (``state_snapshots`` of one)."""
        return (await self.state_snapshots([case_id])).get(case_id)

    async def state_snapshots(self, case_ids: Sequence[str]) -> dict[str, CaseSnapshot]:
        """The snapshots states are derived from, by case id (a case not found: absent), with
        every row they rest on checked: each case, all its reviews and resolutions (an earlier
        round's edited review or resolution is as much tampering as the current one's) and its
        gold labels, whose count makes the round. Each kind is read and checked for all the
        cases at once, so a listing's page costs the statements of one case."""
        snaps = await self.engine.snapshots(self.db, case_ids)
        if not snaps:
            return {}
        ids = list(snaps)
        reviews, resolutions = await self.engine.histories(self.db, ids)
        labels = await self.engine.gold_labels_of_cases(self.db, ids)
        await self.engine.check(self.db, ledger_rules.CASES, [s.case for s in snaps.values()])
        await self.engine.check(self.db, ledger_rules.REVIEWS, reviews)
        await self.engine.check(self.db, ledger_rules.RESOLUTIONS, resolutions)
        await self.engine.check(self.db, ledger_rules.GOLD_LABELS, labels)
        return snaps

    async def case_page(
        self, scope: TenantScope, where: CaseWhere, after: tuple[str, int] | None, limit: int
    ) -> list[ListedCase]:
        """The cases ``where`` keeps, each with its checked state snapshot, then who each
        is assigned to, every assignment change checked against its ledger event."""
        ids = await self.engine.case_ids(self.db, scope, where, after, limit)
        snaps = await self.state_snapshots(ids)
        found = [snaps[case_id] for case_id in ids if case_id in snaps]
        held = await self.engine.of_cases(self.db, [snap.case.case_id for snap in found])
        return [ListedCase(snap, current(held.get(snap.case.case_id, []))) for snap in found]

    async def audit_page(
        self, scope: TenantScope, where: AuditWhere, after: int, scan: int, limit: int
    ) -> AuditScan:
        """The engine's ``listings.audit_page``: its events re-hashed and linked."""
        return await self.engine.audit_page(self.db, scope, where, after, scan, limit)

    async def case_detail(
        self, case_id: str
    ) -> tuple[CaseSnapshot, list[Review], list[Resolution]] | None:
        snap = await self.engine.snapshot(self.db, case_id)
        if snap is None:
            return None
        reviews, resolutions = await self.engine.case_history(self.db, case_id)
        # The round's reviews and resolution are among the case's: checked once.
        await self.engine.check(self.db, ledger_rules.CASES, [snap.case])
        await self.engine.check(self.db, ledger_rules.REVIEWS, reviews)
        await self.engine.check(self.db, ledger_rules.RESOLUTIONS, resolutions)
        return snap, reviews, resolutions

    async def gold_labels(
        self, case_id: str, after: tuple[str, int] | None, limit: int, scope: TenantScope
    ) -> list[GoldLabelRevision]:
        found = await self.engine.gold_labels(self.db, case_id, after, limit, scope)
        await self.engine.check(self.db, ledger_rules.GOLD_LABELS, found)
        return found

    async def audit_events(self, after: int, limit: int, scope: TenantScope) -> list[AuditEvent]:
        """Events after ``after``, each re-hashed and linked to its predecessor's stored
        hash (``ledger_rules.check_links``)."""
        found = await self.engine.audit_events(self.db, after, limit, scope)
        await self.engine.check_events(self.db, found)
        return found


class StoreReads(Generic[DbT]):
    """A store's reads, the same on both engines: each run by the engine's ``_in_snapshot``
    in one read snapshot."""

    async def _in_snapshot(self, read: Callable[[SnapshotReads[DbT]], Coroutine[Any, Any, T]]) -> T:
        """``read`` of the engine's ``SnapshotReads`` on one read snapshot."""
        raise NotImplementedError

    async def reviewer(self, reviewer_id: str) -> Reviewer | None:
        return await self._in_snapshot(lambda reads: reads.reviewer(reviewer_id))

    async def reviewers(self, after: str, limit: int) -> list[Reviewer]:
        return await self._in_snapshot(lambda reads: reads.reviewers(after, limit))

    async def snapshot(self, case_id: str) -> CaseSnapshot | None:
        return await self._in_snapshot(lambda reads: reads.snapshot(case_id))

    async def case_state(self, case_id: str) -> CaseSnapshot | None:
        """The snapshot GetCaseState derives the state from (``SnapshotReads.case_state``)."""
        return await self._in_snapshot(lambda reads: reads.case_state(case_id))

    async def case_page(
        self, scope: TenantScope, where: CaseWhere, after: tuple[str, int] | None, limit: int
    ) -> list[ListedCase]:
        """Up to ``limit`` cases of ``scope`` after ``after`` that ``where`` keeps, each read
        and checked as GetCaseState reads it, in one snapshot."""
        return await self._in_snapshot(lambda reads: reads.case_page(scope, where, after, limit))

    async def audit_page(
        self, scope: TenantScope, where: AuditWhere, after: int, scan: int, limit: int
    ) -> AuditScan:
        """The matching events of a window of ``scan`` events after ``after``, checked."""
        return await self._in_snapshot(
            lambda reads: reads.audit_page(scope, where, after, scan, limit)
        )

    async def case_detail(
        self, case_id: str
    ) -> tuple[CaseSnapshot, list[Review], list[Resolution]] | None:
        return await self._in_snapshot(lambda reads: reads.case_detail(case_id))

    async def gold_labels(
        self, case_id: str, after: tuple[str, int] | None, limit: int, scope: TenantScope
    ) -> list[GoldLabelRevision]:
        return await self._in_snapshot(
            lambda reads: reads.gold_labels(case_id, after, limit, scope)
        )

    async def audit_events(self, after: int, limit: int, scope: TenantScope) -> list[AuditEvent]:
        """Events after ``after``, each re-hashed and linked to its predecessor's stored hash
        in the same snapshot (DATA_LOSS naming the first that fails)."""
        return await self._in_snapshot(lambda reads: reads.audit_events(after, limit, scope))

    async def chain_hashes(self, after: int) -> list[tuple[int, str]]:
        """(sequence, hash) of every committed audit event after ``after``, in order: the
        transparency log's leaves."""
        return await self._in_snapshot(lambda reads: reads.engine.chain_hashes(reads.db, after))

    async def rated_rounds(self, scope: TenantScope) -> list[RatedRound]:
        return await self._in_snapshot(lambda reads: reads.engine.rated_rounds(reads.db, scope))

    async def gold_answers(self, scope: TenantScope) -> list[GoldAnswer]:
        return await self._in_snapshot(lambda reads: reads.engine.gold_answers(reads.db, scope))

    # The engines' approval and assignment reads check what they return themselves.

    async def approval(self, approval_id: str) -> ApprovalRecord | None:
        return await self._in_snapshot(lambda reads: reads.engine.approval(reads.db, approval_id))

    async def approvals(
        self, scope: TenantScope, after: tuple[str, int] | None, limit: int
    ) -> list[ApprovalRecord]:
        return await self._in_snapshot(
            lambda reads: reads.engine.approvals_page(reads.db, scope, after, limit)
        )

    async def open_approvals(self, limit: int) -> list[ApprovalRecord]:
        return await self._in_snapshot(lambda reads: reads.engine.open_approvals(reads.db, limit))

    async def assignments(self, case_ids: Sequence[str]) -> dict[str, list[AssignmentChange]]:
        return await self._in_snapshot(lambda reads: reads.engine.of_cases(reads.db, case_ids))
