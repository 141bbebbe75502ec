"""The resolver's rules called with plain values: claims as dataclasses, JSON values.

The served path reads protobuf claims (``intake``) or Arrow columns (``columnar``); this
entry point takes ``PlainClaim``s, so the rules (relations, exclusions, correlation
groups, noisy-OR, status and flags) can be used and tested without protobuf. It is
checked by ``validation`` (the one statement of what a valid claim is) and raises the
same ``InvalidArgument`` with the same field paths (``{path}[i].field``); its rows are
the intake's, which a differential test holds equal on generated evidence.

One thing needs the wire form: the content reference of a claim without an id is a
digest of its serialized protobuf (``convert.claim_ref``), so a ``PlainClaim`` without
an id carries the reference its caller computed, or one made from its position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assay.services.resolver.domain import value_keys as vk
from assay.services.resolver.domain.model import (
    VALUE_KEY,
    Intake,
    Relation,
    RelationKind,
    Resolution,
    ReviewStatus,
    Row,
    SemKey,
    Staleness,
)
from assay.services.resolver.domain.policy import DEFAULT_POLICY, Policy
from assay.services.resolver.domain.resolve import Layered, resolve_evidence
from assay.services.resolver.domain.validation import ClaimFacts, check_claims, raise_if_any

# A Timestamp or Duration as (seconds, nanos), as on the wire.
Time = tuple[int, int]


@dataclass(frozen=True, slots=True)
class PlainClaim:
    """One claim, with the meaning of the ``Claim`` field of the same name.

    ``value`` is the asserted JSON value; ``observe_time`` is (seconds, nanos) since the
    epoch; ``ref`` is the claim_ref of a claim without an id (default: ``#<position>``).
    """

    subject: str
    predicate: str
    value: vk.JsonValue
    source: str
    confidence: float
    id: str = ""
    source_ref: str = ""
    reliability: float | None = None
    correlation_group: str = ""
    review_status: int = ReviewStatus.UNSPECIFIED
    relation: tuple[int, str] | None = None  # (RelationKind number, target claim id)
    observe_time: Time | None = None
    ref: str = ""


def facts_of(claim: PlainClaim) -> ClaimFacts:
    """What validation reads of a claim."""
    problem: tuple[str, str] | None = None
    if claim.value is not None:
        try:
            vk.top_level_key(claim.value)
        except vk.UnkeyableValue as error:
            problem = (error.path, error.description)
    return ClaimFacts(
        id=claim.id,
        subject=claim.subject,
        predicate=claim.predicate,
        source=claim.source,
        confidence=claim.confidence,
        reliability=claim.reliability,
        value_problem=problem,
        value_absent=claim.value is None,
        review_status=claim.review_status,
        relation=claim.relation,
        observed=claim.observe_time,
    )


def intake_of(
    claims: Sequence[PlainClaim], reliability: Mapping[str, float], path: str = "claims"
) -> Intake:
    """Validated rows grouped by semantic and value, as ``intake.intake`` builds them;
    raises ``InvalidArgument`` naming ``{path}[i].field`` for every problem."""
    problems = check_claims(
        ((f"{path}[{i}]", facts_of(c)) for i, c in enumerate(claims)), reliability, {}
    )
    raise_if_any(problems, reliability)
    out = Intake(count=len(claims))
    for index, claim in enumerate(claims):
        ceiling = reliability[claim.source]
        stated = claim.reliability
        used = ceiling if stated is None else min(stated, ceiling)
        group = claim.correlation_group or f"{claim.source}|{claim.source_ref}"
        sem: SemKey = (claim.subject, claim.predicate)
        assert claim.value is not None  # validated
        row: Row = (
            -(claim.confidence * used),
            claim.id or claim.ref or f"#{index}",
            claim.source,
            used,
            group,
            bool(claim.correlation_group),
            index,
            sem,
            vk.top_level_key(claim.value),
        )
        if claim.id:
            out.id_rows.append(row)
        if stated is not None and stated > ceiling:
            out.capped.append((row, stated))
        rejected = claim.review_status == ReviewStatus.REJECTED
        if claim.relation is not None and not rejected:
            kind, target = claim.relation
            out.relations.append(Relation(row, RelationKind(kind), target))
        # A semantic is present even when every claim about it is reviewed out.
        values = out.values.setdefault(sem, {})
        if rejected:
            out.rejected.append(row)
        else:
            values.setdefault(row[VALUE_KEY], []).append(row)
    return out


def staleness_of(
    claims: Sequence[PlainClaim], as_of: Time | None, stale_after: Time | None
) -> Staleness | None:
    """The staleness horizon when both are given (unchecked: pass valid times)."""
    if as_of is None or stale_after is None:
        return None
    observed = [None if c.observe_time is None else _seconds(c.observe_time) for c in claims]
    return Staleness(_seconds(as_of) - _seconds(stale_after), observed.__getitem__)


def resolve_all(
    claims: Sequence[PlainClaim],
    policy: Policy = DEFAULT_POLICY,
    as_of: Time | None = None,
    stale_after: Time | None = None,
) -> list[Resolution]:
    """Every semantic present, ordered by subject then predicate (ResolveEvidence)."""
    intake = intake_of(claims, policy.reliability)
    return resolve_evidence(intake, policy, staleness_of(claims, as_of, stale_after))


def resolve_one(
    claims: Sequence[PlainClaim],
    sem: SemKey,
    policy: Policy = DEFAULT_POLICY,
    as_of: Time | None = None,
    stale_after: Time | None = None,
) -> Resolution:
    """One semantic (ResolveSemantic)."""
    intake = intake_of(claims, policy.reliability)
    return Layered(intake, policy, staleness_of(claims, as_of, stale_after)).resolve(sem)


def _seconds(time: Time) -> float:
    seconds, nanos = time
    return seconds + nanos / 1e9
