"""Each resolver request read once into its ask (``domain.asks``), or refused.

Every field of a request is read through one ``Reader``, so a bad request is rejected as
a whole, with every violation, before any resolution runs (``Reader.done``); times become
seconds since the epoch here, and nothing after reads the request again, except the
writer echoing an excluded claim's body (``convert.ResolutionWriter``).
"""

from __future__ import annotations

from assay.errors import Reason
from assay.services.resolver.domain.asks import (
    ColumnsAsk,
    EvidenceAsk,
    HypothesesAsk,
    Hypothesis,
    Proposal,
    ReconcileAsk,
    SemanticAsk,
)
from assay.services.resolver.domain.model import Intake
from assay.services.resolver.domain.validation import MAX_HYPOTHESES, Violation
from assay.services.resolver.wire.convert import claim_ref
from assay.services.resolver.wire.reader import Reader
from assay.v1 import resolver_service_pb2 as pb

_EVIDENCE = "evidence.claims"


def semantic(reader: Reader, request: pb.ResolveSemanticRequest) -> SemanticAsk:
    reader.semantic(request.subject, request.predicate)
    full = full_detail(reader, request.detail)
    staleness = reader.staleness(request)
    base = reader.base(request.evidence.claims, _EVIDENCE)
    reader.done()
    assert base is not None
    return SemanticAsk((request.subject, request.predicate), base, staleness, full)


def evidence(reader: Reader, request: pb.ResolveEvidenceRequest) -> EvidenceAsk:
    full = full_detail(reader, request.detail)
    staleness = reader.staleness(request)
    base = reader.base(request.evidence.claims, _EVIDENCE)
    reader.done()
    assert base is not None
    return EvidenceAsk(base, staleness, full)


def hypotheses(reader: Reader, request: pb.ResolveHypothesesRequest) -> HypothesesAsk:
    reader.semantic(request.subject, request.predicate)
    if len(request.hypotheses) > MAX_HYPOTHESES:
        reader.problems.append(
            Violation(Reason.INVALID_FIELD, "hypotheses", f"at most {MAX_HYPOTHESES}")
        )
    full = full_detail(reader, request.detail)
    # The base's own detail: a caller that echoes the base asks FULL for it alone.
    base_full = (
        full
        if request.base_detail == pb.RESOLUTION_DETAIL_UNSPECIFIED
        else full_detail(reader, request.base_detail, "base_detail")
    )
    staleness = reader.staleness(request)
    base = reader.base(request.evidence.claims, _EVIDENCE)
    extras = [
        reader.extra(h.claims, f"hypotheses[{i}].claims") for i, h in enumerate(request.hypotheses)
    ]
    reader.done()
    assert base is not None
    return HypothesesAsk(
        (request.subject, request.predicate),
        base,
        tuple(
            Hypothesis(h.label, _valid(extra))
            for h, extra in zip(request.hypotheses, extras, strict=True)
        ),
        staleness,
        full,
        base_full,
    )


def reconcile(reader: Reader, request: pb.ReconcileRequest) -> ReconcileAsk:
    if not request.proposals:
        reader.problems.append(
            Violation(Reason.INVALID_FIELD, "proposals", "required: at least one proposal")
        )
    proposals = request.proposals
    base = reader.base(request.evidence.claims, _EVIDENCE)
    extras = [
        reader.extra(proposals[i : i + 1], "proposals", offset=i) for i in range(len(proposals))
    ]
    reader.done()
    assert base is not None
    return ReconcileAsk(
        base,
        tuple(
            Proposal(claim_ref(p), (p.subject, p.predicate), _valid(extra))
            for p, extra in zip(proposals, extras, strict=True)
        ),
    )


def columns(reader: Reader, request: pb.ResolveColumnsRequest) -> ColumnsAsk:
    """Everything but the stream, which the bulk path reads itself (``columnar``); the
    violations found here are reported with the stream's, so none is raised yet."""
    full = full_detail(reader, request.detail)
    staleness = reader.staleness(request)
    return ColumnsAsk(None if staleness is None else staleness.horizon, full, reader.problems)


def full_detail(reader: Reader, detail: int, field: str = "detail") -> bool:
    """True unless SUMMARY was asked for; an unknown number is recorded as a violation
    of ``field``."""
    if detail == pb.RESOLUTION_DETAIL_SUMMARY:
        return False
    if detail not in (pb.RESOLUTION_DETAIL_UNSPECIFIED, pb.RESOLUTION_DETAIL_FULL):
        reader.problems.append(
            Violation(Reason.INVALID_FIELD, field, f"unknown ResolutionDetail value {detail}")
        )
    return True


def _valid(extra: Intake | None) -> Intake:
    """A list the reader accepted (``done`` raised otherwise)."""
    assert extra is not None
    return extra
