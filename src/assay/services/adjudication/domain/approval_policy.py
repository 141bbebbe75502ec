"""The approval policy: which candidates a person may approve, how many must, for how long.

Read from the ``[approvals]`` table of the auth policy file (docs/approvals.md has the
format); every key is optional. A candidate's quorum is the largest of its required side
effects' quorums (each class defaults to ``default_quorum``), so the most dangerous effect
an action has decides how many distinct approvers it needs. Lifetimes have a default and a
maximum each: a pending request's from its request, a grant's from the moment the quorum
approved. A reliability table change needs ``table_change_quorum`` approvers (two by
default: the table weighs every resolution after it, so no one person applies it, and
the requester is never one of them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from assay.errors import FailedPrecondition, Reason
from assay.services.adjudication.domain.approvals import ApprovalCandidate

# Writing outside the worktree is never approvable, whatever the policy says.
NEVER_APPROVED = frozenset({"FILESYSTEM_WRITE_OUTSIDE_WORKTREE"})
# What a grant can remove: a missing side-effect grant and the network switches.
APPROVABLE_REASONS = frozenset(
    {"SIDE_EFFECT_NOT_GRANTED", "EGRESS_NOT_ALLOWED", "CLOUD_SYNC_NOT_ALLOWED"}
)
SIDE_EFFECTS = frozenset(
    {
        "FILESYSTEM_READ",
        "FILESYSTEM_WRITE_WORKTREE",
        "FILESYSTEM_WRITE_OUTSIDE_WORKTREE",
        "PROCESS_SPAWN",
        "VCS_READ",
        "NETWORK_CALL",
    }
)
MAX_QUORUM = 10
_KEYS = {
    "default_quorum",
    "quorum",
    "table_change_quorum",
    "deny_ends",
    "pending_lifetime_seconds",
    "max_pending_lifetime_seconds",
    "grant_lifetime_seconds",
    "max_grant_lifetime_seconds",
    "webhook_url",
    "webhook_attempts",
}


@dataclass(frozen=True)
class ApprovalPolicy:
    default_quorum: int = 1
    quorum: Mapping[str, int] = field(default_factory=dict)
    table_change_quorum: int = 2
    deny_ends: bool = True
    pending_lifetime: timedelta = timedelta(hours=1)
    max_pending_lifetime: timedelta = timedelta(days=1)
    grant_lifetime: timedelta = timedelta(minutes=15)
    max_grant_lifetime: timedelta = timedelta(hours=8)
    webhook_url: str = ""
    webhook_attempts: int = 5

    def quorum_for(self, side_effects: tuple[str, ...]) -> int:
        """How many distinct approvers an action with ``side_effects`` needs."""
        return max((self.quorum.get(e, self.default_quorum) for e in side_effects), default=1)

    def expire_time(self, requested: datetime | None, at: datetime) -> datetime | str:
        """The pending deadline (the default when None), or why ``requested`` is refused."""
        if requested is None:
            return at + self.pending_lifetime
        if requested <= at:
            return "must be in the future"
        if requested - at > self.max_pending_lifetime:
            return f"at most {_spell(self.max_pending_lifetime)} from now (the policy's maximum)"
        return requested

    def grant_for(self, requested: timedelta | None) -> timedelta | str:
        """The grant's lifetime (the default when None), or why ``requested`` is refused."""
        if requested is None:
            return self.grant_lifetime
        if requested <= timedelta(0):
            return "must be positive"
        if requested > self.max_grant_lifetime:
            return f"at most {_spell(self.max_grant_lifetime)} (the policy's maximum)"
        return requested


