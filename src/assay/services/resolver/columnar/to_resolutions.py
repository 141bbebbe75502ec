"""The columnar engine's answer as ResolveEvidence's messages (the bridge out).

The same ``SemanticResolution`` messages ``convert.Emitter`` builds from the reference's
resolutions, built from the engine's arrays: semantics in (subject, predicate) order,
values by support then value_key, excluded claims by claim_ref then request position
(echoed at FULL), warnings by claim_ref, code and message. Each semantic's values (at
FULL with their claims, groups and counted refs) are merged in as bytes
(``claim_tails``), one call per semantic. The rest of the per-semantic work
is plain Python over ``tolist()``ed columns; only excluded claims and warnings, which
are few, need claim_refs here.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from assay.services.resolver.columnar.claim_tails import Tails
from assay.services.resolver.columnar.engine import Resolved
from assay.services.resolver.columnar.from_claims import Bridged
from assay.services.resolver.convert import Emitter
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb

_Excluded = tuple[str, int, int, tuple[str, ...]]  # (claim_ref, row, reason, superseded_by)


def fill_evidence(
    bridged: Bridged,
    resolved: Resolved,
    emitter: Emitter,
    response: pb.ResolveEvidenceResponse,
    full: bool,
) -> None:
    """Fill ``response`` as ResolveEvidence's reference path would."""
    semantics = len(resolved.status)
    subjects = resolved.subjects.to_pylist()
    predicates = resolved.predicates.to_pylist()
    status = resolved.status.tolist()
    sensitive = resolved.safety_sensitive.tolist()
    review = resolved.requires_review.tolist()
    value_semantic = resolved.value_semantic
    bounds = np.searchsorted(value_semantic, np.arange(semantics + 1)).tolist()
    keys = resolved.value_keys.to_pylist()
    support = resolved.support.tolist()
    flags: defaultdict[int, list[int]] = defaultdict(list)
    for number, raised in enumerate(resolved.rationale, 1):
        for semantic in raised.tolist():
            flags[semantic].append(number)
    excluded = _excluded(bridged, resolved)
    warnings = _warnings(bridged, resolved) if full else {}
    value_of = emitter.value
    encoded = Tails(
        resolved,
        bridged.columns,
        bridged.buf,
        bridged.id_offset,
        bridged.id_length,
        bridged.refs,
        value_of,
        full,
    )
    claims = bridged.claims
    add = response.resolutions.add
    for s in range(semantics):
        out = add()
        out.subject = subjects[s]
        out.predicate = predicates[s]
        out.status = resolution_pb2.ResolutionStatus.ValueType(status[s])
        out.safety_sensitive = sensitive[s]
        out.requires_review = review[s]
        first, end = bounds[s], bounds[s + 1]
        if first < end:
            out.confidence = support[first]
            leader = out.leader
            leader.value.CopyFrom(value_of(keys[first]))
            leader.value_key = keys[first]
            leader.support = support[first]
            found = flags.get(s)
            if found:
                out.rationale.extend(found)  # type: ignore[arg-type]  # flag numbers
        out.MergeFromString(encoded.values(first, end))
        for ref, row, reason, by in excluded.get(s, ()):
            item = out.excluded.add()
            item.claim_ref = ref
            item.reason = resolution_pb2.ExclusionReason.ValueType(reason)
            item.superseded_by.extend(by)
            if full:
                item.claim.CopyFrom(claims[row])
        for ref, code, message in warnings.get(s, ()):
            warning = out.warnings.add()
            warning.code = resolution_pb2.WarningCode.ValueType(code)
            warning.claim_ref = ref
            warning.message = message
    for subject, predicate in resolved.conflicted_safety:
        response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
    response.coverage_confidence = resolved.coverage
    if full:
        for resolution in response.resolutions:
            response.warnings.extend(resolution.warnings)


def _excluded(bridged: Bridged, resolved: Resolved) -> dict[int, list[_Excluded]]:
    """Excluded claims per semantic, ordered by claim_ref then request position."""
    rows = resolved.excluded_row.tolist()
    out: defaultdict[int, list[_Excluded]] = defaultdict(list)
    by = resolved.superseded_by
    for ref, row, semantic, reason in zip(
        bridged.refs(rows),
        rows,
        resolved.excluded_semantic.tolist(),
        resolved.excluded_reason.tolist(),
        strict=True,
    ):
        out[semantic].append((ref, row, reason, by.get(row, ())))
    for found in out.values():
        found.sort(key=lambda e: (e[0], e[1]))
    return out


def _warnings(bridged: Bridged, resolved: Resolved) -> dict[int, list[tuple[str, int, str]]]:
    """Warnings per semantic, ordered by claim_ref, code, then message."""
    semantic = bridged.columns.semantic
    rows = [row for row, _, _ in resolved.warnings]
    out: defaultdict[int, list[tuple[str, int, str]]] = defaultdict(list)
    for ref, (row, code, message) in zip(bridged.refs(rows), resolved.warnings, strict=True):
        out[int(semantic[row])].append((ref, int(code), message))
    for found in out.values():
        found.sort()
    return out
