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
from collections.abc import Sequence

from assay.services.resolver.columnar.claim_tails import encode_resolutions
from assay.services.resolver.columnar.engine import Resolved
from assay.services.resolver.columnar.from_claims import Bridged
from assay.services.resolver.columnar.wire import field_bytes, varint
from assay.services.resolver.wire.convert import Emitter
from assay.v1 import resolution_pb2
from assay.v1 import resolver_service_pb2 as pb

_Excluded = tuple[str, int, int, tuple[str, ...]]  # (claim_ref, row, reason, superseded_by)

# SemanticResolution's excluded and warnings (fields 10 and 11), as tag bytes.
EXCLUDED_TAG, WARNINGS_TAG = 0x52, 0x5A


def fill_evidence(
    bridged: Bridged,
    resolved: Resolved,
    emitter: Emitter,
    response: pb.ResolveEvidenceResponse,
    full: bool,
) -> None:
    """Fill ``response`` as ResolveEvidence's reference path would."""
    semantics = len(resolved.status)
    excluded = _excluded(bridged, resolved)
    warnings = _warnings(bridged, resolved) if full else {}
    extras = [b""] * semantics
    for s in excluded.keys() | warnings.keys():
        extras[s] = _extras(excluded.get(s, ()), warnings.get(s, ()), bridged, full)
    response.MergeFromString(
        encode_resolutions(
            resolved,
            bridged.columns,
            bridged.buf,
            bridged.id_offset,
            bridged.id_length,
            bridged.refs,
            emitter.value,
            extras,
            full,
        )
    )
    for subject, predicate in resolved.conflicted_safety:
        response.conflicted_safety_predicates.add(subject=subject, predicate=predicate)
    response.coverage_confidence = resolved.coverage
    if full:  # every semantic's warnings again, in semantic order
        for s in sorted(warnings):
            for ref, code, message in warnings[s]:
                response.warnings.add(
                    code=resolution_pb2.WarningCode.ValueType(code), claim_ref=ref, message=message
                )


def _extras(
    excluded: Sequence[_Excluded],
    warnings: Sequence[tuple[str, int, str]],
    bridged: Bridged,
    full: bool,
) -> bytes:
    """A semantic's excluded claims (echoed at FULL) and warnings, encoded as
    SemanticResolution fields."""
    parts = []
    for ref, row, reason, by in excluded:
        item = [field_bytes(0x0A, ref.encode()), b"\x10" + varint(reason)]
        item.extend(field_bytes(0x1A, target.encode()) for target in by)
        if full:
            item.append(field_bytes(0x22, bridged.claim_bytes(row)))
        parts.append(field_bytes(EXCLUDED_TAG, b"".join(item)))
    for ref, code, message in warnings:
        item = [b"\x08" + varint(code), field_bytes(0x12, ref.encode())]
        item.append(field_bytes(0x1A, message.encode()))
        parts.append(field_bytes(WARNINGS_TAG, b"".join(item)))
    return b"".join(parts)


def _excluded(bridged: Bridged, resolved: Resolved) -> dict[int, list[_Excluded]]:
    """Excluded claims per semantic, ordered by claim_ref then request position."""
    rows = resolved.excluded_row.tolist()
    out: defaultdict[int, list[_Excluded]] = defaultdict(list)
    by = resolved.superseded_by.as_dict()
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
