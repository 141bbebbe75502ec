"""Which claims can affect the target semantic: the evidence the hypotheses call carries.

Large evidence mostly concerns other semantics, and ResolveHypotheses re-reads
every claim it is sent, so the planner sends only the target's scope. This
works on the request's proto claims directly (ids, subjects, predicates and
relation targets; nothing is weighed), so that no domain copy of a large
evidence is ever built. The use case checks the resolver's base resolution of
the scope against the full one before trusting it.
"""

from __future__ import annotations

from assay.v1 import claim_pb2, planner_service_pb2, resolution_pb2


def all_about_target(
    request: planner_service_pb2.PlanEvidenceRequest, base: resolution_pb2.SemanticResolution
) -> bool:
    """True when the target's resolution accounts for every claim of the request.

    Each claim about the target is either in a value's ``claims`` or in ``excluded``, so
    when those add up to the whole evidence there is nothing to scope out, and no pass
    over the claims is needed to find that out. Either answer is safe: True sends the
    whole evidence, which is never wrong; False only costs ``target_scope``'s pass.
    """
    total = len(base.excluded) + sum(len(v.claims) for v in base.values)
    return total == len(request.evidence.claims)


def target_scope(request: planner_service_pb2.PlanEvidenceRequest) -> claim_pb2.Evidence:
    """The claims that can affect the target semantic's resolution, in request order.

    The resolver resolves one semantic from that semantic's claims plus the claims
    whose relations point at them (a supersession is in force when its claim is not
    reviewed out and its target exists, whatever else happens to the superseder). The
    claims those claims point at are kept too, so no relation becomes dangling. Nothing
    is weighed here: the selection reads ids, subjects, predicates and relation
    targets only, and the use case checks that the resolver's base resolution of the
    scoped evidence equals the full one before trusting it. When every claim is about
    the target, the request's own evidence is returned as is (no copy).
    """
    claims = request.evidence.claims
    subject, predicate = request.subject, request.predicate
    on_target = [c.subject == subject and c.predicate == predicate for c in claims]
    if all(on_target):
        return request.evidence
    target_ids = {c.id for c, on in zip(claims, on_target, strict=True) if on and c.id}
    pointed_at = {
        c.relation.target_claim_id
        for c, on in zip(claims, on_target, strict=True)
        if on and c.HasField("relation")
    }
    scoped = claim_pb2.Evidence()
    scoped.claims.extend(
        c
        for c, on in zip(claims, on_target, strict=True)
        if on
        or (c.HasField("relation") and c.relation.target_claim_id in target_ids)
        or (c.id and c.id in pointed_at)
    )
    return scoped


def summary_of(full: resolution_pb2.SemanticResolution) -> resolution_pb2.SemanticResolution:
    """``full`` as RESOLUTION_DETAIL_SUMMARY returns it: the contract's omitted fields cleared.

    The use case compares the scoped base (asked for at SUMMARY) with this of the full
    one: equal status, leader, every value's support, flags and exclusions (by reference,
    reason and superseders) mean the scope weighs the target exactly as everything does.
    """
    out = resolution_pb2.SemanticResolution()
    out.CopyFrom(full)
    for value in out.values:
        value.ClearField("claims")
        value.ClearField("groups")
        value.ClearField("counted_claim_refs")
    for excluded in out.excluded:
        excluded.ClearField("claim")
    out.ClearField("warnings")
    return out
