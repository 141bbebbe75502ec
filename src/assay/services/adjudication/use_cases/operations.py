"""The service's mutations: each one is one job in one group-committed transaction.

This is the layer between the gRPC servicer and storage. A mutation validates
its fields first (cheap, outside the writer), then runs as a job in the
writer's transaction: look up the retry key, read, check the domain rules,
write the row and its hash-chained audit event, and remember the rendered
response under the request id (``retries``). Reads are in ``lookups``.

Every mutation takes the ``Caller``: the identity rules that need no stored
data (``permissions``) run before the job, the tenant and bound-identity rules
inside it, and the caller's identity becomes the audit event's actor and the
owner of its request id. ``DEV_CALLER`` (the default) is a server without
authentication: every tenant, no identity rule, no actor.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from assay.errors import AlreadyExists, FailedPrecondition, FieldViolation, Reason, Violations
from assay.services.adjudication.domain import (
    batches,
    cases,
    gold,
    permissions,
    records,
    resolution,
    reviews,
)
from assay.services.adjudication.domain.fields import check_request_id, require_id, require_tenant
from assay.services.adjudication.domain.model import (
    DEV_CALLER,
    AuditEventType,
    Caller,
    Case,
    CaseInput,
    CaseSnapshot,
    CaseState,
    DeletedCounts,
    GoldLabelRevision,
    RecordKind,
    Resolution,
    Review,
    Reviewer,
    ReviewerKind,
)
from assay.services.adjudication.domain.permissions import RegistrationPolicy
from assay.services.adjudication.domain.review_policy import ReviewPolicy
from assay.services.adjudication.domain.reviewers import (
    check_registration,
    new_reviewer,
    reviewer_not_found,
)
from assay.services.adjudication.domain.state import derive_state
from assay.services.adjudication.domain.times import now, to_micros
from assay.services.adjudication.storage.interface import Store, WriteTx
from assay.services.adjudication.use_cases.assignments import check_assigned
from assay.services.adjudication.use_cases.retries import RequestKey, owned, retryable

T = TypeVar("T")


def _fields(key: RequestKey) -> Violations:
    """A request's violations, starting with its request id's: every field of a request is
    checked before any is reported, and nothing is stored unless all are well formed."""
    found = Violations()
    found.check(check_request_id, key.request_id)
    return found


def _refuse_invalid(
    key: RequestKey, validate: Callable[[T, Violations | None], None], value: T
) -> None:
    """Refuse ``value``'s field violations (``validate``'s) with its request id's, together."""
    found = _fields(key)
    validate(value, found)
    found.raise_if_any()


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def _snapshot(tx: WriteTx, case_id: str, caller: Caller) -> CaseSnapshot:
    """The case, if the caller may see it: another tenant's case does not exist for them."""
    return permissions.visible_case(caller, tx.snapshot(case_id), case_id)


def _reviewer(tx: WriteTx, reviewer_id: str, caller: Caller, path: str) -> Reviewer:
    found = tx.reviewer(reviewer_id)
    if found is None:
        raise reviewer_not_found(reviewer_id, path)
    permissions.check_bound_identity(caller, found, path)
    return found


