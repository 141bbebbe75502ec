"""Who may act as whom, and who may see what: the adjudication rules of the trust boundary.

Beyond the RPC's roles (the runtime checked those), the rules that depend on the request and
the stored records. A caller without an actor (dev mode) meets no identity rule, sees every
tenant.

- Nobody acts in another's name: a reviewer or adjudicator id must be the caller's subject
  (or the reviewer id the auth policy binds it to), and a reviewer bound to an identity
  accepts only that identity (IDENTITY_MISMATCH, operators included).
- Tenants are walls: another tenant's case reads as CASE_NOT_FOUND, as a missing one (existence
  never leaks); writing into, deleting or naming a tenant not granted is TENANT_NOT_PERMITTED.
- Sealed blinding: a plain reviewer sees a blinded case only while it waits for their own
  review, and a full round only as awaiting resolution, never whether its reviews agree; a
  non-operator adjudicator sees a case only while it waits for their decision, and then
  without the verdict or earlier rounds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from assay.errors import FailedPrecondition, FieldViolation, PermissionDenied, Reason
from assay.services.adjudication.domain import cases
from assay.services.adjudication.domain.cases import case_not_found
from assay.services.adjudication.domain.model import (
    Caller,
    CaseDetail,
    CaseSnapshot,
    CaseState,
    Resolution,
    Review,
    Reviewer,
    ReviewerKind,
    TenantScope,
)
from assay.services.adjudication.domain.state import derive_state, round_complete


@dataclass(frozen=True)
class RegistrationPolicy:
    """How the server binds reviewers (from ``ServeOptions``): whether fixture reviewers may
    be registered by an authenticated caller, and the issuer HUMAN ids are bound under
    ("" means the registering caller's own issuer), and the subjects the auth policy binds
    reviewer ids to (a reviewer id not named is bound to the subject of the same name)."""

    allow_fixture_reviewers: bool = False
    reviewer_issuer: str = ""
    reviewer_subjects: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Binding:
    """A registration as the caller may make it: who attests, and the identity bound."""

    attested_by: str
    identity_issuer: str = ""
    identity_subject: str = ""


def identity_mismatch(path: str, description: str) -> PermissionDenied:
    return PermissionDenied(
        Reason.IDENTITY_MISMATCH, f"{path}: {description}", [FieldViolation(path, description)]
    )


def tenant_not_permitted(tenant: str, path: str) -> PermissionDenied:
    description = f"the caller is not granted tenant {tenant}"
    return PermissionDenied(
        Reason.TENANT_NOT_PERMITTED,
        f"{path}: {description}",
        [FieldViolation(path, description)],
        metadata={"tenant": tenant},
    )


# --- identity --------------------------------------------------------------


def bind_registration(
    caller: Caller,
    reviewer_id: str,
    kind: ReviewerKind,
    attested_by: str,
    policy: RegistrationPolicy,
    prefix: str = "reviewer",
) -> Binding:
    """What a registration records. Dev mode: as given, unbound. Authenticated: fixtures
    only where the server allows them; ``attested_by`` is the caller's subject (empty is
    filled in, another value refused); the reviewer is bound to ``reviewer_id`` under the
    reviewer issuer."""
    actor = caller.actor
    if actor is None:
        return Binding(attested_by)
    if kind is ReviewerKind.MECHANISM_TEST_FIXTURE and not policy.allow_fixture_reviewers:
        raise FailedPrecondition(
            Reason.FIXTURE_REVIEWERS_DISABLED,
            "this server does not register MECHANISM_TEST_FIXTURE reviewers "
            "(start it with --allow-fixture-reviewers for tests and demos)",
            metadata={"field": f"{prefix}.kind"},
        )
    given = attested_by.strip()
    if given and given != actor.subject:
        raise identity_mismatch(
            f"{prefix}.attested_by",
            f"must be the registering caller's subject {actor.subject!r} (or empty)",
        )
    subject = policy.reviewer_subjects.get(reviewer_id, reviewer_id)
    return Binding(actor.subject, policy.reviewer_issuer or actor.issuer, subject)


def check_acting_as(caller: Caller, reviewer_id: str, path: str) -> None:
    """A reviewer or adjudicator id is the caller's own (checked before any read)."""
    if caller.actor is not None and reviewer_id != caller.subject:
        raise identity_mismatch(path, f"is {reviewer_id!r}, but the caller is {caller.subject!r}")


def check_bound_identity(caller: Caller, reviewer: Reviewer, path: str) -> None:
    """A reviewer bound to an identity accepts only that identity (issuer and subject)."""
    actor = caller.actor
    if actor is None:
        return
    if reviewer.identity_subject and reviewer.identity_subject != actor.subject:
        raise identity_mismatch(path, f"reviewer {reviewer.reviewer_id} belongs to someone else")
    if reviewer.identity_issuer and reviewer.identity_issuer != actor.issuer:
        raise identity_mismatch(
            path,
            f"reviewer {reviewer.reviewer_id} is bound to issuer {reviewer.identity_issuer!r}, "
            f"not {actor.issuer!r}",
        )


def request_owner(caller: Caller) -> tuple[str, str]:
    """Whose request ids these are: (issuer, subject), or ("", "") in dev mode."""
    actor = caller.actor
    return (actor.issuer, actor.subject) if actor is not None else ("", "")


# --- tenants ---------------------------------------------------------------


def check_tenant_write(caller: Caller, tenant: str, path: str) -> None:
    """Creating or deleting a tenant's records needs the tenant."""
    if not caller.scope.allows(tenant):
        raise tenant_not_permitted(tenant, path)


