"""The approval use cases: request, decide, revoke, consume, read, list and watch.

Each change is one job in the writer's transaction, like every adjudication mutation:
read the approval with its steps (locked, and checked against the ledger), let
``domain.approvals`` decide, insert the step, append its audit event (and the
APPROVAL_GRANTED or APPROVAL_DENIED transition it causes), remember the response under
the request id. After the commit the ``ApprovalHub`` wakes every watcher of the approval
in this process (other replicas hear of it through the store's notifications), and the
``Notifier`` tells the configured webhook.

Approvals need identities: without authentication there is no requester to keep from
approving, so every call is refused with AUTHENTICATION_REQUIRED.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import datetime, timedelta

from assay.errors import FailedPrecondition, NotFound, Reason, Violations
from assay.runtime import paging
from assay.services.adjudication.domain import approvals, permissions, records, table_changes
from assay.services.adjudication.domain.approval_policy import ApprovalPolicy, check_approvable
from assay.services.adjudication.domain.approvals import (
    MAX_REASON_CHARS,
    Approval,
    ApprovalAsk,
    ApprovalChange,
    ApprovalState,
    ApprovalView,
    ChangeKind,
    Step,
    StepKind,
)
from assay.services.adjudication.domain.fields import (
    check_request_id,
    require_id,
    require_tenant,
    require_text,
)
from assay.services.adjudication.domain.model import Actor, AuditEventType, Caller
from assay.services.adjudication.domain.times import now, to_micros
from assay.services.adjudication.storage.interface import Store, WriteTx
from assay.services.adjudication.use_cases.approval_hub import ApprovalHub
from assay.services.adjudication.use_cases.notifier import Notifier
from assay.services.adjudication.use_cases.operations import new_id
from assay.services.adjudication.use_cases.retries import RequestKey, owned, retryable

MAX_TEXT = 512
# How many rows a filtered listing reads for one page before it returns what it has.
SCAN_PAGES = 10

_STEP_EVENTS = {
    StepKind.APPROVED: AuditEventType.APPROVAL_DECIDED,
    StepKind.DENIED: AuditEventType.APPROVAL_DECIDED,
    StepKind.REVOKED: AuditEventType.APPROVAL_REVOKED,
    StepKind.CONSUMED: AuditEventType.APPROVAL_CONSUMED,
    StepKind.EXPIRED: AuditEventType.APPROVAL_EXPIRED,
}


def _actor(caller: Caller) -> Actor:
    if caller.actor is None:
        raise FailedPrecondition(
            Reason.AUTHENTICATION_REQUIRED,
            "approvals need authenticated callers: start the server with authentication",
        )
    return caller.actor


def _check_reason(found: Violations, reason: str, path: str = "reason") -> None:
    found.check(require_text, reason, path, MAX_REASON_CHARS)


def not_found(approval_id: str) -> NotFound:
    return NotFound(Reason.APPROVAL_NOT_FOUND, f"approval {approval_id} not found")


def _visible(
    caller: Caller, found: tuple[Approval, list[Step]] | None, approval_id: str
) -> tuple[Approval, list[Step]]:
    """Another tenant's approval does not exist for the caller."""
    if found is None or not caller.scope.allows(found[0].tenant):
        raise not_found(approval_id)
    return found