def check_approvable(candidate: ApprovalCandidate) -> None:
    """FailedPrecondition unless a person may approve ``candidate``: CANDIDATE_FORBIDDEN when
    it needs a side effect never approved, CANDIDATE_NOT_APPROVABLE when it is not
    REQUIRES_APPROVAL or a reason no grant removes blocks it."""
    never = sorted(NEVER_APPROVED.intersection(candidate.required_side_effects))
    if candidate.availability == "FORBIDDEN" or never:
        raise FailedPrecondition(
            Reason.CANDIDATE_FORBIDDEN,
            "the candidate needs a side effect that is never approved"
            + (f": {', '.join(never)}" if never else ""),
        )
    if candidate.availability != "REQUIRES_APPROVAL":
        raise FailedPrecondition(
            Reason.CANDIDATE_NOT_APPROVABLE,
            f"only a REQUIRES_APPROVAL candidate needs an approval (this one is "
            f"{candidate.availability or 'UNSPECIFIED'})",
        )
    blocking = set(candidate.blocking_reasons)
    other = sorted(blocking - APPROVABLE_REASONS)
    if not blocking or other:
        raise FailedPrecondition(
            Reason.CANDIDATE_NOT_APPROVABLE,
            "no grant removes what blocks this candidate"
            + (f": {', '.join(other)}" if other else " (it names no blocking reason)"),
        )


def _spell(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    return f"{seconds // 3600}h" if seconds % 3600 == 0 else f"{seconds}s"


def _positive_int(where: str, value: object, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ValueError(f"{where}: expected an integer in [1, {most}]")
    return value


def _seconds(where: str, value: object) -> timedelta:
    return timedelta(seconds=_positive_int(where, value, 366 * 86_400))


def parse_approval_policy(table: Mapping[str, Any]) -> ApprovalPolicy:
    """The ``[approvals]`` table; ValueError names the key at fault."""
    unknown = set(table) - _KEYS
    if unknown:
        raise ValueError(f"approvals: unknown keys {sorted(unknown)}")
    base = ApprovalPolicy()
    quorum_table = table.get("quorum", {})
    if not isinstance(quorum_table, dict):
        raise ValueError("approvals.quorum: expected a table of side-effect class = count")
    quorum = {}
    for name, count in quorum_table.items():
        effect = str(name).upper().removeprefix("SIDE_EFFECT_CLASS_")
        if effect not in SIDE_EFFECTS:
            raise ValueError(f"approvals.quorum.{name}: unknown side-effect class")
        quorum[effect] = _positive_int(f"approvals.quorum.{name}", count, MAX_QUORUM)
    deny_ends = table.get("deny_ends", base.deny_ends)
    if not isinstance(deny_ends, bool):
        raise ValueError("approvals.deny_ends: expected true or false")
    webhook = table.get("webhook_url", "")
    if not isinstance(webhook, str) or (
        webhook and not webhook.startswith(("https://", "http://"))
    ):
        raise ValueError("approvals.webhook_url: expected an http:// or https:// URL")

    def span(key: str, default: timedelta) -> timedelta:
        return _seconds(f"approvals.{key}", table[key]) if key in table else default

    policy = ApprovalPolicy(
        default_quorum=_positive_int(
            "approvals.default_quorum", table.get("default_quorum", 1), MAX_QUORUM
        ),
        quorum=quorum,
        table_change_quorum=_positive_int(
            "approvals.table_change_quorum", table.get("table_change_quorum", 2), MAX_QUORUM
        ),
        deny_ends=deny_ends,
        pending_lifetime=span("pending_lifetime_seconds", base.pending_lifetime),
        max_pending_lifetime=span("max_pending_lifetime_seconds", base.max_pending_lifetime),
        grant_lifetime=span("grant_lifetime_seconds", base.grant_lifetime),
        max_grant_lifetime=span("max_grant_lifetime_seconds", base.max_grant_lifetime),
        webhook_url=webhook,
        webhook_attempts=_positive_int(
            "approvals.webhook_attempts", table.get("webhook_attempts", 5), 20
        ),
    )
    if policy.pending_lifetime > policy.max_pending_lifetime:
        raise ValueError("approvals.pending_lifetime_seconds: over max_pending_lifetime_seconds")
    if policy.grant_lifetime > policy.max_grant_lifetime:
        raise ValueError("approvals.grant_lifetime_seconds: over max_grant_lifetime_seconds")
    return policy