def tenant_filter(caller: Caller, tenant: str, path: str = "tenant") -> TenantScope:
    """The tenants a listing covers: the one named (it must be granted), else the caller's."""
    if not tenant:
        return caller.scope
    if not caller.scope.allows(tenant):
        raise tenant_not_permitted(tenant, path)
    return TenantScope(frozenset({tenant}))


def visible_case(caller: Caller, snapshot: CaseSnapshot | None, case_id: str) -> CaseSnapshot:
    """The case, if it exists in one of the caller's tenants; CASE_NOT_FOUND either way else."""
    if snapshot is None or not caller.scope.allows(snapshot.case.tenant):
        raise case_not_found(case_id)
    return snapshot


def sweep_scope(caller: Caller) -> tuple[TenantScope, str, dict[str, str]]:
    """What a sweep by ``caller`` may delete, the tenant its audit event belongs to ("" when
    it spans several), and what its payload adds (the tenants, when not all)."""
    tenants = caller.scope.tenants
    if tenants is None:
        return caller.scope, "", {}
    only = next(iter(tenants)) if len(tenants) == 1 else ""
    return caller.scope, only, {"tenants": ",".join(sorted(tenants))}


# --- sealed blinding ---------------------------------------------------------


def awaits_review_by(snapshot: CaseSnapshot, reviewer_id: str, now: datetime) -> bool:
    """The case is in ``reviewer_id``'s queue: its current round awaits a first or second
    review, it is not expired, and they have not reviewed the round (the rule the queue
    query applies in SQL; a test holds the two equal)."""
    if cases.is_expired(snapshot.case, now) or snapshot.round_resolution is not None:
        return False
    done = snapshot.round_reviews
    if round_complete(snapshot) or (snapshot.round > 1 and not done):
        return False  # full, or frozen (a new round opens only with an explicit review)
    return all(r.reviewer_id != reviewer_id for r in done)


def state_seen_by(caller: Caller, snapshot: CaseSnapshot) -> CaseState:
    """The case's state as ``caller`` may see it (GetCaseState, SubmitReview's answer):
    AGREED and DISAGREED tell a reviewer how the other reviewer answered, so until the
    round is resolved only operators, auditors and adjudicators outside the round's
    reviewers see them; everyone else sees AWAITING_RESOLUTION."""
    state = derive_state(snapshot)
    if state not in (CaseState.AGREED, CaseState.DISAGREED):
        return state
    if caller.operator or caller.auditor:
        return state
    if caller.adjudicator and all(r.reviewer_id != caller.subject for r in snapshot.round_reviews):
        return state
    return CaseState.AWAITING_RESOLUTION


def blinded_view(
    caller: Caller, snapshot: CaseSnapshot | None, case_id: str, now: datetime
) -> CaseSnapshot:
    """The case a caller may see blinded: operators and adjudicators any in their tenants;
    a reviewer only one waiting for their own review."""
    snap = visible_case(caller, snapshot, case_id)
    if caller.operator or caller.adjudicator:
        return snap
    if not awaits_review_by(snap, caller.subject, now):
        raise case_not_found(case_id)
    return snap


def case_view(
    caller: Caller,
    snapshot: CaseSnapshot | None,
    case_id: str,
    reviews: Sequence[Review],
    resolutions: Sequence[Resolution],
) -> CaseDetail:
    """GetCase: the operator view for operators; for an adjudicator, the case only while it
    waits for their decision (DISAGREED, and they did not review the round), without the
    verdict, earlier rounds' reviews or resolutions; else CASE_NOT_FOUND."""
    snap = visible_case(caller, snapshot, case_id)
    if caller.operator:
        return CaseDetail(snap, tuple(reviews), tuple(resolutions), verdict_shown=True)
    reviewed = {r.reviewer_id for r in snap.round_reviews}
    waiting = derive_state(snap) is CaseState.DISAGREED and caller.subject not in reviewed
    if not (caller.adjudicator and waiting):
        raise case_not_found(case_id)
    return adjudicator_view(snap)


def adjudicator_view(snapshot: CaseSnapshot) -> CaseDetail:
    """A case as an adjudicator sees it (GetCase, the worklist): no verdict, only the
    current round's reviews, no resolutions."""
    return CaseDetail(snapshot, snapshot.round_reviews, (), verdict_shown=False)


def awaits_decision_by(snapshot: CaseSnapshot, adjudicator_id: str, now: datetime) -> bool:
    """The case is in ``adjudicator_id``'s worklist: DISAGREED in its current round, not
    expired, and they did not review that round. The worklist query keeps a superset of
    these in SQL (it cannot compare labels stored before JCS); this rule decides."""
    if cases.is_expired(snapshot.case, now) or derive_state(snapshot) is not CaseState.DISAGREED:
        return False
    return all(r.reviewer_id != adjudicator_id for r in snapshot.round_reviews)


def may_see_reviewer(caller: Caller, reviewer_id: str) -> bool:
    """Operators and auditors see every reviewer; reviewers and adjudicators themselves."""
    return caller.operator or caller.auditor or caller.subject == reviewer_id


def check_queue_owner(caller: Caller, reviewer_id: str) -> None:
    """A reviewer lists only their own queue; an operator anyone's."""
    if not caller.operator:
        check_acting_as(caller, reviewer_id, "reviewer_id")


def check_worklist_owner(caller: Caller, adjudicator_id: str) -> None:
    """An adjudicator lists only their own worklist; an operator anyone's."""
    if not caller.operator:
        check_acting_as(caller, adjudicator_id, "adjudicator_id")
