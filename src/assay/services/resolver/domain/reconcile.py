"""May a proposed claim be applied without a human? (rule 10)

Each proposal is judged alone against the evidence, by resolving its semantic
before and after it. Only safety-sensitive predicates are ever held back, and
for those the rule is asymmetric on purpose: a contested predicate is never
auto-loosened, so conflicted before, conflicted after, or a different leader
(including a first leader where there was none) all require review.

A SUPERSEDES proposal can drop a claim of another semantic; that semantic is
judged too, and the stricter answer wins, so a proposal cannot sneak past the
rule by superseding across predicates.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.services.resolver.domain.model import (
    SEM,
    Decision,
    DecisionReason,
    Intake,
    RelationKind,
    Resolution,
    SemKey,
    Status,
)


def decide(before: Resolution, after: Resolution) -> tuple[Decision, DecisionReason]:
    """The decision for one semantic, from its resolution before and after the proposal."""
    if not before.safety_sensitive:
        return Decision.AUTO_APPLY, DecisionReason.NOT_SAFETY_SENSITIVE
    if before.status is Status.CONFLICTED:
        return Decision.REQUIRES_REVIEW, DecisionReason.SAFETY_CONFLICTED_BEFORE
    if after.status is Status.CONFLICTED:
        return Decision.REQUIRES_REVIEW, DecisionReason.SAFETY_CONFLICTED_AFTER
    before_key = before.leader.value_key if before.leader else None
    after_key = after.leader.value_key if after.leader else None
    if before_key != after_key:
        return Decision.REQUIRES_REVIEW, DecisionReason.SAFETY_LEADER_CHANGED
    return Decision.AUTO_APPLY, DecisionReason.SAFETY_RESOLVED_UNCHANGED


def affected(own: SemKey, proposal: Intake, base: Intake) -> list[SemKey]:
    """The proposal's own semantic first, then any other semantic it supersedes into."""
    sems = [own]
    for relation in proposal.relations:
        if relation.kind is RelationKind.SUPERSEDES:
            target = base.ids.get(relation.target_id)
            if target is not None and target[SEM] not in sems:
                sems.append(target[SEM])
    return sems


def judge(
    sems: list[SemKey],
    resolve_before: Callable[[SemKey], Resolution],
    resolve_after: Callable[[SemKey], Resolution],
) -> tuple[Decision, DecisionReason, Resolution, Resolution]:
    """Judge every affected semantic; the first that requires review decides, else the own one."""
    own_before = resolve_before(sems[0])
    own_after = resolve_after(sems[0])
    decision, reason = decide(own_before, own_after)
    if decision is Decision.AUTO_APPLY:
        for sem in sems[1:]:
            other = decide(resolve_before(sem), resolve_after(sem))
            if other[0] is Decision.REQUIRES_REVIEW:
                decision, reason = other
                break
    return decision, reason, own_before, own_after