class Adjudication:
    """Every use case of the service, over one ``Store``. ``registration``: how reviewers are
    bound when callers are authenticated; ``review``: reviews per round and assigned-only
    tenants (both from the server's options)."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime] = now,
        registration: RegistrationPolicy | None = None,
        review: ReviewPolicy | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.registration = registration or RegistrationPolicy()
        self.review = review or ReviewPolicy()

    async def _idempotent(
        self,
        key: RequestKey,
        caller: Caller,
        job: Callable[[WriteTx, datetime], T],
        render: Callable[[T], bytes],
        scope: Callable[[T], tuple[str, str]],
        small: bool = True,
    ) -> bytes:
        """``small``: a few rows of one case (the default); deletions over many cases say False,
        so the writer keeps them off the event loop. The request id is the caller's own."""
        job_run = retryable(owned(key, caller), job, render, scope, self.clock)
        return await self.store.write(job_run, small)

    # --- mutations ---------------------------------------------------------

    async def register_reviewer(
        self,
        key: RequestKey,
        reviewer_id: str,
        kind: ReviewerKind | None,
        attested_by: str,
        render: Callable[[Reviewer], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        found = _fields(key)
        with found.catching():
            valid = check_registration(reviewer_id, kind)
        found.raise_if_any()
        bound = permissions.bind_registration(
            caller, reviewer_id, valid, attested_by, self.registration
        )
        identity = (bound.identity_issuer, bound.identity_subject)
        new_reviewer(reviewer_id, valid, bound.attested_by, self.clock(), identity=identity)

        def job(tx: WriteTx, at: datetime) -> Reviewer:
            reviewer = new_reviewer(reviewer_id, valid, bound.attested_by, at, identity=identity)
            if tx.reviewer(reviewer_id) is not None:
                raise AlreadyExists(
                    Reason.REVIEWER_ALREADY_EXISTS, f"reviewer {reviewer_id} exists already"
                )
            tx.insert_reviewer(reviewer)
            committed = records.reviewer_commitment(reviewer)
            payload = {
                "reviewer_id": reviewer_id,
                "kind": reviewer.kind.value,
                "attestation": committed["attestation"],
                "register_time": committed["register_time"],
            }
            if reviewer.identity_subject:  # the binding is on the ledger too
                payload["identity_issuer"] = reviewer.identity_issuer
                payload["identity_subject"] = reviewer.identity_subject
            tx.append_event(AuditEventType.REVIEWER_REGISTERED, payload, actor=caller.actor)
            return reviewer

        return await self._idempotent(key, caller, job, render, lambda _: ("", ""))

    async def enqueue_case(
        self,
        key: RequestKey,
        data: CaseInput,
        render: Callable[[Case], bytes],
        caller: Caller = DEV_CALLER,
        unreadable: Sequence[FieldViolation] = (),
    ) -> bytes:
        """``unreadable``: what reading the request already found wrong (an expiry no
        datetime holds), listed with the case's own violations."""
        found = _fields(key)
        found.extend(unreadable)
        cases.validate_case(data, self.clock(), found=found)
        found.raise_if_any()
        permissions.check_tenant_write(caller, data.tenant, "case.tenant")

        def job(tx: WriteTx, at: datetime) -> Case:
            case = cases.new_case(
                new_id("case"), data, at, default_reviews=self.review.reviews_for(data.predicate)
            )
            tx.insert_case(case)
            tx.remember_snapshot(CaseSnapshot(case, 0, (), None))
            tx.append_event(
                AuditEventType.CASE_ENQUEUED,
                records.enqueued_payload(case),  # new_case just digested its content
                tenant=case.tenant,
                actor=caller.actor,
            )
            return case

        return await self._idempotent(
            key,
            caller,
            job,
            render,
            lambda case: (case.tenant, case.case_id),
        )

    async def enqueue_cases(
        self,
        key: RequestKey,
        items: Sequence[batches.BatchItem],
        render: Callable[[list[Case]], bytes],
        caller: Caller = DEV_CALLER,
        required_reviews: int = 0,
    ) -> bytes:
        """All the cases or none: every violation of the batch is reported before anything
        runs, and the job stores them in one transaction, one CASE_ENQUEUED event each in
        request order; a case that fails inside it (its expiry passed while it waited)
        undoes the whole job, rows and events (the writer rolls a failed job back alone).
        ``required_reviews``: the batch's reviews per round where a case does not say."""
        batches.check_batch(key.request_id, items, self.clock(), required_reviews)
        batches.check_tenants(caller, items)

        def default_reviews(data: CaseInput) -> int:
            return required_reviews or self.review.reviews_for(data.predicate)

        def job(tx: WriteTx, at: datetime) -> list[Case]:
            stored: list[Case] = []
            for i, item in enumerate(items):
                case = cases.new_case(
                    new_id("case"), item.data, at, batches.path(i), default_reviews(item.data)
                )
                tx.insert_case(case)
                tx.remember_snapshot(CaseSnapshot(case, 0, (), None))
                tx.append_event(
                    AuditEventType.CASE_ENQUEUED,
                    records.enqueued_payload(case),
                    tenant=case.tenant,
                    actor=caller.actor,
                )
                stored.append(case)
            return stored

        return await self._idempotent(
            key, caller, job, render, batches.response_scope, small=len(items) <= 1
        )

    async def submit_review(
        self,
        key: RequestKey,
        sub: reviews.ReviewSubmission,
        render: Callable[[tuple[Review, CaseState]], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        _refuse_invalid(key, reviews.validate_submission, sub)
        permissions.check_acting_as(caller, sub.reviewer_id, "reviewer_id")

        def job(tx: WriteTx, at: datetime) -> tuple[Review, CaseState, str]:
            snap = _snapshot(tx, sub.case_id, caller)
            _reviewer(tx, sub.reviewer_id, caller, "reviewer_id")
            label_key = reviews.check_submission(snap, sub, at)
            check_assigned(tx, snap.case, sub.reviewer_id, self.review)
            review = reviews.new_review(new_id("rev"), snap, sub, label_key, at)
            return _recorded(tx, snap, review, caller)

        return await self._reviewed(key, caller, job, render)

    async def revise_review(
        self,
        key: RequestKey,
        rev: reviews.Revision,
        render: Callable[[tuple[Review, CaseState]], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        """AmendReview and WithdrawReview: a new record superseding the caller's own latest
        review of an undecided round (``rev.withdraw``: a withdrawal)."""
        _refuse_invalid(key, reviews.validate_revision, rev)

        def job(tx: WriteTx, at: datetime) -> tuple[Review, CaseState, str]:
            target = tx.review(rev.review_id)
            snap = tx.snapshot(target.case_id) if target is not None else None
            if target is None or snap is None or not caller.scope.allows(snap.case.tenant):
                raise reviews.review_not_found(rev.review_id)
            permissions.check_acting_as(caller, target.reviewer_id, "review_id")
            _reviewer(tx, target.reviewer_id, caller, "review_id")
            label_key = reviews.check_revision(snap, target, rev, at)
            revised = reviews.revised_review(new_id("rev"), target, rev, label_key, at)
            return _recorded(tx, snap, revised, caller)

        return await self._reviewed(key, caller, job, render)

    async def _reviewed(
        self,
        key: RequestKey,
        caller: Caller,
        job: Callable[[WriteTx, datetime], tuple[Review, CaseState, str]],
        render: Callable[[tuple[Review, CaseState]], bytes],
    ) -> bytes:
        """A review record's job run once per request id; its response kept with the case."""
        return await self._idempotent(
            key,
            caller,
            job,
            lambda r: render((r[0], r[1])),
            lambda r: (r[2], r[0].case_id),
        )

    async def resolve_case(
        self,
        key: RequestKey,
        req: resolution.ResolveRequest,
        render: Callable[[tuple[Resolution, CaseState]], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        _refuse_invalid(key, resolution.validate_resolve, req)
        adjudicator = req.adjudicator_reviewer_id
        if adjudicator:
            permissions.check_acting_as(caller, adjudicator, "adjudicator_reviewer_id")

        def job(tx: WriteTx, at: datetime) -> tuple[Resolution, CaseState, str]:
            snap = _snapshot(tx, req.case_id, caller)
            if adjudicator:
                _reviewer(tx, adjudicator, caller, "adjudicator_reviewer_id")
            decided = resolution.decide(snap, req, at)
            tx.insert_resolution(decided)
            tx.append_event(
                AuditEventType.CASE_RESOLVED,
                records.resolution_commitment(decided),
                tenant=snap.case.tenant,
                actor=caller.actor,
            )
            after = CaseSnapshot(snap.case, snap.revision_count, snap.round_rows, decided)
            tx.remember_snapshot(after)
            return decided, derive_state(after), snap.case.tenant

        return await self._idempotent(
            key,
            caller,
            job,
            lambda r: render((r[0], r[1])),
            lambda r: (r[2], r[0].case_id),
        )

    async def freeze(
        self,
        key: RequestKey,
        case_id: str,
        expected_revision: int,
        render: Callable[[GoldLabelRevision], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        found = _fields(key)
        found.check(require_id, case_id, "case_id")
        if expected_revision < 0:
            found.add("expected_revision", "must not be negative")
        found.raise_if_any()

        def job(tx: WriteTx, at: datetime) -> GoldLabelRevision:
            snap = _snapshot(tx, case_id, caller)
            following = snap.revision_count + 1
            if expected_revision and expected_revision < following:
                raise AlreadyExists(
                    Reason.GOLD_LABEL_REVISION_EXISTS,
                    f"gold label {case_id} revision {expected_revision} exists already",
                    metadata={"case_id": case_id, "revision": str(expected_revision)},
                )
            if expected_revision > following:
                raise FailedPrecondition(
                    Reason.ROUND_MISMATCH,
                    f"the next revision of {case_id} is {following}, not {expected_revision}",
                    metadata={"current_round": str(following)},
                )
            decided = snap.round_resolution
            if decided is None:
                raise FailedPrecondition(
                    Reason.ROUND_NOT_RESOLVED,
                    f"round {snap.round} of case {case_id} is not resolved; resolve it first",
                )
            people = {r.reviewer_id for r in snap.round_reviews}
            if decided.adjudicator_reviewer_id:
                people.add(decided.adjudicator_reviewer_id)
            found = tx.reviewers(people)
            _check_recorded(tx, snap, decided, found)
            kinds = {rid: r.kind for rid, r in found.items()}
            revision = gold.new_revision(snap, decided, kinds, at)
            tx.insert_gold_label(revision)
            tx.append_event(
                AuditEventType.GOLD_LABEL_FROZEN,
                {
                    "case_id": case_id,
                    "revision": str(revision.revision),
                    "digest": revision.digest,
                    "provenance": revision.provenance.value,
                },
                tenant=revision.tenant,
                actor=caller.actor,
            )
            # Frozen: the next round has no reviews or resolution yet.
            tx.remember_snapshot(CaseSnapshot(snap.case, revision.revision, (), None))
            return revision

        return await self._idempotent(
            key,
            caller,
            job,
            render,
            lambda rev: (rev.tenant, rev.case_id),
        )

    async def delete_tenant(
        self,
        key: RequestKey,
        tenant: str,
        render: Callable[[tuple[DeletedCounts, int]], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        found = _fields(key)
        found.check(require_tenant, tenant, "tenant")
        found.raise_if_any()
        permissions.check_tenant_write(caller, tenant, "tenant")

        def job(tx: WriteTx, at: datetime) -> tuple[DeletedCounts, int]:
            counts = tx.delete_tenant_cases(tenant)
            tx.delete_tenant_responses(tenant)
            event = tx.append_event(
                AuditEventType.TENANT_RECORDS_DELETED,
                {"tenant": tenant, **_counted(counts)},
                tenant=tenant,
                actor=caller.actor,
            )
            return counts, event.sequence

        return await self._idempotent(key, caller, job, render, lambda _: ("", ""), small=False)

    async def sweep(
        self,
        key: RequestKey,
        render: Callable[[tuple[DeletedCounts, int]], bytes],
        caller: Caller = DEV_CALLER,
    ) -> bytes:
        """Delete the expired cases of the caller's tenants."""
        scope, tenant, named = permissions.sweep_scope(caller)

        def job(tx: WriteTx, at: datetime) -> tuple[DeletedCounts, int]:
            counts = tx.delete_expired(at, scope)
            event = tx.append_event(
                AuditEventType.EXPIRED_RECORDS_SWEPT,
                {"as_of": str(to_micros(at)), **named, **_counted(counts)},
                tenant=tenant,
                actor=caller.actor,
            )
            return counts, event.sequence

        return await self._idempotent(key, caller, job, render, lambda _: ("", ""), small=False)


def _recorded(
    tx: WriteTx, snap: CaseSnapshot, review: Review, caller: Caller
) -> tuple[Review, CaseState, str]:
    """Store ``review`` (a first answer or a revision) with its REVIEW_SUBMITTED event; the
    review, the state as the caller may see it after it, and the case's tenant."""
    tx.insert_review(review)
    tx.append_event(
        AuditEventType.REVIEW_SUBMITTED,
        records.review_commitment(review),
        tenant=snap.case.tenant,
        actor=caller.actor,
    )
    after = CaseSnapshot(snap.case, snap.revision_count, (*snap.round_rows, review), None)
    tx.remember_snapshot(after)
    return review, permissions.state_seen_by(caller, after), snap.case.tenant


def _check_recorded(
    tx: WriteTx, snap: CaseSnapshot, decided: Resolution, found: dict[str, Reviewer]
) -> None:
    """DATA_LOSS unless the round's reviews, its resolution and the reviewers involved
    match what their ledger events recorded: a freeze never builds on an edited row."""
    tenant = snap.case.tenant
    reviewed = {r.review_id: r for r in snap.round_rows}
    expected: list[tuple[RecordKind, str, records.Commitment, dict[str, str] | None]] = []
    review_events = tx.recorded(AuditEventType.REVIEW_SUBMITTED, "review_id", reviewed, tenant)
    by_id = {p.get("review_id", ""): p for p in review_events}
    for review_id, value in reviewed.items():
        expected.append(
            (RecordKind.REVIEW, review_id, records.review_commitment(value), by_id.get(review_id))
        )
    resolved = [
        p
        for p in tx.recorded(AuditEventType.CASE_RESOLVED, "case_id", [decided.case_id], tenant)
        if p.get("round") == str(decided.round)
    ]
    expected.append(
        (
            RecordKind.RESOLUTION,
            records.resolution_id(decided),
            records.resolution_commitment(decided),
            resolved[0] if resolved else None,
        )
    )
    registered = tx.recorded(AuditEventType.REVIEWER_REGISTERED, "reviewer_id", found, "")
    by_reviewer = {p.get("reviewer_id", ""): p for p in registered}
    for reviewer_id, reviewer in found.items():
        expected.append(
            (
                RecordKind.REVIEWER,
                reviewer_id,
                records.reviewer_commitment(reviewer),
                by_reviewer.get(reviewer_id),
            )
        )
    for kind, record_id, commitment, event in expected:
        why = records.mismatch(commitment, event)
        if why:
            raise records.record_loss(kind, record_id, why, "refusing to freeze on it")


def _counted(counts: DeletedCounts) -> dict[str, str]:
    return {
        "cases": str(counts.cases),
        "reviews": str(counts.reviews),
        "resolutions": str(counts.resolutions),
    }