class Approvals:
    """Every approval use case over one ``Store``, under one ``ApprovalPolicy``."""

    def __init__(
        self,
        store: Store,
        policy: ApprovalPolicy,
        clock: Callable[[], datetime] = now,
        hub: ApprovalHub | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock
        self.hub = hub or ApprovalHub()
        self.notifier = notifier

    # --- changes -------------------------------------------------------------

    async def _write(
        self,
        key: RequestKey,
        caller: Caller,
        job: Callable[[WriteTx, datetime], ApprovalView],
        render: Callable[[ApprovalView], bytes],
    ) -> bytes:
        done: list[ApprovalView] = []

        def run(tx: WriteTx, at: datetime) -> ApprovalView:
            view = job(tx, at)
            tx.notify_approval(view.approval.approval_id)
            done[:] = [view]  # a batch the writer runs again records its view once
            return view

        raw = await self.store.write(
            retryable(
                owned(key, caller), run, render, lambda v: (v.approval.tenant, ""), self.clock
            ),
            small=True,
        )
        self._announce(done)  # empty when the request id answered a retry
        return raw

    def _announce(self, committed: list[ApprovalView]) -> None:
        """After the commit: wake this process's watchers, tell the webhook."""
        for view in committed:
            self.hub.changed(view.approval.approval_id)
            if self.notifier is not None:
                self.notifier.send(view)

    async def request(
        self,
        key: RequestKey,
        ask: ApprovalAsk,
        render: Callable[[ApprovalView], bytes],
        caller: Caller,
    ) -> bytes:
        requester = _actor(caller)
        found = Violations()
        found.check(check_request_id, key.request_id)
        if not key.request_id:
            found.add("request_id", "required: approvals are retry-safe by request id")
        found.check(require_tenant, ask.tenant, "tenant")
        _check_action(found, ask)
        _check_reason(found, ask.reason)
        at = self.clock()
        expire_time = self.policy.expire_time(ask.expire_time, at)
        if isinstance(expire_time, str):
            found.add("expire_time", expire_time)
        grant_lifetime = self.policy.grant_for(ask.grant_lifetime)
        if isinstance(grant_lifetime, str):
            found.add("grant_lifetime", grant_lifetime)
        found.raise_if_any()
        assert isinstance(expire_time, datetime)
        assert isinstance(grant_lifetime, timedelta)
        if ask.table_change is not None:
            action = table_changes.as_candidate(ask.table_change)
            quorum = self.policy.table_change_quorum
        else:
            assert ask.candidate is not None  # the wire gives one or the other
            action = ask.candidate
            check_approvable(action)
            quorum = self.policy.quorum_for(action.required_side_effects)
        permissions.check_tenant_write(caller, ask.tenant, "tenant")
        pending_for = expire_time - at

        def job(tx: WriteTx, at: datetime) -> ApprovalView:
            draft = Approval(
                approval_id=new_id("approval"),
                tenant=ask.tenant,
                subject=ask.subject,
                predicate=ask.predicate,
                candidate=action,
                requester=requester,
                reason=ask.reason,
                request_time=at,
                expire_time=at + pending_for,
                grant_lifetime=grant_lifetime,
                quorum=quorum,
                deny_ends=self.policy.deny_ends,
            )
            approval = replace(draft, content_digest=approvals.approval_digest(draft))
            tx.insert_approval(approval)
            tx.append_event(
                AuditEventType.APPROVAL_REQUESTED,
                records.requested_payload(approval),
                tenant=approval.tenant,
                actor=requester,
            )
            return ApprovalView(approval, (), approvals.standing(approval, [], at))

        return await self._write(key, caller, job, render)

    async def change(
        self,
        key: RequestKey,
        change: ApprovalChange,
        render: Callable[[ApprovalView], bytes],
        caller: Caller,
    ) -> bytes:
        """DecideApproval, RevokeApproval and ConsumeApproval: refuse the request's field
        violations, or record the step ``change`` makes of the approval as the job reads it
        (locked, checked), with its events."""
        found = _id_fields(key, change.approval_id)
        if change.kind is ChangeKind.CONSUME:
            if not change.candidate_digest:
                found.add("candidate_digest", "required")
        else:
            if change.kind is ChangeKind.DECIDE and change.decision is None:
                found.add("decision", "required: APPROVE or DENY")
            _check_reason(found, change.reason)
        actor = _actor(caller)
        found.raise_if_any()

        def job(tx: WriteTx, at: datetime) -> ApprovalView:
            approval, steps = _visible(caller, tx.approval(change.approval_id), change.approval_id)
            step = approvals.changed(change, approval, steps, actor, at)
            return _record(tx, approval, steps, step, actor, at)

        return await self._write(key, caller, job, render)

    async def expire(self, approval_id: str) -> bool:
        """Record the expiry of an approval the clock has expired (once: False when there
        is nothing to record)."""
        recorded: list[ApprovalView] = []

        def job(tx: WriteTx) -> None:
            recorded.clear()  # a batch the writer runs again starts from nothing
            found = tx.approval(approval_id)
            if found is None:
                return
            approval, steps = found
            at = self.clock()
            step = approvals.expiry(approval, steps, at)
            if step is not None:
                recorded.append(_record(tx, approval, steps, step, None, at))
                tx.notify_approval(approval_id)

        await self.store.write(job, small=True)
        self._announce(recorded)
        return bool(recorded)

    async def expire_due(self, limit: int = 500) -> datetime | None:
        """Record every expiry now due among open approvals; the next deadline after them
        (None when no open approval has one)."""
        at = self.clock()
        upcoming: datetime | None = None
        for approval, steps in await self.store.open_approvals(limit):
            due = approvals.expires_at(approval, steps, at)
            if approvals.standing(approval, steps, at).state is ApprovalState.EXPIRED:
                await self.expire(approval.approval_id)
            elif due is not None and (upcoming is None or due < upcoming):
                upcoming = due
        return upcoming

    # --- reads ---------------------------------------------------------------

    async def get(self, approval_id: str, caller: Caller) -> ApprovalView:
        _actor(caller)
        require_id(approval_id, "approval_id")
        approval, steps = _visible(caller, await self.store.approval(approval_id), approval_id)
        return ApprovalView(
            approval, tuple(steps), approvals.standing(approval, steps, self.clock())
        )

    async def list(
        self,
        caller: Caller,
        tenant: str,
        state: ApprovalState | None,
        page_size: int,
        page_token: str,
    ) -> tuple[list[ApprovalView], str]:
        """Newest request first; ``state`` filters on the derived state, so a page reads at
        most ``SCAN_PAGES`` pages of rows and may come back short with a token to go on."""
        _actor(caller)
        problems = Violations()
        with problems.catching():
            size = paging.page_size(page_size)
        if tenant:
            problems.check(require_tenant, tenant, "tenant")
        problems.raise_if_any()
        scope = permissions.tenant_filter(caller, tenant)
        query = f"approvals|{state.value if state else ''}{scope.fingerprint()}"
        raw = paging.decode_token(query, page_token)
        after = paging.split_key(raw) if raw else None
        at = self.clock()
        kept: list[ApprovalView] = []
        budget = SCAN_PAGES * size
        while budget > 0:
            want = min(size, budget)
            found = await self.store.approvals(scope, after, want + 1)
            for i, (approval, steps) in enumerate(found[:want]):
                after = (approval.approval_id, to_micros(approval.request_time))
                budget -= 1
                view = ApprovalView(approval, tuple(steps), approvals.standing(approval, steps, at))
                if state is None or view.standing.state is state:
                    kept.append(view)
                if len(kept) == size:
                    more = i + 1 < len(found)
                    return kept, paging.encode_token(query, paging.join_key(*after)) if more else ""
            if len(found) <= want:
                return kept, ""
        assert after is not None
        return kept, paging.encode_token(query, paging.join_key(*after))

    async def watch(self, approval_id: str, caller: Caller) -> AsyncIterator[ApprovalView]:
        """The approval now, then after each change, until a final state. At a deadline the
        watcher records the expiry itself (if no one has), so it hears of it on time."""
        with self.hub.watching(approval_id):
            seen = self.hub.version(approval_id)
            view = await self.get(approval_id, caller)
            yield view
            while not view.standing.state.final:
                deadline = approvals.expires_at(view.approval, view.steps, self.clock())
                timeout = None
                if deadline is not None:
                    timeout = max(0.0, (deadline - self.clock()).total_seconds())
                changed = await self.hub.wait(approval_id, seen, timeout)
                if not changed:
                    await self.expire(approval_id)
                seen = self.hub.version(approval_id)
                latest = await self.get(approval_id, caller)
                if latest.steps != view.steps or latest.standing.state is not view.standing.state:
                    view = latest
                    yield view


def _check_action(found: Violations, ask: ApprovalAsk) -> None:
    """A candidate with its subject, predicate and digest; or a table change the resolver
    would load, with its digest, and no subject or predicate (a table is no one's)."""
    if ask.table_change is not None:
        for name, given in (("subject", ask.subject), ("predicate", ask.predicate)):
            if given:
                found.add(name, "must be empty for a table change")
        found.extend(table_changes.problems(ask.table_change))
        return
    found.check(require_text, ask.subject, "subject", MAX_TEXT)
    found.check(require_text, ask.predicate, "predicate", MAX_TEXT)
    if ask.candidate is not None and ask.expected_digest != ask.candidate.candidate_digest:
        found.add(
            "candidate.candidate_digest",
            "is not the digest of this candidate's action (subject, predicate, probe, "
            "target signal class, required side effects)",
        )


def _id_fields(key: RequestKey, approval_id: str) -> Violations:
    found = Violations()
    found.check(check_request_id, key.request_id)
    if not key.request_id:
        found.add("request_id", "required: approvals are retry-safe by request id")
    found.check(require_id, approval_id, "approval_id")
    return found


def _record(
    tx: WriteTx,
    approval: Approval,
    steps: list[Step],
    step: Step,
    actor: Actor | None,
    at: datetime,
) -> ApprovalView:
    """Insert ``step`` with its event, and the transition event it causes."""
    before = approvals.standing(approval, steps, at).state
    tx.insert_step(step)
    tx.append_event(
        _STEP_EVENTS[step.kind],
        records.step_commitment(step),
        tenant=approval.tenant,
        actor=actor,
    )
    after_steps = (*steps, step)
    after = approvals.standing(approval, after_steps, at)
    if after.state is not before and after.state in (ApprovalState.GRANTED, ApprovalState.DENIED):
        kind = (
            AuditEventType.APPROVAL_GRANTED
            if after.state is ApprovalState.GRANTED
            else AuditEventType.APPROVAL_DENIED
        )
        payload = {"approval_id": approval.approval_id, "step": str(step.seq)}
        if after.grant_expire_time is not None:
            payload["grant_expire_time"] = str(to_micros(after.grant_expire_time))
        tx.append_event(kind, payload, tenant=approval.tenant, actor=actor)
    return ApprovalView(approval, after_steps, after)
